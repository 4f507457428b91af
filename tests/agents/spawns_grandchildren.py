"""An agent that leaves processes behind: a child in its own process group and a
grandchild in a session of its own (both outside the job's group, so only the job's
identity in their environment finds them), plus one that ignores SIGTERM. Prints
`ready <pids>` and then sleeps.
"""

import signal
import subprocess
import sys
import time


def main():
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    stubborn = [sys.executable, "-c",
                "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"]
    pids = []
    pids.append(subprocess.Popen(sleeper, process_group=0).pid)           # own group
    pids.append(subprocess.Popen(sleeper, start_new_session=True).pid)    # own session
    pids.append(subprocess.Popen(stubborn, start_new_session=True).pid)   # ignores SIGTERM
    # A grandchild whose parent is gone (the keeper, as subreaper, adopts it).
    middle = subprocess.Popen([sys.executable, "-c",
                               "import subprocess, sys; p = subprocess.Popen(sys.argv[1:], start_new_session=True, stdout=subprocess.DEVNULL); print(p.pid)"]
                              + sleeper, stdout=subprocess.PIPE)
    pids.append(int(middle.stdout.readline().strip()))
    middle.wait()
    print("ready " + " ".join(str(pid) for pid in pids), flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(main())
