"""Write roost_agent.py, the one-file agent client, into DIR (default: here). Copy it
beside your agent script and `from roost_agent import RoostAgent`.

Usage:
  roost agent-file [DIR] [--force]
  roost agent-file --help

Options:
  --force  replace a roost_agent.py that differs
"""

import os


def main(opts, ctx):
    from roost.bundle.files import agent_file_path
    from roost.unix.files import write_atomic

    directory = opts["DIR"] or "."
    if not os.path.isdir(directory):
        ctx.stderr.write(f"roost: {directory} is not a directory\n")
        return 2
    with open(agent_file_path(), "rb") as source:
        data = source.read()
    target = os.path.join(directory, "roost_agent.py")
    if os.path.exists(target):
        with open(target, "rb") as existing:
            if existing.read() == data:
                ctx.say(f"{target} is already up to date")
                return 0
        if not opts["--force"]:
            ctx.stderr.write(f"roost: {target} exists and differs; --force replaces it\n")
            return 1
    write_atomic(target, data, mode=0o666)     # the house's writer; the user's umask decides the mode
    ctx.say(f"wrote {target}")
    return 0
