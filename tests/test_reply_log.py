"""The reply book's log (issue 21): records appended, read back exactly after a torn
last record (cut off, so the next record is whole), folded into the snapshot past its
limit, and a book read the same from disk as the daemon holds it."""

import os

from jobkit import dispatch, wait_row
from roost.jobs.reply_book import read_book, read_log


def queued_texts(job_dir):
    return [(item["seq"], item["text"]) for item in read_book(job_dir)["pending"]]


def test_a_torn_last_record_is_dropped_and_cut_off_so_the_next_reply_is_kept(daemon):
    job_id = dispatch(daemon, ["sleep", "300"], name="waits", protocol=True)
    job_dir = os.path.join(daemon.home, "jobs", job_id)
    assert daemon.call("reply", id=job_id, text="one")["saved"] is True
    daemon.kill9()
    log_path = os.path.join(job_dir, "replies.log")
    with open(log_path, "ab") as handle:       # a kill in the middle of the next record
        handle.write(b'{"add": {"seq": 2, "text": "torn", "at": 1}}')
    daemon.start()
    wait_row(daemon, job_id, lambda row: row["queued"] == 1, what="the book read back")
    assert daemon.call("reply", id=job_id, text="two")["saved"] is True
    daemon.kill9()
    daemon.start()
    assert queued_texts(job_dir) == [(1, "one"), (2, "two")]
    wait_row(daemon, job_id, lambda row: row["queued"] == 2, what="both replies kept")


def test_a_record_without_its_newline_was_never_whole(tmp_path):
    path = tmp_path / "replies.log"
    path.write_bytes(b'{"clear": [1]}\n{"clear": [2]}')
    records, good = read_log(str(path))
    assert records == [{"clear": [1]}] and good == len(b'{"clear": [1]}\n')


def test_a_long_log_is_folded_into_the_snapshot_and_reads_the_same(daemon):
    job_id = dispatch(daemon, ["sleep", "300"], name="waits", protocol=True)
    job_dir = os.path.join(daemon.home, "jobs", job_id)
    sent = []
    for round_number in range(30):          # 30 x 40 records of ~2.1 KiB: past the 64 KiB fold
        text = f"{round_number} " + "x" * 2000
        daemon.call("reply", id=job_id, text=text, requestId=f"r{round_number}")
        sent.append(text)
    assert os.path.getsize(os.path.join(job_dir, "replies.log")) < 64 * 1024
    assert [text for _, text in queued_texts(job_dir)] == sent
    daemon.kill9()
    daemon.start()
    wait_row(daemon, job_id, lambda row: row["queued"] == 30, what="the book read back")
    assert daemon.call("reply", id=job_id, text="again", requestId="r3")["duplicate"] is True


def test_a_new_job_has_its_empty_log_before_its_first_reply(daemon):
    """Made with the job's directory, the log's name is on disk with job.json: a first
    reply costs one fdatasync, not a sync of the directory as well."""
    job_id = dispatch(daemon, ["sleep", "300"], name="waits", protocol=True)
    log_path = os.path.join(daemon.home, "jobs", job_id, "replies.log")
    assert os.path.getsize(log_path) == 0
    assert daemon.call("reply", id=job_id, text="one")["saved"] is True
    assert [record["add"]["text"] for record in read_log(log_path)[0]] == ["one"]
