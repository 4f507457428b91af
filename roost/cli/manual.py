"""roost's manual in the terminal (`roost help`, as `hg help` does): the pages of docs/,
one topic each, rendered as plain text for a terminal.

A topic is any `docs/NAME.md` whose first line is its title (`# Title`): a page added
there is listed with no line of code here, and the binary bundles every `docs/*.md`
(roost.spec), found the same way from a checkout (roost.bundle.files). The markdown
is the small part of it the pages use: headings, paragraphs, lists, fenced code,
tables and links; a link to another page reads as the `roost help` that shows it.

Standard library only, and imported only by `roost help`: the CLI's path stays light.
"""

import os
import re
import textwrap

from roost.bundle import files

MAX_WIDTH = 100
MIN_WIDTH = 40
HANGING_MAX = 24    # a table's first column this narrow keeps each row's text beside it
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ANCHOR = re.compile(r'<a id="[^"]*"></a>')
_CODE = re.compile(r"`([^`]+)`")
_ITEM = re.compile(r"^(\s*)([-*]|\d+\.) +")
_WORD = re.compile(r"[a-z0-9]+")


def docs_dir():
    return files.bundled(files.DOCS)


def topics():
    """[(name, title)] of every page, by name."""
    try:
        names = sorted(entry[:-3] for entry in os.listdir(docs_dir()) if entry.endswith(".md"))
    except OSError:
        return []
    found = []
    for name in names:
        title = _title(name)
        if title:
            found.append((name, title))
    return found


def _title(name):
    try:
        with open(os.path.join(docs_dir(), name + ".md"), encoding="utf-8") as handle:
            first = handle.readline()
    except OSError:
        return None
    return first[2:].strip() if first.startswith("# ") else None


def page(name):
    """The page's markdown, or None."""
    if not name or name.startswith(".") or os.sep in name or _title(name) is None:
        return None
    with open(os.path.join(docs_dir(), name + ".md"), encoding="utf-8") as handle:
        return handle.read()


def _singular(word):
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def find(word):
    """The topics `word` may mean: its page by name, else those whose name or title has
    the word (singular or plural alike)."""
    listed = topics()
    word = word.lower()
    if any(name == word for name, _ in listed):
        return [word]
    wanted = _singular(word)
    return [name for name, title in listed
            if _singular(name) == wanted or wanted in {_singular(w) for w in _WORD.findall(title.lower())}]


def listing():
    listed = topics()
    width = max((len(name) for name, _ in listed), default=0)
    rows = "".join(f"  {name:<{width}}  {title}\n" for name, title in listed)
    return ("roost's manual, by topic: `roost help TOPIC` shows one (`roost COMMAND --help`: a "
            "command's usage).\n\n" + rows)


# -- markdown to text ----------------------------------------------------------------

def _link(match):
    bang, text, target = match.groups()
    if bang:
        return f"[picture: {text}]"
    if target.startswith("#"):          # a place on the same page
        return text
    path = target.split("#", 1)[0]
    if path.endswith(".md") and "/" not in path:
        topic = f"`roost help {path[:-3]}`"
        return topic if text in (path, f"docs/{path}") else f"{text} ({topic})"
    return text if text == target else f"{text} ({target})"


def inline(text, code_marks=True):
    """A line's markdown as plain text: links spelt out, emphasis dropped; code keeps
    its backticks in running text (`roost task done N` reads as one thing), not in a
    table's cells or a heading, which hold little else."""
    text = _ANCHOR.sub("", _LINK.sub(_link, text))
    text = _BOLD.sub(r"\1", text)
    if not code_marks:
        text = _CODE.sub(r"\1", text)
    return text.replace("\\|", "|")


def _cells(line):
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return [inline(cell.strip(), code_marks=False) for cell in re.split(r"(?<!\\)\|", line)]


