"""The sessions this job may message, and how each is related to it (parent, child,
sibling, tree, external). An agent's command: run it inside a roost job (an agent's
shell tool); it acts for that job.

Usage:
  roost peers [--json]
  roost peers --help

Options:
  --json  print the op's result as JSON
"""


def table(rows):
    if not rows:
        return "no peers"
    lines = [f"  {'ID':<11}  {'NAME':<24}  {'RELATION':<9}  {'STATE':<8}  SUMMARY"]
    for row in rows:
        name = row["name"] if len(row["name"]) <= 24 else row["name"][:23] + "…"
        summary = " ".join((row.get("question") or row.get("summary") or "").split())[:70]
        lines.append(f"  {row['id']:<11}  {name:<24}  {row['relation']:<9}  {row['state'] or '':<8}  {summary}".rstrip())
    return "\n".join(lines)


def main(opts, ctx):
    result = ctx.call_as_job("peers")
    ctx.show(opts, result, table(result["peers"]))
