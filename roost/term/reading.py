"""How a job's screen is read: a profile's `term` (the spec's DispatchArgs.term).

`submit`: the keys that submit typed text; `settleMs`: the quiet time before the screen
is judged; `waiting` / `working` / `dialog`: regexes over the rendered screen (its lines
joined, `^` and `$` at each line); `limit`: a regex matching a screen where the agent
stopped at its plan's usage limit or a provider's rate limit, its `reset` group (when it
took part) the text that says when it resets (roost.term.resets); `question`: a regex
whose last match on the screen is a dialog's question (its `question` group, else all it
matched), for a dialog whose question is not where its `dialog` pattern matches;
`choices`: a regex whose matches after the question (or after the dialog's match) are
its options (each its `choice` group, else its `label` group, else all it matched; a
`key` group may say what picks it); `typeTask`: kept for whoever types the first task. A
reading is what the screen says about the job, in the JobRow's words: {state, status,
waitingFor, summary}, and for a dialog its `question` and `choices`; and `why`, the rule
that decided it (issue 19: `roost explain`, the timeline): {rule, pattern, line} where
rule is the pattern that matched (`working`, `dialog`, `limit`, `waiting`), `none` (none
did), `quiet` (none did, and a profile with no `waiting` pattern cannot say more from its
screen), `kernel` (the kernel's word decided: roost.term.kernel_reading), `held` (the
screen read waiting while the kernel said nothing can be reading the terminal),
`changed` (output came since the screen was judged) or `typed` (roost submitted text:
at work until judged again). A `why` may carry `kernel`, the evidence it was read with.

roost types the task and queued replies only into a screen that reads as waiting for
text (`ready_for_text`): never into a dialog (typing there can approve what the user
never approved), never into a screen that matches none of its profile's patterns. A
profile that names no `waiting` pattern is read from the kernel's word when its screen
settles (issue 27: a quiet screen is not a question). A limit screen is not waiting for
text either: what is queued waits until the agent works again (roost.jobs.limit_resume
types the profile's `limitResume` text at the reset).
"""

import logging
import re

import roost.clock
from roost.term import kernel_reading, patterns, resets

log = logging.getLogger(__name__)

DEFAULT_SUBMIT = "\r"
DEFAULT_SETTLE_MS = 700
MAX_SUMMARY = 500
MAX_QUESTION = 2000
MAX_CHOICES = 20
MAX_CHOICE = 200
# What a dialog's options look like when its profile does not say: numbered lines,
# maybe behind a selection mark ("❯ 1. Yes, proceed", "  2) No").
DEFAULT_CHOICES = r"^[^\w\n]{0,4}(?P<choice>\d{1,2}[.)] [^\n]{1,200}?)\s*$"


def working_reading(summary=None, why=None):
    return {"state": "working", "status": "busy", "waitingFor": None, "summary": summary,
            "why": why or {"rule": "changed"}}


def _why(rule, found=None, pattern=None, text="", typed=None):
    """The rule that decided a reading, with the screen line its pattern matched."""
    why = {"rule": rule}
    if pattern is not None:
        why["pattern"] = pattern.pattern
    if found is not None:
        start = text.rfind("\n", 0, found.start()) + 1
        end = text.find("\n", found.start())
        why["line"] = text[start:end if end >= 0 else len(text)].strip()[:MAX_SUMMARY]
    if typed is not None:
        why["typed"] = typed
    return why


