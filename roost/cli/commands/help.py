"""Show roost's manual in the terminal, by topic: the pages of docs/ (`roost help` lists
them). A topic is a page's name (`roost help jobs`), a word of its title (`roost help
notifications`), or else a command, whose usage it shows (`roost help run`). In a
terminal the page goes through $PAGER, else `less -FRX` when it is installed.

Usage:
  roost help [<topic>]
  roost help --help
"""

from roost.cli import manual
from roost.cli.context import ExitStatus


def _to_a_terminal(stdout):
    try:
        return stdout.isatty()
    except (AttributeError, ValueError):
        return False


def main(opts, ctx):
    word = opts["<topic>"]
    if word is None:
        ctx.say_as_is(manual.listing())
        return ExitStatus.OK
    found = manual.find(word)
    if len(found) == 1:
        terminal = _to_a_terminal(ctx.stdout)
        width = _width(ctx.env) if terminal else 80
        text = manual.render(manual.page(found[0]), width, bold=terminal and not ctx.env.get("NO_COLOR"))
        manual.show(text, ctx.stdout, ctx.env, terminal)
        return ExitStatus.OK
    if not found:
        from roost.cli.commands import COMMANDS

        if word in COMMANDS:
            from roost.cli.completing import usage_of

            ctx.say_as_is(usage_of(COMMANDS[word][0]).strip())
            return ExitStatus.OK
        ctx.stderr.write(f"roost help: no topic {word!r}\n\n{manual.listing()}")
    else:
        ctx.stderr.write(f"roost help: {word!r} names several topics ({', '.join(found)}): give one\n\n"
                         f"{manual.listing()}")
    return ExitStatus.USAGE


def _width(env):
    import shutil

    return shutil.get_terminal_size((80, 24)).columns
