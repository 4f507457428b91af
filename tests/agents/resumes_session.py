"""An agent that keeps a conversation by id, as Claude Code does: started with
`--session-id ID` it prints `new session ID`, started with `--resume ID` it prints
`resumed session ID`; then its cwd and $RESUME_MARK, and a prompt `> ` that echoes each
line. Anything else in argv is printed as `args: ...`."""

import os
import sys


def main():
    args = sys.argv[1:]
    if "--session-id" in args:
        print(f"new session {args[args.index('--session-id') + 1]}")
    elif "--resume" in args:
        print(f"resumed session {args[args.index('--resume') + 1]}")
    else:
        print("args: " + " ".join(args))
    print(f"cwd {os.getcwd()}")
    print(f"mark {os.environ.get('RESUME_MARK')}", flush=True)
    while True:
        sys.stdout.write("> ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return 0
        print(f"echo: {line.strip()}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
