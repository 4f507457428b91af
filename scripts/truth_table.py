"""The truth table of docs/states.md (issue 27): real programs run under roost, each
brought to a known moment (it asks and reads, it sleeps, it redraws on a timer), and
what roost's row says then set beside what the program really does.

    scripts/truth-table            # installs what it can (as root), runs, writes the table
    .venv/bin/python scripts/truth_table.py --print      # prints it only

A fresh daemon of this checkout on a temp home runs each program as a plain job (no
profile: the kernel's word decides) and, where a row says so, under a waiting pattern.
A program this machine cannot run (not installed, no sshd) gets a row that says so.
What a program really does is known by how it is driven (the table's second column):
roost is told nothing of it.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from roost.client.connection import Client  # noqa: E402

TARGET = os.path.join(ROOT, "docs", "states.md")
BEGIN, END = "<!-- truth table: begin (scripts/truth-table writes it) -->", "<!-- truth table: end -->"
USER = "roosttruth"
STEADY_S = 2.5          # a reading is taken once it held this long
LATER_S = 15.0          # an unknown reading is watched this much longer
WAITS, WORKS, EITHER = "waits for the person", "works", "waits for a key or its own timer"
NODE_QUESTION = ("require('readline').createInterface({input: process.stdin, output: process.stdout})"
                 ".question('your colour? ', answer => { console.log('got ' + answer); setTimeout(() => {}, 600000) })")


class Stage:
    """One moment of a program: what brings it there (`send`: a reply, `keys`: named
    keys), the text that shows it is there, and what it really does then."""

    def __init__(self, shown, truth, send=None, keys=None, note=""):
        self.shown, self.truth, self.send, self.keys, self.note = shown, truth, send, keys, note


class Case:
    def __init__(self, name, argv, stages, env=None, cwd=None, term=None, needs=None, jailed=True):
        self.name, self.argv, self.stages = name, argv, stages
        self.env, self.cwd, self.term, self.needs = env or {}, cwd, term, needs
        self.jailed = jailed        # as every job runs, unless the program needs what a jail refuses


class Daemon:
    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="rtt-", dir="/tmp")
        self.home = os.path.join(self.base, "h")
        env = {**os.environ, "ROOST_HOME": self.home, "PYTHONPATH": ROOT}
        env.pop("ROOST_SOCKET", None)
        self.process = subprocess.Popen([sys.executable, "-m", "roost", "daemon", "--foreground"], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                self.call("ping")
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the daemon did not answer")

    def call(self, op, **args):
        with Client.connect(os.path.join(self.home, "roost.sock"), timeout=30) as client:
            return client.call(op, args)

    def close(self):
        try:
            self.call("shutdown")
            self.process.wait(30)
        except Exception:
            self.process.kill()
        shutil.rmtree(self.base, ignore_errors=True)


def said(row):
    if row["status"] == "waiting":
        return "waiting"
    if row["state"] == "working":
        return "working"
    if row["state"] == "blocked" and row["status"] is None:
        return "unknown"
    return row["state"]


def judge(truth, reading):
    if truth == WAITS:
        return {"waiting": "right", "unknown": "unknown: roost cannot tell, and says so"}.get(reading, "WRONG")
    if truth == WORKS:
        return "right" if reading == "working" else "WRONG"
    return {"unknown": "right", "waiting": "right (it does read its terminal)"}.get(reading, "WRONG")


def run_case(daemon, case):
    rows = []
    job = daemon.call("dispatch", kind="shell", cwd=case.cwd or "/tmp", command=case.argv, env=case.env,
                      name=re.sub(r"\W+", "-", case.name)[:40], sessionFile="", origin="dispatch",
                      **({"term": case.term} if case.term else {}),
                      **({} if case.jailed else {"sandbox": False}))["id"]
    try:
        for stage in case.stages:
            if stage.send is not None:
                daemon.call("reply", id=job, text=stage.send, mode="steer")
            if stage.keys is not None:
                daemon.call("keys", id=job, keys=stage.keys)
            try:
                _wait(lambda: stage.shown in daemon.call("peek", id=job)["text"], 30, f"{stage.shown!r}")
                row, why = _steady(daemon, job)
            except RuntimeError as error:
                screen = daemon.call("peek", id=job)["text"].strip().splitlines()[-3:]
                rows.append((case, stage, "not reached", f"{error}; the screen ends {screen!r}", "NOT RUN"))
                break
            reading = said(row)
            verdict = judge(stage.truth, reading)
            if reading == "unknown":
                # A program may wait on a timer first and on its terminal alone later (vim's
                # updatetime): roost looks again, and so does the table.
                later = _changed(daemon, job, reading, LATER_S)
                if later is not None:
                    (row, why), seconds = later
                    verdict = f"{judge(stage.truth, said(row))} after {seconds:.0f} s (unknown before)"
                    reading = f"unknown, then {said(row)}"
            rows.append((case, stage, reading, why, verdict))
    finally:
        try:
            daemon.call("stop", id=job)
            daemon.call("rm", id=job)
        except Exception:
            pass
    return rows


def _steady(daemon, job):
    """The row once its state held STEADY_S (and the screen was judged), and the
    kernel's part of `explain`."""
    last, since, deadline = None, time.monotonic(), time.monotonic() + 40
    while time.monotonic() < deadline:
        explained = daemon.call("explain", id=job)
        row, rule = explained["row"], (explained.get("why") or {}).get("rule")
        now = (row["state"], row["status"], row["waitingFor"], rule)
        if now != last:
            last, since = now, time.monotonic()
        elif rule not in ("changed", "typed", None) and time.monotonic() - since >= STEADY_S:
            return row, _kernel_words(explained["text"])
        time.sleep(0.25)
    raise RuntimeError("no steady reading within 40 s")


