"""A terminal agent that works briefly, asks a question with numbered choices and waits
for the answer; then says what was chosen and asks again."""

import sys
import time

CHOICES = ["postgres", "sqlite", "none"]


def main():
    print("planning the schema...", flush=True)
    time.sleep(0.2)
    while True:
        print("Which database should I use?")
        for number, choice in enumerate(CHOICES, 1):
            print(f"  {number}) {choice}")
        sys.stdout.write("Choose [1-3]: ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return 0
        answer = line.strip()
        if answer.isdigit() and 1 <= int(answer) <= len(CHOICES):
            print(f"using {CHOICES[int(answer) - 1]}", flush=True)
        else:
            print(f"not a choice: {answer!r}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
