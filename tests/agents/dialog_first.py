"""A terminal agent that asks first, as Claude Code and Codex do: a "trust this folder?"
dialog whose Enter alone accepts it (1 or Enter: yes, 2: no), and only then its prompt
`prompt> `, after which it echoes each line as `got: LINE`.

Every line it reads is written to `input.log` in its cwd, the dialog's answer included,
so a test sees what was typed into the dialog.
"""

import os
import sys


def note(line):
    with open("input.log", "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def main():
    sys.stdout.write("Do you trust the files in this folder?\n\n"
                     " > 1. Yes, proceed\n"
                     "   2. No, exit\n\n"
                     "Enter to confirm\n")
    sys.stdout.flush()
    answer = sys.stdin.readline()
    if not answer:
        return 1
    answer = answer.strip()
    note("dialog: " + answer)
    if answer == "2":
        print("not trusted: bye")
        return 0
    sys.stdout.write("\x1b[2J\x1b[H")   # the dialog is gone: a TUI redraws its screen
    if answer not in ("", "1"):
        print(f"typed into the dialog: {answer}")   # as if Enter had accepted it
    print("trusted")
    while True:
        sys.stdout.write("prompt> ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return 0
        note("prompt: " + line.strip())
        print(f"got: {line.strip()}", flush=True)


if __name__ == "__main__":
    os.umask(0o077)
    sys.exit(main())
