"""The release binary run as a user would, inside the Debian bullseye root that scripts/release
builds in (run there by bullseye's own python3, 3.9, which also runs the example agent and
so the bundled roost_agent.py). Standard library only; every wait polls with a deadline.

    python3 release_smoke.py smoke BINARY
        a fresh home: --version, daemon, run of a shell job, list, peek, the example
        protocol agent (run, reply), agent-file, stop, shutdown
    python3 release_smoke.py upgrade INSTALL_SH OLD_DIST NEW_DIST
        install.sh puts the older build in ~/.local/bin; its daemon runs a shell job and
        the agent; install.sh puts the new one over it while the daemon runs; the next
        command says the daemon is older; shutdown --keep-workers; the new daemon adopts
        the jobs and the keeper, with their output kept
"""

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

USER = "roost-smoke"
HERE = os.path.dirname(os.path.abspath(__file__))
ECHO_AGENT = os.path.join(os.path.dirname(HERE), "examples", "echo_agent.py")


def say(text):
    print(f"  {text}", flush=True)


class Failed(Exception):
    pass


def wait_for(predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failed(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def the_user():
    """A plain user of the root's, created once: the smoke run is not root's."""
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", USER], check=True)
        return pwd.getpwnam(USER)


class User:
    """A user with a fresh home, running commands as a shell of theirs would."""

    def __init__(self):
        self.account = the_user()
        self.home = tempfile.mkdtemp(prefix="home-", dir="/tmp")
        os.chown(self.home, self.account.pw_uid, self.account.pw_gid)
        os.chmod(self.home, 0o700)
        self.bin = os.path.join(self.home, ".local", "bin")
        self.program = "roost"     # as installed on the PATH; the smoke run uses the download
        self.env = {"HOME": self.home, "USER": USER, "LOGNAME": USER, "LANG": "C.UTF-8", "TERM": "dumb",
                    "PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin", "TMPDIR": "/tmp"}

    def run(self, argv, timeout=60, check=True):
        done = subprocess.run(argv, env=self.env, cwd=self.home, capture_output=True, timeout=timeout,
                              user=self.account.pw_uid, group=self.account.pw_gid, extra_groups=[])
        if check and done.returncode != 0:
            raise Failed(f"{' '.join(argv)} exited with {done.returncode}:\n{done.stdout.decode()}\n"
                         f"{done.stderr.decode()}")
        return done

    def roost(self, *argv, **kwargs):
        return self.run([self.program, *argv], **kwargs)

    def json(self, command, *argv, **kwargs):
        """A command's answer with --json (given before a `--` and the words after it)."""
        return json.loads(self.roost(command, "--json", *argv, **kwargs).stdout)

    def write(self, relative, text):
        path = os.path.join(self.home, relative)
        self.run(["mkdir", "-p", os.path.dirname(path)])
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chown(path, self.account.pw_uid, self.account.pw_gid)
        return path

    def state_home(self):
        return os.path.join(self.home, ".local", "state", "roost")

    def job_row(self, job_id):
        for row in self.json("list", "--all")["jobs"]:
            if row["id"] == job_id:
                return row
        return None

    def screen(self, job_id):
        return self.roost("peek", job_id).stdout.decode()

    def lock_pid(self, name):
        with open(os.path.join(self.state_home(), name)) as handle:
            return int(handle.read().split()[0])

    def setup_agent(self):
        """The example echo agent in a directory of its own, beside the roost_agent.py that
        `roost agent-file` writes, and a profile for it run by bullseye's python3."""
        agent_dir = os.path.join(self.home, "agent")
        self.run(["mkdir", "-p", agent_dir])
        self.roost("agent-file", agent_dir)
        shutil.copy(ECHO_AGENT, os.path.join(agent_dir, "echo_agent.py"))
        os.chown(os.path.join(agent_dir, "echo_agent.py"), self.account.pw_uid, self.account.pw_gid)
        profile = {"agentProfiles": {"echo": {"command": ["/usr/bin/python3", os.path.join(agent_dir, "echo_agent.py")],
                                              "task": "type", "protocol": True}}}
        self.write(".config/roost/roost.json", json.dumps(profile))

    def cleanup(self):
        if shutil.which(self.program, path=self.env["PATH"]) or os.path.isfile(self.program):
            self.roost("shutdown", check=False, timeout=30)
        shutil.rmtree(self.home, ignore_errors=True)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return not handle.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return False


SHELL_JOB = ["sh", "-c", 'echo "shell job ready"; while read line; do echo "heard: $line"; done']


def start_jobs(user):
    shell = user.json("run", "--name", "shell", "--", *SHELL_JOB)["id"]
    wait_for(lambda: "shell job ready" in user.screen(shell), "the shell job's first line")
    echo = user.json("run", "--profile", "echo", "hello")["id"]
    wait_for(lambda: (user.job_row(echo) or {}).get("summary") == "echo: hello", "the agent to echo its task")
    return shell, echo


def smoke(binary):
    user = User()
    try:
        download = os.path.join(user.home, "Downloads", "roost")
        user.run(["mkdir", "-p", os.path.dirname(download)])
        shutil.copy(binary, download)
        os.chown(download, user.account.pw_uid, user.account.pw_gid)
        user.program = download
        python = subprocess.run(["/usr/bin/python3", "--version"], capture_output=True, text=True).stdout.strip()
        say(f"as {USER} in a fresh home {user.home}; the agent runs on {python}")

        version = user.roost("--version").stdout.decode().strip()
        if not (version.startswith("roost ") and "(commit " in version and "glibc 2." in version):
            raise Failed(f"--version said {version!r}")
        say(f"--version: {version}")

        started = user.roost("daemon").stdout.decode().strip()
        pong = user.json("ping")
        say(f"daemon: {started}; ping: pid {pong['pid']}, roost {pong['version']}")

        user.setup_agent()
        shell, echo = start_jobs(user)
        say(f"run: shell job {shell}; run --profile echo: protocol agent {echo}")

        listed = user.roost("list").stdout.decode()
        if shell not in listed or "echo: hello" not in listed:
            raise Failed(f"list shows:\n{listed}")
        say("list: both jobs, the agent's row reads 'echo: hello'")

        if "shell job ready" not in user.roost("peek", shell).stdout.decode():
            raise Failed("peek did not show the shell job's screen")
        user.roost("reply", "--steer", shell, "typed in")
        wait_for(lambda: "heard: typed in" in user.screen(shell), "the shell job to hear the reply")
        say("peek: the shell job's screen; reply --steer: typed into it")

        answer = user.json("reply", echo, "from the smoke run")
        if not answer.get("delivered"):
            raise Failed(f"reply to the agent: {answer}")
        wait_for(lambda: user.job_row(echo)["summary"] == "echo: from the smoke run", "the agent to echo the reply")
        say("reply: delivered to the protocol agent, which echoed it")

        user.roost("stop", shell)
        wait_for(lambda: user.job_row(shell)["endedAt"] is not None, "the shell job to end")
        say("stop: the shell job ended")

        user.roost("shutdown")
        wait_for(lambda: not alive(pong["pid"]), "the daemon to exit")
        wait_for(lambda: not os.path.exists(os.path.join(user.state_home(), "roost.sock")), "the socket to go")
        say("shutdown: the daemon and its jobs are gone")
    finally:
        user.cleanup()


def install(user, install_sh, dist):
    done = user.run(["sh", install_sh, "--from", dist])
    return done.stdout.decode()


def upgrade(install_sh, old_dist, new_dist):
    user = User()
    try:
        said = install(user, install_sh, old_dist)
        old_version = user.json("ping")["version"]
        say(f"installed the older build: {said.splitlines()[1]}")
        if "is not on your PATH" in said:
            raise Failed("install.sh said ~/.local/bin is not on a PATH that has it")
        user.setup_agent()
        shell, echo = start_jobs(user)
        daemon = user.json("ping")["pid"]
        keeper = user.lock_pid("keeper.lock")
        job_pids = {job: user.job_row(job)["pid"] for job in (shell, echo)}
        say(f"roost {old_version}: daemon {daemon}, keeper {keeper}, jobs {shell} and {echo}")

        said = install(user, install_sh, new_dist)
        if "A roost daemon of an earlier install may be running" not in said:
            raise Failed(f"install.sh over a running daemon said:\n{said}")
        listed = user.roost("list")
        notice = listed.stderr.decode()
        new_version = user.roost("--version").stdout.decode().split()[1]
        if f"the daemon runs roost {old_version}, older than this roost {new_version}" not in notice \
                or "roost shutdown --keep-workers" not in notice:
            raise Failed(f"the first command after the install said on stderr: {notice!r}")
        if not alive(daemon) or user.json("ping")["pid"] != daemon:
            raise Failed("the install stopped the running daemon")
        say(f"installed roost {new_version} over it; the old daemon runs on, and the next command said:")
        say(f"  {notice.strip()}")

        user.roost("shutdown", "--keep-workers")
        wait_for(lambda: not alive(daemon), "the old daemon to exit")
        listed = user.roost("list")
        pong = user.json("ping")
        if pong["version"] != new_version or listed.stderr:
            raise Failed(f"after the upgrade: ping {pong}, stderr {listed.stderr!r}")
        for job, pid in job_pids.items():
            row = user.job_row(job)
            if row is None or row["pid"] != pid or row["endedAt"] is not None or not alive(pid):
                raise Failed(f"job {job} was not adopted alive: {row}")
        if user.lock_pid("keeper.lock") != keeper or not alive(keeper):
            raise Failed("the keeper of the older build was not kept")
        say(f"roost {new_version}: daemon {pong['pid']} adopted both jobs and keeper {keeper}")

        screen = user.screen(shell)
        if "shell job ready" not in screen or "heard" in screen:
            raise Failed(f"the shell job's output was not kept:\n{screen}")
        user.roost("reply", "--steer", shell, "after the upgrade")
        wait_for(lambda: "heard: after the upgrade" in user.screen(shell), "the adopted shell job to answer")
        user.roost("reply", echo, "after the upgrade")
        wait_for(lambda: user.job_row(echo)["summary"] == "echo: after the upgrade", "the adopted agent to answer")
        say("their output is kept, and both answer replies under the new daemon")
    finally:
        user.cleanup()


def main(argv):
    if argv[:1] == ["smoke"] and len(argv) == 2:
        smoke(argv[1])
    elif argv[:1] == ["upgrade"] and len(argv) == 4:
        upgrade(*argv[1:])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failed as failure:
        sys.stderr.write(f"release smoke: {failure}\n")
        sys.exit(1)
