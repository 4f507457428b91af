"""The built-in concierge (M44): the one roost starts when roost.json names no agent for
it. It needs no model: it is a protocol agent (roost_agent.py) that is woken by digests
and answers from the user's own rules.

On each digest it reads the sessions (`list`) and the policy in force
(`concierge-policy`, with roost.json's `concierge.rules` and `concierge.needAfterMs`), and
for each wait it has not handled yet:
- a question or dialog whose text (the question and its choices) a rule's `match`
  (a regular expression) finds: the rule's `answer` is given (`concierge-reply`) where the
  policy allows it, else suggested (`concierge-suggest`: one key sends it in the hub);
- a session that has waited longer than needAfterMs (default 2 minutes): said as a
  `need`, once (a timer of its own looks again when that time comes);
- a session that finished or failed: said as `info`, once;
- a standing order in the digest's "Due now" section: said as `info`, marked applied.
A question from the person (`roost concierge ask`) is answered with the fleet in a line.

Run as `roost concierge builtin` inside the concierge's job.
"""

import re
import sys
import threading
import time

from roost.clock import now_ms

DEFAULT_NEED_AFTER_MS = 120_000
ANSWERABLE = ("question", "dialog")
DUE_ORDER = re.compile(r"^- #(\d+)\b(.*)$")


def _rules(given):
    """The rules that compile: [(pattern, answer, why)]; a bad one is left out."""
    rules = []
    for rule in given if isinstance(given, list) else []:
        if not isinstance(rule, dict) or not isinstance(rule.get("match"), str) or \
                not isinstance(rule.get("answer"), str) or not rule["answer"]:
            continue
        try:
            rules.append((re.compile(rule["match"]), rule["answer"], rule.get("why") or f"rule: {rule['match']}"))
        except re.error:
            continue
    return rules


