"""A terminal agent that spends tokens as Claude Code records them: prints `> `, reads a
line, "works" and writes its responses to `$CLAUDE_CONFIG_DIR/projects/<cwd>/<id>.jsonl`
(one line per content block, the output growing, as Claude Code 2.1.197 does), then
prompts again.

    spends.py [--session-id ID] [--blocks N]

Lines it takes:
  spend IN OUT [MODEL]  one response: IN fresh input tokens (and 1000 cache reads), OUT output
  loop IN OUT           a response every 0.2 s until Esc is pressed (the agent's interrupt)
  new                   a new session id from here on (as `/clear` gives)
  quit                  ends it
"""

import json
import os
import re
import select
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
    transcript = Transcript(session, blocks)
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
            elif words[:1] == ["new"]:
                transcript.session = str(uuid.uuid4())
                sys.stdout.write(f"session {transcript.session}\r\n")
            elif line:
                sys.stdout.write(f"echo: {line}\r\n")
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)


if __name__ == "__main__":
    sys.exit(main())
