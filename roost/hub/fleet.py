"""What the hub knows of the fleet, kept from the daemon's pushes (`subscribe`): the
rows, the feed's tail, the board's tasks and counts, the concierge's row. It decides
the groups a person thinks in and ranks what needs them; it draws nothing.

Needs you, ranked: a waiting row comes first by what answering it unblocks (the board's
tasks that wait on its task by `after`, a merge train its task holds, a dialog at
start-up), then by how long it has waited; each ranked row carries its reason.
"""

import collections
import time

from roost.rows import order_key, usd_text

FEED_KEEP = 200
GROUPS = ("needs", "working", "finished", "failed")
TITLES = {"needs": "NEEDS YOU", "working": "WORKING", "finished": "FINISHED", "failed": "FAILED"}
# What places a row: a push that changes none of these (a working row's line) keeps the
# layout, and the hub draws it without grouping and ranking 500 rows again.
LAYOUT_FIELDS = ("state", "status", "waitingFor", "pinned", "order", "orderKey", "stateSince", "startedAt", "role")
# A workspace stage that holds the merge train for a person (roost.board.board.NEEDS_YOU).
HELD_STAGES = ("review", "conflict", "failed")


def group_of(row):
    """NEEDS YOU holds the rows that wait for a person (status waiting, issue 27); a row
    roost cannot read (blocked, status null) is shown among the working ones, marked `?`."""
    state = row.get("state")
    if row.get("status") == "waiting":
        return "needs"
    if state in ("working", "blocked"):
        return "working"
    if state == "done":
        return "finished"
    return "failed"