def _pattern(value, name, linear=False):
    """`linear`: a pattern that came over the wire, run on RE2 (roost.term.patterns)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return patterns.linear(value) if linear else patterns.trusted(value)
    except patterns.PatternError as error:
        # A profile's bad regex must not stop the job: it is read as if absent.
        log.warning("term.%s %r is not a valid regex (%s); ignored", name, value, error)
        return None


class TermProfile:
    def __init__(self, term=None):
        term = term if isinstance(term, dict) else {}
        submit = term.get("submit")
        self.submit = submit if isinstance(submit, str) else DEFAULT_SUBMIT
        settle = term.get("settleMs")
        if isinstance(settle, bool) or not isinstance(settle, (int, float)) or settle < 0:
            settle = DEFAULT_SETTLE_MS
        self.settle = min(settle, 600_000) / 1000.0
        linear = term.get("linear") is True
        self.waiting = _pattern(term.get("waiting"), "waiting", linear)
        self.working = _pattern(term.get("working"), "working", linear)
        self.dialog = _pattern(term.get("dialog"), "dialog", linear)
        self.limit = _pattern(term.get("limit"), "limit", linear)
        self.question = _pattern(term.get("question"), "question", linear)
        self.choices = _pattern(term.get("choices"), "choices", linear) or re.compile(DEFAULT_CHOICES, re.MULTILINE)
        type_task = term.get("typeTask")
        self.type_task = type_task if isinstance(type_task, str) else None

    def judge(self, lines, typed, seen_ms=None, tz_name=None):
        """The reading of a screen that has been quiet for `settle` seconds.

        `working` matching wins (a spinner that stopped still means work); then
        `dialog` (it waits for the user to choose, not for text); then `limit` (an agent
        at its usage limit may still show the prompt `waiting` matches): its reset text
        is read as of `seen_ms` (default now) in zone `tz_name`; then `waiting`: the
        program waits for text, for its first prompt while nothing has been typed, for
        an answer after. A profile that names what waiting looks like and sees none of
        it says so (status None, rule `none`); one that does not cannot say (status
        None, rule `quiet`): its reader asks the kernel (ScreenReading.judge).
        """
        text = "\n".join(lines)
        summary = last_line(lines)
        found = self.working.search(text) if self.working is not None else None
        if found is not None:
            return working_reading(summary, _why("working", found, self.working, text, typed))
        if self.dialog is not None:
            found = self.dialog.search(text)
            if found is not None:
                reading = self._dialog_reading(text, found, summary)
                reading["why"] = _why("dialog", found, self.dialog, text, typed)
                return reading
        if self.limit is not None:
            found = self.limit.search(text)
            if found is not None:
                return limit_reading(found, summary, _why("limit", found, self.limit, text, typed),
                                     seen_ms, tz_name)
        found = self.waiting.search(text) if self.waiting is not None else None
        if found is not None:
            return {"state": "blocked", "status": "waiting", "waitingFor": "question" if typed else "first-prompt",
                    "summary": summary, "why": _why("waiting", found, self.waiting, text, typed)}
        return {"state": "blocked", "status": None, "waitingFor": None, "summary": summary,
                "why": _why("none" if self.waiting is not None else "quiet", typed=typed)}

    def _dialog_reading(self, text, found, summary):
        """The dialog's question (the last match of `question`, else the `dialog`
        pattern's `question` group, else what it matched) and the options shown after
        the question (or after where the dialog matched)."""
        asked = None
        if self.question is not None:
            for asked in self.question.finditer(text):
                pass
        if asked is not None:
            question = _group(asked, "question")
            options_from = asked.end()
        else:
            question = _group(found, "question")
            options_from = found.start()
        choices = []
        for option in self.choices.finditer(text, options_from):
            choice = " ".join((_group(option, "choice", "label")).split())
            if choice and choice not in choices:
                choices.append(choice[:MAX_CHOICE])
            if len(choices) >= MAX_CHOICES:
                break
        return {"state": "blocked", "status": "waiting", "waitingFor": "dialog", "summary": summary,
                "question": " ".join(question.split())[:MAX_QUESTION], "choices": choices}


def limit_reading(found, summary, why, seen_ms=None, tz_name=None):
    """The reading of a limit screen: `resetsAt` from its `reset` group, else null."""
    reset = (found.groupdict().get("reset") or "").strip() or None
    if reset is not None:
        why["reset"] = reset[:MAX_SUMMARY]
    seen_ms = seen_ms if seen_ms is not None else roost.clock.now_ms()
    return {"state": "blocked", "status": "waiting", "waitingFor": "limit",
            "resetsAt": resets.reset_at(reset, seen_ms, tz_name) if reset else None,
            "summary": why.get("line") or summary, "why": why}


def _group(match, *names):
    """The first of the named groups that took part in `match`, else all it matched."""
    groups = match.groupdict()
    for name in names:
        if groups.get(name):
            return groups[name]
    return match.group(0)


SUMMARY_EVERY = 1.0           # a working screen's row text: at most this often
CHECK_EVERY = 0.2             # a profile's working pattern, looked for between judgements
PROBE_WHILE_CHANGING = 1.0    # the kernel asked again while a screen it read keeps changing


class ScreenReading:
    """What one job's screen says, kept up to date by its Terminal: judged once what it
    shows has been still for the profile's settle time; meanwhile read as working as soon
    as it changes, for a profile that does not say what working looks like, and for one
    that does once its pattern shows (looked for at most every CHECK_EVERY), so an agent
    that redraws itself while it waits still waits. Each method gives the new reading, or
    None when it stays.

    A profile with no `waiting` pattern is read from the kernel's word (`probe()`, the
    evidence of roost.unix.terminal_waits): when its screen is judged, while its screen
    changes under a reading that is not working (at most every PROBE_WHILE_CHANGING), and
    again while it is quiet (kernel_reading.Rechecks); output alone changes nothing of
    what it says, so a loop that prints and sleeps stays working. A profile with patterns
    asks the kernel when its screen reads waiting, and a screen the kernel contradicts is
    held (kernel_reading.held), looked at again the same way until the two agree.
    Time is read from `clock` (its `monotonic()`: roost.clock's, or a test's ManualClock)."""

    __slots__ = ("profile", "current", "typed", "unjudged", "changed_at", "summary_at", "checked_at",
                 "judge_after", "probe", "takes_task", "rechecks", "probe_after", "clock")

    def __init__(self, profile, typed, probe=None, takes_task=False, clock=None):
        self.clock = clock if clock is not None else roost.clock
        self.profile = profile
        self.current = working_reading()
        self.typed = typed                # text was typed: a wait after it is for an answer
        self.unjudged = True              # what it shows changed since it was last judged
        self.changed_at = self.clock.monotonic()
        self.summary_at = 0.0
        self.checked_at = 0.0
        self.judge_after = 0.0            # not judged before this moment (see Terminal.start)
        self.probe = probe                # fn() -> the kernel's evidence, or None
        self.takes_task = takes_task      # an agent that takes a first task: it may wait for it
        self.rechecks = kernel_reading.Rechecks()
        self.probe_after = None           # the screen changes under a kernel reading: ask again then

    @property
    def plain(self):
        """Its profile names no waiting pattern: the kernel says whether it waits."""
        return self.profile.waiting is None

    def judge_later(self, seconds):
        """Its first judgement waits `seconds` (jobs.adoption: a screen taken over)."""
        self.judge_after = self.clock.monotonic() + seconds

    def settle_left(self):
        """Seconds until it may be judged; 0 when due; None when judged already."""
        if not self.unjudged:
            return None
        now = self.clock.monotonic()
        return max(0.0, self.profile.settle - (now - self.changed_at), self.judge_after - now)

    def recheck_left(self):
        """Seconds until a quiet screen's processes are looked at again; None: not asked."""
        return self.rechecks.left(self.clock.monotonic())

    def probe_due(self):
        """The screen changed under a reading the kernel gave, a while ago: ask again."""
        return self.probe_after is not None and self.clock.monotonic() >= self.probe_after

    def changed(self, lines_of):
        """The screen shows other text now (`lines_of()` gives its lines)."""
        now = self.clock.monotonic()
        self.unjudged = True
        self.changed_at = now
        if self.plain and self.probe_after is None:
            # Output is no evidence of what it waits on: the kernel is asked again, less
            # often while it keeps saying the same (a clock that reads its terminal).
            self.probe_after = now + max(PROBE_WHILE_CHANGING, self.rechecks.every or 0)
        reading = self.current
        if reading["state"] == "working" and reading["status"] == "busy":
            if now - self.summary_at < SUMMARY_EVERY:
                return None
            self.summary_at = now
            return working_reading(last_line(lines_of()), reading.get("why"))
        working = self.profile.working
        if working is not None and now - self.checked_at < CHECK_EVERY:
            return None
        self.checked_at = now
        lines = lines_of()
        text = "\n".join(lines)
        found = working.search(text) if working is not None else None
        if found is None and (working is not None or self.plain):
            return None
        self.summary_at = now
        self.rechecks.stop()
        return working_reading(last_line(lines), _why("working", found, working, text) if found else None)

    def keys_given(self):
        """A person typed into it: what its processes wait on may change. True when a
        look is now due sooner than its reader was told (Terminal: PtyReader.look_soon)."""
        now = self.clock.monotonic()
        if self.probe_after is not None:
            self.probe_after = min(self.probe_after, now + PROBE_WHILE_CHANGING)
        return self.rechecks.soon(now)

    def text_given(self, lines):
        """Text was typed and submitted: at work until the screen is judged again."""
        self.typed = True
        self.unjudged = True
        self.changed_at = self.clock.monotonic()
        self.rechecks.stop()
        return working_reading(last_line(lines), {"rule": "typed"})

    def judge(self, lines, cursor_row=None):
        """The reading of a screen that has been quiet for the settle time."""
        self.unjudged = False
        self.probe_after = None
        screen = self.profile.judge(lines, self.typed)
        if screen["why"]["rule"] == "quiet":
            return self._from_kernel(lines, cursor_row, screen["summary"])
        if screen["status"] != "waiting" or self.probe is None:
            self.rechecks.stop()
            return screen
        evidence = self.probe()
        if kernel_reading.cannot_be_waiting(evidence):
            self.rechecks.seen("held", self.clock.monotonic())
            if self.current["why"].get("rule") == "held" and self.current["why"]["screen"] == screen["why"]:
                return None       # held already, for the same screen
            return kernel_reading.held(self.current, screen, evidence)
        self.rechecks.stop()
        if evidence is not None:
            screen["why"]["kernel"] = evidence
        return screen

    def recheck(self, lines, cursor_row=None):
        """The screen is quiet (or changing under the kernel's reading) and its processes
        are due another look: the reading they give now, or None when it stays."""
        self.probe_after = None
        if self.current["why"].get("rule") == "held" or not self.plain:
            reading = self.judge(lines, cursor_row)
        else:
            reading = self._from_kernel(lines, cursor_row, last_line(lines))
        if reading is None or _same_word(reading, self.current):
            return None
        return reading

    def _from_kernel(self, lines, cursor_row, summary):
        evidence = self.probe() if self.probe is not None else None
        reading = kernel_reading.from_kernel(evidence, lines, cursor_row, summary, self.typed, self.takes_task)
        self.rechecks.seen((reading["state"], reading["status"]), self.clock.monotonic())
        return reading


