"""List the agent profiles `roost run --profile` takes: roost's built-in ones (Claude
Code, Codex, aider, pi) and roost.json's, each with where it comes from. A profile of
roost.json replaces a built-in one of the same name.

Usage:
  roost profiles [--json]
  roost profiles --help

Options:
  --json  print the op's result as JSON
"""


def describe(entry):
    if entry.get("error"):
        return f"refused: {entry['error']}"
    words = entry.get("commandShown") or entry.get("command")
    command = " ".join(words) if isinstance(words, list) else "?"
    how = "protocol" if entry.get("protocol") else f"task {entry.get('task', 'type')}"
    recorded = entry.get("recordedOn")
    checked = f"; recorded on {', '.join(recorded)}" if recorded else ""
    return f"{command} ({how}{checked})"


def table(entries):
    if not entries:
        return "no profiles"
    width = max(len(entry["name"]) for entry in entries)
    lines = []
    for entry in entries:
        source = entry["source"] + (" (replaces the built-in one)" if entry.get("replaces") else "")
        lines.append(f"{entry['name']:<{width}}  {describe(entry)}\n{'':<{width}}  from {source}")
    return "\n".join(lines)


def main(opts, ctx):
    result = ctx.call("profiles")
    ctx.show(opts, result, table(result["profiles"]))
