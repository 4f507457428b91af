"""`roost` inside every job (issue 18): a job's PATH starts with roost's own `bin`,
whose `roost` runs this very roost, even with no roost on the user's PATH and no
PYTHONPATH that would find the checkout."""

import json
import os
import stat

from conftest import DaemonProcess
from jobkit import dispatch, output, wait_state

SCRIPT = """unset PYTHONPATH
cd /
command -v roost
roost task add 'from inside' --json >/dev/null && echo added
roost task list --json | tr -d '\\n'; echo
roost peers --json | tr -d '\\n'; echo
echo finished
"""


def test_a_job_runs_roost_with_no_roost_on_the_outer_path(daemon, tmp_path):
    job_id = dispatch(daemon, ["/bin/sh", "-c", SCRIPT], cwd=str(tmp_path),
                      env={"PATH": "/usr/bin:/bin"})
    wait_state(daemon, job_id, "done", "failed", timeout=30)
    text = output(daemon.home, job_id).replace("\r", "")
    assert "finished" in text, text
    lines = text.splitlines()
    assert lines[0] == os.path.join(daemon.home, "bin", "roost"), text
    assert lines[1] == "added", text
    tasks = json.loads(lines[2])
    assert [task["title"] for task in tasks["tasks"]] == ["from inside"]
    assert "peers" in json.loads(lines[3]), text


def test_the_script_is_the_owners_alone(daemon):
    info = os.stat(os.path.join(daemon.home, "bin", "roost"))
    assert stat.S_IMODE(info.st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(daemon.home, "bin")).st_mode) == 0o700


def test_a_home_whose_bin_cannot_be_made_still_serves(home, tmp_path):
    os.makedirs(home, mode=0o700)
    with open(os.path.join(home, "bin"), "w") as handle:
        handle.write("not a directory\n")
    daemon = DaemonProcess(home).start()
    try:
        job_id = dispatch(daemon, ["/bin/sh", "-c", "echo ran"], cwd=str(tmp_path))
        wait_state(daemon, job_id, "done", timeout=30)
        assert "ran" in output(home, job_id)
        with open(os.path.join(home, "daemon.log"), encoding="utf-8") as handle:
            assert "jobs will not find roost on their PATH" in handle.read()
    finally:
        daemon.stop()