class Fleet:
    def __init__(self):
        self.rows = {}                   # job id -> its latest JobRow
        self.feed = collections.deque(maxlen=FEED_KEEP)
        self.tasks = []
        self.board = None                # the board's counts once pushed
        self.concierge = None            # the concierge's row (role "concierge")
        self.filter = ""
        self.version = 0                 # bumped on each change: the screen redraws then
        self.layout = 0                  # bumped when the groups or their order may change
        self._counts = (None, None)      # (layout, counts)
        self.board_stale = False         # a board push came: the tasks are read again
        self.hosts = None                # several machines: each one's state, as text
        self.today = {}                  # machine (None: the one) -> its `usage` total today (issue 29)
        self.spend_stale = False         # a row's spend changed: today's total is read again
        self.windows = {}                # machine -> its providers' plan windows (`windows`)

    # -- what the daemon says ---------------------------------------------------------

    def load(self, rows, events=(), tasks=None):
        self.rows = {}
        self.concierge = None
        for row in rows:
            self._keep(row)
        self.feed.extend(events)
        if tasks is not None:
            self.tasks = tasks
        self.version += 1
        self.layout += 1

    def load_host(self, host, rows, events=(), tasks=None):
        """Several machines: one machine's rows anew (it came up, or back)."""
        self.drop_host(host)
        for row in rows:
            self._keep(row)
        self.feed.extend(events)
        if tasks is not None:
            self.tasks = tasks

    def drop_host(self, host):
        """A machine that went down: its rows go (it says nothing of them now)."""
        for job_id in [job_id for job_id, row in self.rows.items() if row.get("host") == host]:
            del self.rows[job_id]
        if self.concierge is not None and self.concierge.get("host") == host:
            self.concierge = None
        self.version += 1
        self.layout += 1

    def set_hosts(self, texts):
        if texts != self.hosts:
            self.hosts = texts
            self.version += 1
            self.layout += 1

    def hosts_line(self):
        return ("hosts: " + "   ".join(self.hosts)) if self.hosts else None

    def set_tasks(self, tasks):
        self.tasks = tasks
        self.version += 1
        self.layout += 1

    def _keep(self, row):
        old = self.rows.get(row["id"])
        if (old or {}).get("spend") != row.get("spend"):
            self.spend_stale = True
        if old is None or self.filter or any(old.get(field) != row.get(field) for field in LAYOUT_FIELDS):
            self.layout += 1
        if row.get("role") == "concierge":
            self.concierge = row
            self.rows.pop(row["id"], None)
        else:
            self.rows[row["id"]] = row

    def apply(self, message):
        """One push; True when it changed what is shown."""
        kind = message.get("event")
        if kind == "rows":
            for row in message.get("rows") or ():
                self._keep(row)
        elif kind == "removed":
            self.rows.pop(message.get("id"), None)
            self.layout += 1
            if self.concierge is not None and self.concierge["id"] == message.get("id"):
                self.concierge = None
        elif kind == "feed":
            self.feed.append(message.get("entry") or {})
        elif kind == "board":
            self.board = {key: value for key, value in message.items() if key != "event"}
            self.board_stale = True
        elif kind == "concierge":
            self.feed.append({"text": message.get("text") or "", "name": "concierge",
                              "at": message.get("at"), "seq": message.get("seq")})
        else:
            return False
        self.version += 1
        return True

    # -- what the person sees ---------------------------------------------------------

    def set_filter(self, text):
        if text != self.filter:
            self.filter = text
            self.version += 1
            self.layout += 1

    def matches(self, row):
        if not self.filter:
            return True
        needle = self.filter.lower()
        return any(needle in str(row.get(field) or "").lower()
                   for field in ("name", "id", "summary", "question", "cwd", "task", "agent", "profile"))

    def groups(self):
        """[(group, [(row, reason)])] in the order shown; empty groups left out."""
        grouped = {group: [] for group in GROUPS}
        for row in self.rows.values():
            if self.matches(row):
                grouped[group_of(row)].append(row)
        holds = self._holds()
        shown = []
        for group in GROUPS:
            rows = grouped[group]
            if not rows:
                continue
            if group == "needs":
                ranked = [(row, rank(row, holds)) for row in rows]
                ranked.sort(key=lambda item: (item[1][0], not item[0].get("pinned"), item[0].get("stateSince") or 0))
                shown.append((group, [(row, why) for row, (_, why) in ranked]))
            else:
                rows.sort(key=lambda row, group=group: order_key(row, group))
                shown.append((group, [(row, None) for row in rows]))
        return shown

    def _holds(self):
        """job id -> (tasks waiting on its tasks by `after`, its tasks whose merge waits for a person)."""
        waiting_on = collections.Counter()
        for task in self.tasks:
            if task.get("state") == "open":
                for other in task.get("after") or ():
                    waiting_on[other] += 1
        holds = {}
        for task in self.tasks:
            owner = (task.get("owner") or {}).get("id")
            if not owner or task.get("state") == "dropped":
                continue
            blocked, held = holds.setdefault(owner, ([], []))
            if task.get("state") == "claimed" and waiting_on[task["id"]]:
                blocked.append((task["id"], waiting_on[task["id"]]))
            stage = (task.get("workspace") or {}).get("stage")
            if stage in HELD_STAGES:
                held.append((task["id"], stage))
        return holds

    def board_counts(self):
        """The board's counts as last pushed, else as the tasks read at the start say
        (roost.board.board.counts' rule; a task waited on holds until done or dropped)."""
        if self.board is not None or not self.tasks:
            return self.board
        holding = {task["id"] for task in self.tasks if task.get("state") not in ("done", "dropped")}
        counts = {"open": 0, "claimed": 0, "blocked": 0, "done": 0, "workspaces": 0, "needsYou": 0}
        for task in self.tasks:
            stage = (task.get("workspace") or {}).get("stage")
            if stage and stage != "merged" and task.get("state") != "dropped":
                counts["workspaces"] += 1
                counts["needsYou"] += stage in HELD_STAGES
            elif task.get("state") == "open":
                counts["blocked" if any(other in holding for other in task.get("after") or ()) else "open"] += 1
            elif task.get("state") in ("claimed", "done"):
                counts[task["state"]] += 1
        return counts

    def board_line(self):
        counts = self.board_counts()
        if counts is None:
            return None
        parts = [f"{counts.get(key, 0)} {key}" for key in ("open", "claimed", "blocked", "done")]
        if counts.get("workspaces"):
            parts.append(f"{counts['workspaces']} in workspaces")
        if counts.get("needsYou"):
            parts.append(f"{counts['needsYou']} need you")
        return "board: " + ", ".join(parts)

    def set_today(self, host, total):
        if total is not None and self.today.get(host) != total:
            self.today[host] = total
            self.version += 1

    def set_windows(self, host, windows):
        if windows is not None and self.windows.get(host) != windows:
            self.windows[host] = windows
            self.version += 1

    def windows_text(self, now_ms):
        """`anthropic 5h 25% (14:00) 7d 50%`: each provider's windows, as last read on
        any machine shown; a reading past its reset is left out."""
        newest = {}
        for windows in self.windows.values():
            for entry in windows or ():
                key = (entry.get("provider"), entry.get("window"))
                if entry.get("stale") or (entry.get("resetsAt") and entry["resetsAt"] <= now_ms):
                    continue
                if key not in newest or entry.get("at", 0) > newest[key].get("at", 0):
                    newest[key] = entry
        parts, last = [], None
        for (provider, window), entry in sorted(newest.items(), key=lambda item: (item[0][0] or "",
                                                                                   item[1].get("minutes") or 0)):
            resets = time.strftime("%H:%M", time.localtime(entry["resetsAt"] / 1000)) if entry.get("resetsAt") else "?"
            parts.append((f"{provider} " if provider != last else "") + f"{window} {entry['usedPercent']:.0f}% ({resets})")
            last = provider
        return "  ".join(parts) or None

    def today_text(self):
        """What the fleet (every machine shown) spent today, or None: a usd is None when
        any machine's is (a model without a price), its tokens are then shown."""
        if not self.today:
            return None
        usd, tokens, unpriced = 0.0, 0, set()
        for total in self.today.values():
            tokens += (total.get("tokens") or {}).get("input", 0) + (total.get("tokens") or {}).get("output", 0)
            unpriced |= set(total.get("unpriced") or ())
            usd = None if usd is None or total.get("usd") is None else usd + total["usd"]
        if not tokens:
            return None
        if usd is not None:
            return f"today {usd_text(usd)}"
        return f"today {tokens:,} tokens (no price: {', '.join(sorted(unpriced))})"

    def concierge_line(self):
        row = self.concierge
        if row is None:
            return None
        return f"concierge ({row.get('state')}): {row.get('summary') or row.get('question') or ''}".rstrip()

    def counts(self):
        layout, counts = self._counts
        if layout != self.layout:
            counter = collections.Counter(group_of(row) for row in self.rows.values())
            counts = {group: counter.get(group, 0) for group in GROUPS}
            self._counts = (self.layout, counts)
        return counts


def rank(row, holds):
    """(sort key, reason or None) of a waiting row: what answering it unblocks first."""
    blocked, held = holds.get(row["id"], ((), ()))
    waiting_tasks = sum(count for _, count in blocked)
    startup = row.get("waitingFor") == "dialog"
    reasons = []
    if blocked:
        ids = ", ".join(f"#{task_id}" for task_id, _ in blocked)
        reasons.append(f"{waiting_tasks} task{'s' if waiting_tasks != 1 else ''} wait on {ids}")
    if held:
        reasons.append("merge held: " + ", ".join(f"#{task_id} {stage}" for task_id, stage in held))
    if startup:
        reasons.append("a dialog at start-up")
    # A session parked at its usage limit needs nothing of the person now: the others first.
    key = (row.get("waitingFor") == "limit", -waiting_tasks, -len(held), not startup)
    return key, ("; ".join(reasons) or None)


