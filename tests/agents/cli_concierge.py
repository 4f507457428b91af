"""A terminal concierge in its simplest form: prints a prompt `? `, reads a line (the
person's question, typed by roost), and answers it with the CLI from inside its job, as
a terminal agent's shell tool would: `roost concierge say answer ...`. A line
`suggest ID TEXT` suggests TEXT for job ID instead, `policy` prints the policy.
"""

import subprocess
import sys


def roost(*argv):
    done = subprocess.run([sys.executable, "-m", "roost", *argv], capture_output=True, text=True)
    print(done.stdout.strip() or done.stderr.strip(), flush=True)


def main():
    while True:
        sys.stdout.write("? ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return 0
        words = line.split()
        if words[:1] == ["suggest"] and len(words) >= 3:
            roost("concierge", "suggest", words[1], *words[2:], "--why", "it asked this before")
        elif words[:1] == ["policy"]:
            roost("concierge", "policy")
        elif words:
            roost("concierge", "say", "answer", f"you asked: {line.strip()}")


if __name__ == "__main__":
    sys.exit(main())
