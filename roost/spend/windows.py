"""The plan windows the agents themselves write (issue 29 item 4): how much of each
provider's 5-hour and 7-day windows is used, and when each resets.

- Codex: each `token_count` event's `rate_limits`: `primary` and `secondary`, each
  {used_percent, window_minutes, resets_at (Unix s)}. The windows are told apart by
  their length (300 minutes: "5h", 10080: "7d"), never by their position.
- Claude Code: its status line's input, `rate_limits.five_hour` / `.seven_day` with
  `used_percentage` and `resets_at`, recorded by roost's status-line command (`roost
  statusline`, the built-in profile's) in the job's directory; Claude Code fills them
  only when signed in with its claude.ai login.
- A rejection in a transcript (a 429 `rate_limit` entry): the window it hit is full.

The newest reading of a provider's window wins; they are kept in
`$ROOST_HOME/windows.json`, so admission (roost.spend.admission) knows them after a
restart. A reading says how old it is (`at`).
"""

import logging
import os

from roost import store
from roost.spend import tokens

log = logging.getLogger(__name__)

FILE = "windows.json"
NAMES = {300: "5h", 10080: "7d"}
SAVE_AFTER_S = 2.0


def window_name(minutes):
    return NAMES.get(minutes) or (f"{minutes // 1440}d" if minutes % 1440 == 0 else
                                  f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m")


def _ms(value):
    """A reset time as ms since the epoch: Unix seconds, ms, or an ISO 8601 text."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value > 0:
        return int(value * 1000) if value < 10_000_000_000 else int(value)
    if isinstance(value, str):
        when = tokens.iso_time(value)
        return None if when is None else int(when.timestamp() * 1000)
    return None


def _percent(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return max(0.0, min(100.0, float(value)))


def from_codex(reading, now):
    """[(window, {usedPercent, minutes, resetsAt, at})] of a Codex rate_limits reading;
    `now` (ms) is its `at` when it carries no time of its own."""
    limits, found = reading.get("limits") or {}, []
    for slot in ("primary", "secondary"):
        window = limits.get(slot)
        if not isinstance(window, dict) or not isinstance(window.get("window_minutes"), int):
            continue
        used = _percent(window.get("used_percent"))
        if used is None:
            continue
        found.append((window_name(window["window_minutes"]),
                      {"usedPercent": used, "minutes": window["window_minutes"],
                       "resetsAt": _ms(window.get("resets_at")), "at": _ms(reading.get("at")) or now}))
    return found


def from_claude_status(status, at):
    """[(window, {...})] of Claude Code's status-line input."""
    limits = status.get("rate_limits") if isinstance(status, dict) else None
    found = []
    if isinstance(limits, dict):
        for key, name, minutes in (("five_hour", "5h", 300), ("seven_day", "7d", 10080)):
            window = limits.get(key)
            used = _percent(window.get("used_percentage")) if isinstance(window, dict) else None
            if used is not None:
                found.append((name, {"usedPercent": used, "minutes": minutes,
                                     "resetsAt": _ms(window.get("resets_at")), "at": at}))
    return found


class Windows:
    def __init__(self, home, clock):
        self.path = os.path.join(home, FILE)
        self.clock = clock             # roost.clock: a reading's age, whether a reset has passed
        self.providers = {}            # provider -> window -> reading
        self._save = None
        self.on_change = []            # fn(provider): a window read anew (admission looks again)

    def load(self):
        value = store.read_json(self.path)
        if isinstance(value, dict) and isinstance(value.get("providers"), dict):
            self.providers = {provider: {name: reading for name, reading in windows.items() if isinstance(reading, dict)}
                              for provider, windows in value["providers"].items() if isinstance(windows, dict)}

    def read(self, provider, found, source, job_id=None):
        """Readings of `provider`'s windows: each kept when it is newer than the one held."""
        changed = False
        for name, reading in found:
            held = self.providers.setdefault(provider, {}).get(name)
            if held is not None and held.get("at", 0) > reading["at"]:
                continue
            reading = dict(reading, source=source, job=job_id)
            if held != reading:
                self.providers[provider][name] = reading
                changed = True
        if changed:
            self._save_soon()
            for hook in list(self.on_change):
                try:
                    hook(provider)
                except Exception:
                    log.exception("a windows hook failed")
        return changed

    def heard(self, provider, kind, readings, job_id=None):
        """What a job's records said of its plan's windows (roost.spend.tracker)."""
        for reading in readings:
            if kind == "codex":
                self.read(provider, from_codex(reading, self.clock.now_ms()), "codex", job_id)
            elif kind == "claude-status":
                self.read(provider, from_claude_status(reading, reading.get("at") if isinstance(reading.get("at"), int)
                                                       else self.clock.now_ms()), "claude-code status line", job_id)
            elif kind == "claude-code" and reading.get("text") is not None:
                self.rejected(provider, reading.get("at"), reading.get("text"), "claude-code transcript", job_id)

    def rejected(self, provider, at, text, source, job_id=None):
        """A rejection at a usage limit: the window it names (or the shortest one known)
        is full from then on until its reset."""
        held = self.providers.get(provider) or {}
        name = "7d" if "week" in (text or "").lower() and "7d" in held else min(
            held, key=lambda key: held[key].get("minutes") or 0, default="5h")
        reading = dict(held.get(name) or {"minutes": 300, "resetsAt": None}, usedPercent=100.0,
                       at=_ms(at) or self.clock.now_ms(),
                       rejected=True)
        reading.pop("source", None)
        reading.pop("job", None)
        return self.read(provider, [(name, reading)], source, job_id)

    def listing(self, now=None):
        """[{provider, window, minutes, usedPercent, resetsAt, at, ageMs, source}]: a
        window whose reset has passed is shown as read, with `stale: true`."""
        now = self.clock.now_ms() if now is None else now
        shown = []
        for provider in sorted(self.providers):
            for name, reading in sorted(self.providers[provider].items(), key=lambda item: item[1].get("minutes") or 0):
                entry = dict(reading, provider=provider, window=name, ageMs=max(0, now - (reading.get("at") or now)))
                entry["stale"] = bool(reading.get("resetsAt") and reading["resetsAt"] <= now)
                shown.append(entry)
        return shown

    def full(self, provider, at_or_above, now=None):
        """(window, resetsAt) of `provider`'s window used at or above `at_or_above`
        percent whose reset is still to come (the latest such reset), or None."""
        now = self.clock.now_ms() if now is None else now
        found = None
        for name, reading in (self.providers.get(provider) or {}).items():
            reset = reading.get("resetsAt")
            if reading.get("usedPercent", 0) >= at_or_above and reset and reset > now:
                if found is None or reset > found[1]:
                    found = (name, reset)
        return found

    def _save_soon(self):
        if self._save is None:
            self._save = self.clock.call_later(SAVE_AFTER_S, self._write)

    def _write(self):
        self._save = None
        try:
            store.write_json(self.path, {"version": 1, "providers": self.providers})
        except OSError:
            log.exception("the plan windows could not be written")

    def flush(self):
        if self._save is not None:
            self._save.kill(block=False)
            self._write()
