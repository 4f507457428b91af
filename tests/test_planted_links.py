"""No write of roost's follows a link a job planted in its own directory (issue 16): the
house's atomic writer (roost.unix.files) and roost_agent.py's copy of it on the same
plants, the output log reopened over a planted link, and a real job that plants a link
at each file roost writes for it (its exit record's temp name, job.json, replies.json,
output.log): the files outside are never written, and the job goes on."""

import importlib.util
import json
import os

import pytest

from conftest import ROOT, wait_for
from jobkit import dispatch, output, wait_row, wait_state
from roost import store
from roost.unix import files

OUTSIDE = "the user's own file\n"


def _agent_module():
    spec = importlib.util.spec_from_file_location("roost_agent_copy", os.path.join(ROOT, "roost_agent.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WRITERS = {"roost.unix.files": files.write_atomic, "roost_agent.py": _agent_module()._write_atomically}


def _outside(tmp_path, name="outside"):
    path = tmp_path / name
    path.write_text(OUTSIDE)
    return path


@pytest.mark.parametrize("writer", WRITERS, ids=list(WRITERS))
def test_a_link_planted_at_the_file_is_replaced_not_written_through(writer, tmp_path):
    outside = _outside(tmp_path)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    target = job_dir / "agent.json"
    target.symlink_to(outside)
    WRITERS[writer](str(target), b"{}\n")
    assert outside.read_text() == OUTSIDE
    assert not target.is_symlink() and target.read_bytes() == b"{}\n"


@pytest.mark.parametrize("writer", WRITERS, ids=list(WRITERS))
def test_a_link_planted_at_the_temp_name_is_never_opened(writer, tmp_path, monkeypatch):
    outside = _outside(tmp_path)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    # the random part of the temp name, made predictable: the first draw finds the plant
    draws = iter([b"\x01" * 6, b"\x02" * 6])
    monkeypatch.setattr(os, "urandom", lambda count: next(draws))
    (job_dir / f".agent.json.{'01' * 6}.tmp").symlink_to(outside)
    WRITERS[writer](str(job_dir / "agent.json"), b"{}\n")
    assert outside.read_text() == OUTSIDE
    assert (job_dir / "agent.json").read_bytes() == b"{}\n"
    assert sorted(os.listdir(job_dir)) == sorted(["agent.json", f".agent.json.{'01' * 6}.tmp"])


def test_the_store_writes_through_the_same_writer(tmp_path, monkeypatch):
    outside = _outside(tmp_path)
    (tmp_path / "job.json").symlink_to(outside)
    store.write_json(str(tmp_path / "job.json"), {"version": 1})
    assert outside.read_text() == OUTSIDE and json.loads((tmp_path / "job.json").read_text()) == {"version": 1}
    draws = iter([b"\x03" * 6, b"\x04" * 6])
    monkeypatch.setattr(os, "urandom", lambda count: next(draws))
    (tmp_path / f".job.json.{'03' * 6}.tmp").symlink_to(outside)       # job.json's temp name
    store.write_json(str(tmp_path / "job.json"), {"version": 2})
    assert outside.read_text() == OUTSIDE and json.loads((tmp_path / "job.json").read_text()) == {"version": 2}


@pytest.mark.parametrize("plant", ["symlink", "hardlink"])
def test_a_kept_file_opened_over_a_plant_is_made_anew(plant, tmp_path):
    outside = _outside(tmp_path)
    log = tmp_path / "output.log"
    if plant == "symlink":
        log.symlink_to(outside)
    else:
        os.link(outside, log)
    fd = files.open_own(str(log), os.O_RDWR)
    try:
        os.write(fd, b"roost's own\n")
    finally:
        os.close(fd)
    assert outside.read_text() == OUTSIDE
    assert not log.is_symlink() and log.read_bytes() == b"roost's own\n"


PLANTER = """
d="$ROOST_JOB_DIR"
ln -s "$1" "$d/.exit.json.$PPID.tmp"
rm -f "$d/job.json"; ln -s "$2" "$d/job.json"
rm -f "$d/replies.json"; ln -s "$3" "$d/replies.json"
rm -f "$d/replies.log"; ln -s "$4" "$d/replies.log"
echo planted
read line
echo "got $line"
exit 3
"""


def test_a_job_s_planted_links_are_never_written_through(daemon, tmp_path):
    outside = [_outside(tmp_path, name) for name in ("exit", "job", "replies", "replies-log")]
    job_id = dispatch(daemon, ["sh", "-c", PLANTER, "planter", *map(str, outside)])
    wait_for(lambda: "planted" in output(daemon.home, job_id), what="the links to be planted")
    daemon.call("reply", id=job_id, text="hello", requestId="planted-1")   # its id goes in the book
    ended = wait_state(daemon, job_id, "failed")
    assert ended["error"] == "exited with status 3" and "got hello" in output(daemon.home, job_id)
    job_dir = os.path.join(daemon.home, "jobs", job_id)
    assert [path.read_text() for path in outside] == [OUTSIDE] * 4
    with open(os.path.join(job_dir, "exit.json")) as handle:
        assert json.load(handle)["code"] == 3
    assert not os.path.islink(os.path.join(job_dir, "job.json"))


def test_an_output_log_replaced_by_a_link_is_not_followed_by_the_next_daemon(daemon, tmp_path):
    outside = _outside(tmp_path)
    job_id = dispatch(daemon, ["sh", "-c", "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.05; done"])
    wait_row(daemon, job_id, lambda current: current["pid"])
    wait_for(lambda: "tick 3" in output(daemon.home, job_id), what="the job to print")
    daemon.kill9()
    log = os.path.join(daemon.home, "jobs", job_id, "output.log")
    os.remove(log)
    os.symlink(outside, log)
    daemon.start()
    wait_for(lambda: not os.path.islink(log) and "tick" in output(daemon.home, job_id),
             what="the job's log made anew, and written")
    assert outside.read_text() == OUTSIDE
    daemon.call("stop", id=job_id)


def test_a_log_s_tail_never_reads_a_planted_link(tmp_path):
    from roost.term.output_log import read_tail

    secret = tmp_path / "id_key"
    secret.write_text("the user's secret key\n")
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "output.log").write_bytes(b"the job's own output\n")
    (job_dir / "output.log.1").symlink_to(secret)
    assert read_tail(str(job_dir), 4096) == b"the job's own output\n"
    os.remove(job_dir / "output.log.1")
    os.link(secret, job_dir / "output.log.1")
    assert read_tail(str(job_dir), 4096) == b"the job's own output\n"
    (job_dir / "output.log.1").unlink()
    (job_dir / "output.log.1").write_bytes(b"older output\n")
    assert read_tail(str(job_dir), 4096) == b"older output\nthe job's own output\n"
    assert read_tail(str(job_dir), 10) == b"wn output\n"
    assert read_tail(str(job_dir), 30) == b"older output\nthe job's own output\n"[-30:]
