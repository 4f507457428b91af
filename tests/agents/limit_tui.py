"""A TUI-like agent that hits its usage limit: works a moment, then shows
"You've hit your limit · resets HH:MM:SS" (a clock time a few seconds on, in the local
zone) above its prompt `> `. A line typed before that time gets the limit shown again;
"continue" after it clears the screen, works and answers; any later line is worked on
and echoed. Every line it reads goes to a log, one `<ms since the epoch> <line>` a line,
so a test can count what was typed into it and when.

argv[1]: the log's path; argv[2]: seconds from the limit to its reset (default 2);
argv[3]: the limit's text after "resets " (default: the clock time); argv[4] "menu": a
menu under the limit message first, left with "1" (as Claude Code's).

Its clock is the test daemon's (tests/clockkit.py): the real one moved on by the
milliseconds in the file LIMIT_SKEW_FILE names, when it names one.
"""

import os
import sys
import time


def now():
    try:
        with open(os.environ["LIMIT_SKEW_FILE"], encoding="utf-8") as handle:
            return time.time() + int(handle.read() or 0) / 1000
    except (KeyError, OSError, ValueError):
        return time.time()


def show_limit(resets_text):
    print(f"You've hit your limit · resets {resets_text}", flush=True)
    sys.stdout.write("> ")
    sys.stdout.flush()


def work(answer):
    print("working...", flush=True)
    time.sleep(0.3)
    print(answer, flush=True)
    sys.stdout.write("> ")
    sys.stdout.flush()


def main():
    log_path = sys.argv[1]
    reset_in = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    print("working...", flush=True)
    time.sleep(0.3)
    reset_at = now() + reset_in
    resets_text = sys.argv[3] if len(sys.argv) > 3 else time.strftime("%H:%M:%S", time.localtime(reset_at + 1))
    show_limit(resets_text)
    if len(sys.argv) > 4 and sys.argv[4] == "menu":
        # Claude Code's menu under its limit message: "1" waits for the reset.
        print("\n  What do you want to do?\n\n  ❯ 1. Stop and wait for limit to reset\n    2. Upgrade your plan\n\n"
              "  Enter to confirm · Esc to cancel", flush=True)
        while True:
            line = sys.stdin.readline()
            if not line:
                return 0
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(f"{int(now() * 1000)} menu:{line.strip()}\n")
            if line.strip() == "1":
                break
        sys.stdout.write("\x1b[2J\x1b[H")
        show_limit(resets_text)
    limited = True
    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        line = line.strip()
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"{int(now() * 1000)} {line}\n")
        if limited and (line != "continue" or now() < reset_at):
            show_limit(resets_text)
            continue
        if limited:
            limited = False
            sys.stdout.write("\x1b[2J\x1b[H")
            work("resumed: carrying on")
            continue
        work(f"echo: {line}")


if __name__ == "__main__":
    sys.exit(main())
