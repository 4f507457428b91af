"""A terminal agent that spends tokens as Claude Code records them: prints `> `, reads a
line, "works" and writes its responses to `$CLAUDE_CONFIG_DIR/projects/<cwd>/<id>.jsonl`
(one line per content block, the output growing, as Claude Code 2.1.197 does), then
prompts again. With --codex it writes them as Codex 0.171 does instead: a rollout
`$CODEX_HOME/sessions/Y/M/D/rollout-<time>-<id>.jsonl` it holds open, with cumulative
`token_count` events carrying the plan's windows (`window P5 P7` sets their percents).

    spends.py [--session-id ID] [--blocks N] [--codex]

Lines it takes:
  spend IN OUT [MODEL]  one response: IN fresh input tokens (and 1000 cache reads), OUT output
  loop IN OUT           a response every 0.2 s until Esc is pressed (the agent's interrupt)
  new                   a new session id from here on (as `/clear` gives)
  status P5 P7          run the status line as Claude Code does (`roost statusline claude`, its
                        input with the 5-hour and 7-day windows at P5 and P7 percent) and show it
  window P5 P7 [S]      (--codex) the windows the next token_count events carry (the 5-hour one
                        resetting in S seconds, default 3600)
  quit                  ends it
"""

import json
import os
import re
import select
import subprocess
import sys
import termios
import time
import tty
import uuid


class Transcript:
    def __init__(self, session, blocks):
        self.session = session
        self.blocks = blocks
        self.count = 0
        config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.environ["HOME"], ".claude")
        self.folder = os.path.join(config, "projects", re.sub(r"[^A-Za-z0-9]", "-", os.getcwd()))
        os.makedirs(self.folder, exist_ok=True)

    def respond(self, fresh, output, model="claude-opus-4-8"):
        self.count += 1
        message_id, request_id = f"msg_{uuid.uuid4().hex[:16]}", f"req_{uuid.uuid4().hex}"
        with open(os.path.join(self.folder, self.session + ".jsonl"), "a", encoding="utf-8") as handle:
            for block in range(1, self.blocks + 1):
                usage = {"input_tokens": fresh, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1000,
                         "output_tokens": max(1, output * block // self.blocks)}
                entry = {"type": "assistant", "sessionId": self.session, "requestId": request_id,
                         "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                         "message": {"id": message_id, "role": "assistant", "model": model,
                                     "content": [{"type": "text", "text": f"block {block}"}], "usage": usage}}
                handle.write(json.dumps(entry) + "\n")
                handle.flush()


class Rollout:
    """A Codex rollout: session_meta, turn_context, then a token_count per response."""

    def __init__(self, session):
        self.session = session
        self.total = [0, 0, 0, 0]
        self.windows = (10.0, 20.0)
        self.reset_s = 3600
        self.count = 0
        home = os.environ.get("CODEX_HOME") or os.path.join(os.environ["HOME"], ".codex")
        folder = os.path.join(home, "sessions", time.strftime("%Y/%m/%d"))
        os.makedirs(folder, exist_ok=True)
        self.handle = open(os.path.join(folder, f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S')}-{session}.jsonl"), "a")
        self._write("session_meta", {"id": session, "cwd": os.getcwd(), "cli_version": "0.171.0"})
        self._write("turn_context", {"turn_id": "t1", "model": "gpt-5.5"})

    def _write(self, kind, payload):
        self.handle.write(json.dumps({"timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                                      "type": kind, "payload": payload}) + "\n")
        self.handle.flush()

    def respond(self, fresh, output, model=None):
        self.count += 1
        last = [fresh + 1000, output, 1000, 0]
        self.total = [a + b for a, b in zip(self.total, last)]
        names = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_input_tokens")
        now = int(time.time())
        limits = {"limit_id": "codex",
                  "primary": {"used_percent": self.windows[0], "window_minutes": 300, "resets_at": now + self.reset_s},
                  "secondary": {"used_percent": self.windows[1], "window_minutes": 10080, "resets_at": now + 86400}}
        for _ in range(2):      # last_token_usage repeats within a turn
            self._write("event_msg", {"type": "token_count", "info": {"total_token_usage": dict(zip(names, self.total)),
                                                                      "last_token_usage": dict(zip(names, last))},
                                      "rate_limits": limits})


def status_line(session, five, seven):
    """What Claude Code does for its status line: runs the command with its input."""
    now = int(time.time())
    data = {"session_id": session, "model": {"id": "claude-opus-4-8"}, "workspace": {"current_dir": os.getcwd()},
            "rate_limits": {"five_hour": {"used_percentage": five, "resets_at": now + 3600},
                            "seven_day": {"used_percentage": seven, "resets_at": now + 86400}}}
    done = subprocess.run(["/bin/sh", "-c", "roost statusline claude"], input=json.dumps(data).encode(),
                          capture_output=True, timeout=30)
    return done.stdout.decode("utf-8", "replace").strip()


def read_line():
    """A line typed (echoed), or "\\x1b" when Esc came alone."""
    text = ""
    while True:
        char = os.read(0, 1).decode("utf-8", "replace")
        if not char:
            return None
        if char == "\x1b" and not text:
            return "\x1b"
        if char in "\r\n":
            sys.stdout.write("\r\n")
            return text
        text += char
        sys.stdout.write(char)
        sys.stdout.flush()


def escape_pressed(timeout):
    ready, _, _ = select.select([0], [], [], timeout)
    return bool(ready) and os.read(0, 1) == b"\x1b"


def main():
    args = sys.argv[1:]
    session = args[args.index("--session-id") + 1] if "--session-id" in args else str(uuid.uuid4())
    blocks = int(args[args.index("--blocks") + 1]) if "--blocks" in args else 3
    transcript = Rollout(session) if "--codex" in args else Transcript(session, blocks)
    saved = termios.tcgetattr(0)
    tty.setcbreak(0)
    try:
        while True:
            sys.stdout.write("> ")
            sys.stdout.flush()
            line = read_line()
            if line is None or line.strip() == "quit":
                return 0
            words = line.split()
            if words[:1] == ["spend"] and len(words) >= 3:
                sys.stdout.write("working...\r\n")
                sys.stdout.flush()
                transcript.respond(int(words[1]), int(words[2]), *words[3:4])
                sys.stdout.write(f"spent {words[1]} {words[2]}\r\n")
            elif words[:1] == ["loop"] and len(words) >= 3:
                sys.stdout.write("working...\r\n")
                sys.stdout.flush()
                while not escape_pressed(0.2):
                    transcript.respond(int(words[1]), int(words[2]))
                sys.stdout.write(f"interrupted after {transcript.count} responses\r\n")
            elif words[:1] == ["status"] and len(words) == 3:
                shown = status_line(transcript.session, float(words[1]), float(words[2]))
                sys.stdout.write(f"status line: {shown}\r\n")
            elif words[:1] == ["window"] and len(words) in (3, 4):
                transcript.windows = (float(words[1]), float(words[2]))
                transcript.reset_s = int(words[3]) if len(words) == 4 else 3600
                sys.stdout.write("windows set\r\n")
            elif words[:1] == ["new"]:
                transcript.session = str(uuid.uuid4())
                sys.stdout.write(f"session {transcript.session}\r\n")
            elif line:
                sys.stdout.write(f"echo: {line}\r\n")
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)


if __name__ == "__main__":
    sys.exit(main())