def _table(lines, width):
    rows = [_cells(line) for line in lines if not re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", line)]
    if not rows:
        return []
    columns = max(len(row) for row in rows)
    rows = [row + [""] * (columns - len(row)) for row in rows]
    header, body = rows[0], rows[1:]
    widths = [max(len(row[i]) for row in rows) for i in range(columns)]
    if 2 + sum(widths) + 2 * (columns - 1) <= width:
        out = []
        for index, row in enumerate(rows):
            out.append(("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row))).rstrip())
            if index == 0:
                out.append("  " + "  ".join("-" * w for w in widths))
        return out
    terms = max(len(row[0]) for row in body or rows)
    if columns == 2 and terms <= HANGING_MAX:
        # A list of terms: each term, its text beside it and wrapped under it.
        indent = " " * (2 + terms + 2)
        out = []
        for term, text in body or rows:
            out.extend(textwrap.wrap(text, width, initial_indent="  " + term.ljust(terms + 2),
                                     subsequent_indent=indent, break_on_hyphens=False) or ["  " + term])
        return out
    # Too wide for the terminal: each row a block, its first cell, then the others.
    out = []
    for row in body or rows:
        if out:
            out.append("")
        out.extend(textwrap.wrap(row[0], width, initial_indent="  ", subsequent_indent="  ") or ["  "])
        for column, (label, cell) in enumerate(zip(header[1:], row[1:]), 1):
            if not cell:
                continue
            # The last column is the row's text; the ones between say what they are.
            text = f"{label}: {cell}" if column < columns - 1 and label else cell
            out.extend(textwrap.wrap(text, width, initial_indent="      ", subsequent_indent="      "))
    return out


_KEEP = "\x00"       # a space inside code, which a line never breaks at


def _wrap(text, width, first, rest):
    """Lines of `text`, not broken inside `code` (a command reads as one) unless the
    code is longer than half a line."""
    def keep(match):
        code = match.group(0)
        return code.replace(" ", _KEEP) if len(code) <= width // 2 else code

    kept = re.sub(r"`[^`]+`", keep, text)
    lines = textwrap.wrap(kept, width, initial_indent=first, subsequent_indent=rest,
                          break_on_hyphens=False, break_long_words=False)
    return [line.replace(_KEEP, " ") for line in lines]


def _heading(line, bold):
    level = len(line) - len(line.lstrip("#"))
    title = inline(line[level:].strip(), code_marks=False)
    shown = f"\x1b[1m{title}\x1b[0m" if bold else title
    if level == 1:
        return [shown, "=" * len(title)]
    if level == 2:
        return [shown, "-" * len(title)]
    return [shown]


def render(markdown, width=80, bold=False):
    """The page as text for a terminal `width` columns wide; `bold`: headings in bold
    (ANSI), for a terminal that shows it."""
    width = max(MIN_WIDTH, min(width, MAX_WIDTH)) - 1
    lines = markdown.splitlines()
    out = []
    index = 0

    def blank():
        if out and out[-1] != "":
            out.append("")

    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if not stripped:
            blank()
            index += 1
        elif stripped.startswith("```"):
            index += 1
            while index < len(lines) and not lines[index].strip().startswith("```"):
                out.append(("    " + lines[index]).rstrip())
                index += 1
            index += 1
            blank()
        elif stripped.startswith("#"):
            blank()
            out.extend(_heading(stripped, bold))
            out.append("")
            index += 1
        elif stripped.startswith("|"):
            block = []
            while index < len(lines) and lines[index].strip().startswith("|"):
                block.append(lines[index])
                index += 1
            out.extend(_table(block, width))
            blank()
        else:
            item = _ITEM.match(line)
            block = [line]
            index += 1
            # A paragraph or a list item runs on to a blank line, a block of another kind
            # or the next item.
            while index < len(lines) and lines[index].strip() and not _ITEM.match(lines[index]) \
                    and not lines[index].strip().startswith(("```", "#", "|")):
                block.append(lines[index])
                index += 1
            if item:
                indent = " " * (2 + len(item.group(1)))
                marker = "-" if item.group(2) == "*" else item.group(2)
                text = inline(" ".join([line[item.end():].strip()] + [part.strip() for part in block[1:]]))
                first, rest = f"{indent}{marker} ", indent + " " * (len(marker) + 1)
            else:
                text = inline(" ".join(part.strip() for part in block))
                first = rest = "  "
            out.extend(_wrap(text, width, first, rest))
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


# -- showing it --------------------------------------------------------------------------

def pager_argv(env):
    """The pager to show a page in: $PAGER (its words; empty: none), else `less -FRX`
    when it is installed, else None."""
    import shlex
    import shutil

    if "PAGER" in env:
        try:
            words = shlex.split(env["PAGER"])
        except ValueError:
            return None
        return words or None
    less = shutil.which("less", path=env.get("PATH", os.defpath))
    return [less, "-FRX"] if less else None


def show(text, stdout, env, to_a_terminal):
    """Write the page, through the pager when the output is a terminal."""
    argv = pager_argv(env) if to_a_terminal else None
    if argv is None:
        stdout.write(text)
        return
    import subprocess

    try:
        stdout.flush()
        # less (or a $PAGER of `less`) shows the bold headings, quits when the page fits
        # and leaves it on the screen, unless the user's LESS says otherwise (as git does).
        pager = subprocess.Popen(argv, stdin=subprocess.PIPE, env={"LESS": "FRX", **env})
    except OSError:
        stdout.write(text)
        return
    try:
        pager.stdin.write(text.encode("utf-8", "replace"))
        pager.stdin.close()
    except BrokenPipeError:      # the reader quit the pager before the end
        pass
    while True:
        try:
            pager.wait()
            return
        except KeyboardInterrupt:     # Ctrl-c is the pager's (less takes it itself)
            continue
