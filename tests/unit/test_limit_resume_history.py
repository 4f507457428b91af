"""Limit resumes (roost.jobs.limit_resume) replayed on an injected clock: parked rows in,
the resumes the timer's rounds start out, and when it looks next."""

from kit import Feed, Settings, registry, running_job
from roost.jobs import limits
from roost.jobs.limit_resume import LimitResumer, MAX_SLEEP_S, RESUME_DELAY_MS


def resumer(tmp_path, **config):
    jobs, clock, _ = registry(tmp_path)
    return LimitResumer(jobs, replies=None, config=Settings(**config), bus=Feed(), clock=clock), jobs, clock


def parked(jobs, clock, in_ms, text="continue", **record):
    return running_job(jobs, launch={"limitResume": text, "profile": "claude"}, state="blocked",
                       status="waiting", waitingFor="limit", resetsAt=clock.now_ms() + in_ms, **record)


def rounds(resume_at, clock, steps):
    """Each step: ms to let pass, then one round; [(ids resumed in it, its sleep)]."""
    seen = []
    for step in steps:
        clock.advance(step)
        started = []
        sleep = resume_at.round(lambda job: started.append(job.id))
        seen.append((started, sleep))
    return seen


def test_a_parked_job_is_resumed_once_a_delay_after_its_reset(tmp_path):
    resume_at, jobs, clock = resumer(tmp_path)
    job = parked(jobs, clock, in_ms=60_000)
    seen = rounds(resume_at, clock, [0, 60_000 + RESUME_DELAY_MS - 1, 1, 1_000])
    assert seen[0] == ([], (60_000 + RESUME_DELAY_MS) / 1000)        # sleeps until it is due
    assert seen[1] == ([], 0.001)
    assert seen[2][0] == [job.id]                                    # due: resumed
    assert seen[3][0] == []                                          # under way: not twice
    # Once resumed for this reset (on record before anything is typed), never again.
    resume_at._resuming.clear()
    jobs.change(job, limitResumedFor=job.record["resetsAt"])
    assert rounds(resume_at, clock, [600_000]) == [([], MAX_SLEEP_S)]


def test_the_earliest_of_several_resets_sets_the_sleep_and_far_ones_wait_at_most_max(tmp_path):
    resume_at, jobs, clock = resumer(tmp_path, limitResumeDelayMs=0)
    parked(jobs, clock, in_ms=3_600_000, name="late")
    soon = parked(jobs, clock, in_ms=10_000, name="soon")
    assert rounds(resume_at, clock, [0]) == [([], 10.0)]
    assert rounds(resume_at, clock, [10_000])[0][0] == [soon.id]
    resume_at._resuming.clear()
    jobs.change(soon, limitResumedFor=soon.record["resetsAt"])
    assert rounds(resume_at, clock, [0]) == [([], MAX_SLEEP_S)]


def test_no_resume_when_off_in_roost_json_for_the_job_or_in_its_profile(tmp_path):
    resume_at, jobs, clock = resumer(tmp_path, limitResume=False)
    job = parked(jobs, clock, in_ms=1_000)
    assert rounds(resume_at, clock, [3_600_000]) == [([], MAX_SLEEP_S)]
    assert resume_at.plan(job) == "roost does not resume it at the reset: limit resumes are off in roost.json."

    resume_at, jobs, clock = resumer(tmp_path / "b")
    off = parked(jobs, clock, in_ms=1_000, limitResume=False)
    none = parked(jobs, clock, in_ms=1_000, text=None)
    assert rounds(resume_at, clock, [3_600_000]) == [([], MAX_SLEEP_S)]
    assert "off for this job" in resume_at.plan(off) and "names no limitResume" in resume_at.plan(none)


def test_a_job_that_works_again_is_no_longer_parked(tmp_path):
    resume_at, jobs, clock = resumer(tmp_path)
    job = parked(jobs, clock, in_ms=5_000)
    jobs.change(job, state="working", status=None, waitingFor=None, resetsAt=None)
    assert rounds(resume_at, clock, [3_600_000]) == [([], MAX_SLEEP_S)]
    assert resume_at.plan(job) is None


def test_a_limit_read_again_keeps_its_reset_until_that_reset_has_passed(tmp_path):
    jobs, clock, _ = registry(tmp_path)
    job = running_job(jobs, launch={"env": {"TZ": "UTC"}})
    reading = {"waitingFor": "limit", "why": {"reset": "in 2 hours"}}
    first = limits.reading_fields(job, reading, now=clock.now_ms())
    jobs.change(job, **first)
    clock.advance(30 * 60_000)
    again = limits.reading_fields(job, reading, now=clock.now_ms())
    assert again["resetsAt"] == first["resetsAt"] and again["limitSeen"] == first["limitSeen"]
    clock.advance(2 * 3_600_000)       # that reset passed: the same text is a new limit
    later = limits.reading_fields(job, reading, now=clock.now_ms())
    assert later["resetsAt"] == clock.now_ms() + 2 * 3_600_000