def _changed(daemon, job, reading, seconds):
    """((row, the kernel's words), seconds after) once the row says other than
    `reading`, within `seconds`; else None."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        explained = daemon.call("explain", id=job)
        if said(explained["row"]) != reading:
            return (explained["row"], _kernel_words(explained["text"])), time.monotonic() - started + STEADY_S
        time.sleep(0.25)
    return None


def _kernel_words(text):
    found = re.search(r"(?:asked the kernel what its processes do: |the kernel says |asked beside it: )(.*?)"
                      r"(?:; so it| \(read by|; so roost|\.$)", text)
    if found:
        return found.group(1)
    return text.split(". ")[1] if ". " in text else text


def _wait(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} never showed")
        time.sleep(0.1)


# -- what the cases need -----------------------------------------------------------------

def _installed(*programs):
    missing = [program for program in programs if shutil.which(program) is None]
    return f"{', '.join(missing)} not installed" if missing else None


def _user():
    if os.getuid() != 0:
        return "needs root (a user of its own, sshd)"
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", USER], check=True)
    subprocess.run(["chpasswd"], input=f"{USER}:not-a-real-password\n", text=True, check=True)
    return None


class Sshd:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="rtt-sshd-")
        self.process, self.port = None, None

    def start(self):
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        if not os.path.exists(sshd) or _user():
            return "no sshd here (openssh-server), or not root"
        key = os.path.join(self.dir, "host_key")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = os.path.join(self.dir, "sshd_config")
        with open(config, "w") as handle:
            handle.write(f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {key}\nUsePAM no\n"
                         f"PasswordAuthentication yes\nPidFile {self.dir}/sshd.pid\nLogLevel ERROR\n")
        self.process = subprocess.Popen([sshd, "-D", "-e", "-f", config], stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        time.sleep(1.0)
        return None if self.process.poll() is None else "sshd did not start"

    def close(self):
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def _apt_package():
    """A package whose install asks [Y/n] (it brings others along), or None."""
    if shutil.which("apt-get") is None:
        return None
    for package in ("git-gui", "vim-gtk3", "tk", "python3-tk", "gnuplot"):
        simulated = subprocess.run(["apt-get", "-s", "install", package], capture_output=True, text=True)
        if simulated.returncode == 0 and simulated.stdout.count("\nInst ") > 1:
            return package
    return None


def cases(work, sshd_port, ssh_why, apt_package):
    repo = os.path.join(work, "repo")
    subprocess.run(["git", "init", "-q", repo], check=True)
    with open(os.path.join(repo, "file"), "w") as handle:
        handle.write("a change\n")
    subprocess.run(["git", "-C", repo, "add", "file"], check=True)
    tests = os.path.join(work, "tests")
    os.makedirs(tests)
    with open(os.path.join(tests, "test_pauses.py"), "w") as handle:
        handle.write("import os, time\n\ndef test_slow():\n    time.sleep(600)\n\n"
                     "def test_debugged():\n    if os.environ.get('DEBUG_IT'):\n        breakpoint()\n")
    npm_dir = os.path.join(work, "npm-project")
    os.makedirs(npm_dir)
    python = sys.executable
    git_env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_EDITOR": "vim -u NONE"}
    ssh = ["ssh", "-p", str(sshd_port or 22), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
           "-o", "PreferredAuthentications=password", "-o", "PubkeyAuthentication=no", f"{USER}@127.0.0.1", "true"]
    return [
        Case("sh `read`", ["sh", "-c", 'printf "your name? "; read name; echo "hello $name"; sleep 600'],
             [Stage("your name?", WAITS), Stage("hello ada", WORKS, send="ada", note="answered: `sleep 600`")]),
        Case("bash's interactive prompt", ["bash", "--norc", "--noprofile", "-i"],
             [Stage("shell$", WAITS)], env={"PS1": "shell$ "}),
        Case("python's `input()`", [python, "-c", "print('got', input('what? '))"], [Stage("what?", WAITS)]),
        Case("node readline prompt", ["node", "-e", NODE_QUESTION], [Stage("your colour?", WAITS)],
             needs=_installed("node")),
        Case("node readline prompt, profile pattern `^your colour\\?`", ["node", "-e", NODE_QUESTION],
             [Stage("your colour?", WAITS)], term={"waiting": r"^your colour\?"}, needs=_installed("node")),
        Case("`cat`", ["sh", "-c", "echo cat reads; exec cat"], [Stage("cat reads", WAITS)]),
        Case("`less`", ["less", "/etc/services"], [Stage("services", WAITS)], needs=_installed("less")),
        Case("`vim`", ["vim", "-u", "NONE", os.path.join(work, "notes.txt")], [Stage("notes.txt", WAITS)],
             needs=_installed("vim")),
        Case("`top`", ["top", "-d", "3"], [Stage("Tasks:", EITHER)], needs=_installed("top")),
        Case("`sleep`", ["sh", "-c", "echo sleeping; exec sleep 600"], [Stage("sleeping", WORKS)]),
        Case("a loop printing every 2 s", ["sh", "-c", "while true; do date; sleep 2; done"],
             [Stage("UTC", WORKS)]),
        Case("`git commit` in its editor", ["git", "commit"], [Stage("COMMIT_EDITMSG", WAITS)], env=git_env,
             cwd=repo, needs=_installed("git", "vim")),
        Case("`ssh` asking for a password", ssh, [Stage("password:", WAITS)], needs=ssh_why),
        Case("`sudo` asking for a password (`--no-sandbox`: in a jail nothing gains privileges)",
             ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", "sudo", "-k", "true"],
             [Stage("password for", WAITS)], needs=_installed("sudo", "setpriv") or _user(), jailed=False),
        Case(f"`apt-get install {apt_package}` asking [Y/n]", ["apt-get", "install", apt_package or "-"],
             [Stage("[Y/n]", WAITS)],
             needs=None if apt_package else "no package here whose install asks (apt lists missing?)"),
        Case("`npm init`'s questions", ["npm", "init"], [Stage("package name:", WAITS)], cwd=npm_dir,
             env={"npm_config_offline": "true", "npm_config_update_notifier": "false", "HOME": work},
             needs=_installed("npm")),
        Case("a test runner in a slow test (`pytest`, a test sleeping)",
             [python, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-k", "slow", tests],
             [Stage("test_pauses.py", WORKS)]),
        Case("a test runner stopped at a breakpoint (`pytest`, pdb)",
             [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "debugged", tests],
             [Stage("(Pdb)", WAITS)], env={"DEBUG_IT": "1"}),
    ]


def table(results):
    lines = ["| program, at the moment | what it really does | roost's row | the kernel's word (from `roost explain`) "
             "| |", "|---|---|---|---|---|"]
    for case, stage, reading, why, verdict in results:
        moment = case.name + (f" ({stage.note})" if stage.note else "")
        why = why.replace("|", "\\|")
        lines.append(f"| {moment} | {stage.truth} | {reading} | {why} | {verdict} |")
    return "\n".join(lines)


def write(text):
    with open(TARGET, encoding="utf-8") as handle:
        doc = handle.read()
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    with open(TARGET, "w", encoding="utf-8") as handle:
        handle.write(doc[:start] + "\n" + text + "\n" + doc[end:])


def main(argv):
    work = tempfile.mkdtemp(prefix="rtt-work-")
    sshd = Sshd()
    daemon = None
    try:
        ssh_why = _installed("ssh") or sshd.start()
        daemon = Daemon()
        results = []
        for case in cases(work, sshd.port, ssh_why, _apt_package()):
            if case.needs:
                for stage in case.stages:
                    results.append((case, stage, "not run", f"could not be run here: {case.needs}", "NOT RUN"))
                continue
            print(f"truth table: {case.name} ...", file=sys.stderr, flush=True)
            results.extend(run_case(daemon, case))
        machine = subprocess.run(["uname", "-sr"], capture_output=True, text=True).stdout.strip()
        verdicts = [verdict for *_, verdict in results]
        not_run = [case.name for case, _, _, _, verdict in results if verdict == "NOT RUN"]
        text = (table(results) + f"\n\n{len(results)} moments: {sum(v.startswith('right') for v in verdicts)} read "
                f"right, {sum(v.startswith('unknown') for v in verdicts)} unknown (roost says it cannot tell), "
                f"{verdicts.count('WRONG')} wrong; "
                + (f"not run here: {', '.join(not_run)}. " if not_run else "every program could be run here. ")
                + f"Measured {time.strftime('%Y-%m-%d')} on {machine} as "
                f"{'root' if os.getuid() == 0 else 'a user'} by `scripts/truth-table`.")
        print(text)
        if "--print" not in argv:
            write(text)
        return 1 if any(verdict == "WRONG" for *_, verdict in results) else 0
    finally:
        if daemon is not None:
            daemon.close()
        sshd.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
