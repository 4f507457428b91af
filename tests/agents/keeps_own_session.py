"""An agent that picks its own session id and writes its session files as a real one
does (measured on the pinned agents, roost.jobs.sessions), then resumes a session by id:

    keeps_own_session.py codex [resume ID]
        Codex: at the first line typed, `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-
        <uuid>.jsonl` with a `session_meta` first line (id, cwd), held open for the
        session's life.
    keeps_own_session.py pi --session-dir DIR [--session ID]
        pi: at the first line typed, `DIR/<time>_<uuid>.jsonl`, opened only to append.
    keeps_own_session.py aider --chat-history-file FILE [--restore-chat-history]
        aider: each line appended to FILE; restored from it when asked.

It prints `new conversation` or `resumed session ID` (aider: `restored N lines`), then
`earlier: TEXT` for each line of the resumed session, its cwd and $RESUME_MARK, and a
prompt `> ` that echoes each line (`echo: TEXT`) after writing it to its session.
"""

import datetime
import glob
import json
import os
import sys
import uuid


class CodexRollout:
    def __init__(self, args):
        self.home = os.environ["CODEX_HOME"]
        self.handle = None
        if args[:1] == ["resume"]:
            self.id = args[1]
            found = glob.glob(os.path.join(self.home, "sessions", "*", "*", "*", f"rollout-*-{self.id}.jsonl"))
            if len(found) != 1:
                sys.exit(f"no session {self.id}")
            self.handle = open(found[0], "a+", encoding="utf-8")
            self.handle.seek(0)
            lines = [json.loads(line) for line in self.handle if line.strip()]
            self.earlier = [line["payload"]["text"] for line in lines if line["type"] == "user"]
        else:
            self.id, self.earlier = str(uuid.uuid4()), None

    def write(self, text):
        if self.handle is None:
            now = datetime.datetime.now()
            folder = os.path.join(self.home, "sessions", now.strftime("%Y"), now.strftime("%m"), now.strftime("%d"))
            os.makedirs(folder, exist_ok=True)
            name = f"rollout-{now.strftime('%Y-%m-%dT%H-%M-%S')}-{self.id}.jsonl"
            self.handle = open(os.path.join(folder, name), "a", encoding="utf-8")
            self.handle.write(json.dumps({"type": "session_meta", "payload": {"id": self.id, "cwd": os.getcwd()}})
                              + "\n")
        self.handle.write(json.dumps({"type": "user", "payload": {"text": text}}) + "\n")
        self.handle.flush()


class PiSession:
    def __init__(self, args):
        self.folder = args[args.index("--session-dir") + 1]
        self.path = None
        if "--session" in args:
            self.id = args[args.index("--session") + 1]
            found = glob.glob(os.path.join(self.folder, f"*_{self.id}.jsonl"))
            if len(found) != 1:
                sys.exit(f"no session {self.id}")
            self.path = found[0]
            with open(self.path, encoding="utf-8") as handle:
                lines = [json.loads(line) for line in handle if line.strip()]
            self.earlier = [line["text"] for line in lines if line["type"] == "message"]
        else:
            self.id, self.earlier = str(uuid.uuid4()), None

    def write(self, text):
        lines = []
        if self.path is None:
            os.makedirs(self.folder, exist_ok=True)
            stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H-%M-%S-%fZ")
            self.path = os.path.join(self.folder, f"{stamp}_{self.id}.jsonl")
            lines.append({"type": "session", "id": self.id, "cwd": os.getcwd()})
        lines.append({"type": "message", "text": text})
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(line) + "\n" for line in lines))


class AiderHistory:
    def __init__(self, args):
        self.path = args[args.index("--chat-history-file") + 1]
        self.id = None
        self.earlier = None
        if "--restore-chat-history" in args:
            try:
                with open(self.path, encoding="utf-8") as handle:
                    self.earlier = [line[len("#### "):].rstrip("\n") for line in handle if line.startswith("#### ")]
            except FileNotFoundError:
                self.earlier = []

    def write(self, text):
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(f"#### {text}\n")


STYLES = {"codex": CodexRollout, "pi": PiSession, "aider": AiderHistory}


def main():
    style, args = sys.argv[1], sys.argv[2:]
    session = STYLES[style](args)
    if session.earlier is None:
        print("new conversation")
    elif session.id:
        print(f"resumed session {session.id}")
    else:
        print(f"restored {len(session.earlier)} lines")
    for text in session.earlier or []:
        print(f"earlier: {text}")
    print(f"cwd {os.getcwd()}")
    print(f"mark {os.environ.get('RESUME_MARK')}", flush=True)
    while True:
        sys.stdout.write("> ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return 0
        session.write(line.strip())
        print(f"echo: {line.strip()}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
