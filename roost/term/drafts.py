"""The attached people's drafts: text typed into a job's terminal and not yet submitted
(issue 19 item 4). While anyone has one, roost types nothing into that terminal:
automated text would merge with the half-typed line.

roost sees every key an attacher sends, so no guess from the screen is needed. The
rule is simple and errs on the side of holding: any input since the last submit key
(Enter, CR, LF) makes a draft; a submit key, Ctrl-U (kill the line) or Ctrl-C (cancel)
ends it, and so does leaving (detach). Backspace does not: a line emptied by hand still
holds until it is submitted, cleared or left. The terminal's own answers to the job's
queries (cursor reports, colours) are not keys and make no draft.
"""

from roost.term.attachers import without_reports

# Keys after which the input line is empty: submit (CR, LF), Ctrl-U, Ctrl-C.
_CLEARING = b"\r\n\x15\x03"

HELD_TEXT = "the user is typing"


def leaves_draft(data, had_draft):
    """Whether the input line holds a draft after the attacher's keys `data`."""
    keys = without_reports(data)
    if not keys:
        return had_draft
    last_clear = max(keys.rfind(bytes([byte])) for byte in _CLEARING)
    if last_clear < 0:
        return True
    return last_clear < len(keys) - 1


class Drafts:
    """Who among a terminal's attachers has a draft now."""

    __slots__ = ("_owners",)

    def __init__(self):
        self._owners = set()

    def __bool__(self):
        return bool(self._owners)

    def typed(self, sink, data):
        """`sink` sent `data`; whether the drafts' presence changed."""
        before = bool(self._owners)
        if leaves_draft(data, sink in self._owners):
            self._owners.add(sink)
        else:
            self._owners.discard(sink)
        return before != bool(self._owners)

    def left(self, sink):
        """`sink` detached; whether the drafts' presence changed."""
        if sink not in self._owners:
            return False
        self._owners.discard(sink)
        return not self._owners

    def clear(self):
        changed = bool(self._owners)
        self._owners.clear()
        return changed
