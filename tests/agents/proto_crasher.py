"""proto_recorder.py's agent, dying mid-handler (exit status 3) the first time it is handed
the reply whose text is argv[1] (default "crash"); started again, it handles it. What it
had finished before must not be handed to it again."""

import sys

import proto_recorder

if __name__ == "__main__":
    sys.exit(proto_recorder.main(crash_on=sys.argv[1] if len(sys.argv) > 1 else "crash"))