def _same_word(reading, current):
    """A look again that says what the row says: nothing to tell (its evidence's pids
    and its line may differ; the state, what it waits for and the question do not)."""
    return all(reading.get(key) == current.get(key) for key in ("state", "status", "waitingFor", "question")) \
        and (reading.get("why") or {}).get("rule") == (current.get("why") or {}).get("rule")


_SHARED = {}    # jobs of one profile read their screens alike: one TermProfile for them


def shared_profile(term):
    """The TermProfile for a `term`, shared with every job that has the same one."""
    try:
        # The type too: True and 1 are equal keys, not equal settings.
        key = tuple(sorted((name, type(value).__name__, value) for name, value in term.items())) \
            if isinstance(term, dict) else ()
        profile = _SHARED.get(key)
    except TypeError:        # a value that cannot be a key: that job gets its own
        return TermProfile(term)
    if profile is None:
        if len(_SHARED) >= 256:
            _SHARED.clear()
        profile = _SHARED[key] = TermProfile(term)
    return profile


def ready_for_text(reading):
    """The screen says the program waits for text: roost may type a task or a queued
    reply into it."""
    return reading.get("status") == "waiting" and reading.get("waitingFor") in ("question", "first-prompt")


def shows_limit(reading):
    return reading.get("waitingFor") == "limit"


def shows_dialog(reading):
    return reading.get("waitingFor") == "dialog"


def last_line(lines):
    for line in reversed(lines):
        stripped = line.strip()
        if stripped:
            return stripped[:MAX_SUMMARY]
    return None