class BuiltinConcierge:
    def __init__(self, client):
        """`client`: the roost_agent module."""
        self.agent = client.RoostAgent.from_env("roost concierge", version="1", on_reply=self.on_question,
                                                on_message=self.on_digest)
        self.error_type = client.RoostError
        self.handled = set()        # waits (id:stateSince) answered, suggested or said
        self.finished = set()       # ends (id:endedAt) said
        self.started_at = now_ms()
        self.lock = threading.Lock()
        self.timer = None
        self.digests_seen = set()   # the seqs of the digests taken

    def run(self):
        if self.agent is None:
            sys.stderr.write("roost concierge builtin runs inside the concierge's job\n")
            return 2
        self.agent.report("blocked", summary="watching the sessions", status="idle", waiting_for="first-prompt")
        while self.agent.refused is None:       # until roost stops it (SIGTERM) or refuses it
            time.sleep(1.0)
        return 4

    # -- what wakes it ------------------------------------------------------------------

    def on_digest(self, message):
        if message.kind != "digest":
            return
        with self.lock:
            # An item sent again (a new connection resends what was not acked yet) is one digest.
            if message.seq in self.digests_seen:
                return
            self.digests_seen.add(message.seq)
        self.review()
        if (message.data.get("why") or "") == "order" or 'why="order"' in message.text:
            self._due_orders(message.text)

    def on_question(self, reply):
        rows = self._rows()
        waiting = [row["name"] for row in rows if row.get("status") == "waiting"]
        working = sum(1 for row in rows if row.get("state") == "working")
        ended = sum(1 for row in rows if row.get("state") in ("done", "failed", "stopped"))
        text = (f"{len(rows)} sessions: {working} working, {len(waiting)} waiting"
                + (f" ({', '.join(waiting[:10])})" if waiting else "") + f", {ended} ended. "
                "I am the built-in concierge: I answer from your rules in roost.json, and say what needs you.")
        self._say("answer", text)

    # -- the review -------------------------------------------------------------------

    def review(self):
        with self.lock:
            policy = self._call("concierge-policy", {}) or {}
            rows = self._rows()
            rules = _rules(policy.get("rules"))
            need_after = policy.get("needAfterMs")
            need_after = need_after if isinstance(need_after, int) and need_after >= 0 else DEFAULT_NEED_AFTER_MS
            now, later = now_ms(), None
            waits = set()
            for row in rows:
                if row.get("status") == "waiting":
                    key = f"{row['id']}:{row.get('stateSince')}"
                    waits.add(key)
                    if key not in self.handled:
                        due = self._wait(row, key, rules, policy, need_after, now)
                        later = due if later is None or (due is not None and due < later) else later
                self._finished(row)
            self.handled &= waits          # a wait that ended may come back as a new one
            self._arm(later)

    def _wait(self, row, key, rules, policy, need_after, now):
        """Handle one wait; the time to look at it again, or None."""
        if row.get("waitingFor") in ANSWERABLE:
            text = "\n".join([row.get("question") or ""] + list(row.get("choices") or []))
            rule = next((rule for rule in rules if rule[0].search(text)), None)
            if rule is not None:
                self._answer(row, rule, policy)
                self.handled.add(key)
                return None
        since = row.get("stateSince") or now
        if now - since < need_after:
            return since + need_after
        what = row.get("question") or row.get("summary") or ""
        self._say("need", f"{row['name']} ({row['id']}) waits for you ({row.get('waitingFor')}): {what}".strip())
        self.handled.add(key)
        return None

    def _answer(self, row, rule, policy):
        _, answer, why = rule
        if policy.get("answer") in ("routine", "always"):
            try:
                self.agent.request("concierge-reply", {"id": row["id"], "text": answer, "why": why})
                return
            except self.error_type:
                pass      # the policy said no to this one (not routine): suggest it instead
        self._call("concierge-suggest", {"id": row["id"], "text": answer, "why": why})

    def _finished(self, row):
        if row.get("state") not in ("done", "failed") or row.get("status") == "waiting":
            return
        ended = row.get("endedAt") or row.get("stateSince") or 0
        key = f"{row['id']}:{ended}"
        if ended < self.started_at or key in self.finished:
            return
        self.finished.add(key)
        said = row.get("error") if row["state"] == "failed" else row.get("summary")
        self._say("info", f"{row['name']} ({row['id']}) {'failed' if row['state'] == 'failed' else 'finished'}"
                          + (f": {said}" if said else ""))

    def _due_orders(self, text):
        section = text.split("Due now:\n", 1)[1] if "Due now:\n" in text else ""
        for line in section.splitlines():
            if not line.startswith("- "):
                break           # the section ends at the blank line before the next
            found = DUE_ORDER.match(line.strip())
            if found:
                self._say("info", f"due now: order #{found.group(1)}{found.group(2)}")
                self._call("concierge-order", {"action": "applied", "id": int(found.group(1)),
                                               "text": "said to the user"})

    def _arm(self, at_ms):
        """One timer, for the earliest wait that becomes a need."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.digests_seen = set()   # the seqs of the digests taken
        if at_ms is not None:
            self.timer = threading.Timer(max(0.0, (at_ms - now_ms()) / 1000.0) + 0.05, self.review)
            self.timer.daemon = True
            self.timer.start()

    # -- the wire -----------------------------------------------------------------------

    def _rows(self):
        return (self._call("list", {}) or {}).get("jobs") or []

    def _say(self, kind, text):
        self._call("concierge-say", {"kind": kind, "text": text})

    def _call(self, op, args):
        try:
            return self.agent.request(op, args, timeout=30)
        except (self.error_type, TimeoutError) as error:
            sys.stderr.write(f"roost concierge: {op}: {error}\n")
            return None


def main():
    from roost.bundle import files

    sys.path.insert(0, files.bundle_dir())     # roost_agent.py, shipped with roost
    import roost_agent

    return BuiltinConcierge(roost_agent).run()
