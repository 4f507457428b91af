"""Whether a screen's text changed: a fingerprint of each row's text, compared for the
rows pyte says it touched. What a person would call a change (new text), not what the
bytes did (a repaint of the same text, a new window title, a cursor that moved)."""

import array


def row_text(line, cols):
    if not line:
        return ""
    return "".join([line[x].data for x in range(min(max(line) + 1, cols))]).rstrip()


class RowFingerprints:
    __slots__ = ("screen", "_hashes")

    def __init__(self, screen, lines):
        self.screen = screen          # the pyte screen they were taken of
        self._hashes = array.array("q", (hash(text) for text in lines))

    def changed(self, touched, cols):
        """Whether a touched row (first, last) shows other text now; the new text is
        remembered."""
        if touched is None:
            return False
        hashes, buffer = self._hashes, self.screen.buffer
        changed = False
        for y in range(max(touched[0], 0), min(touched[1], len(hashes) - 1) + 1):
            fingerprint = hash(row_text(buffer.get(y), cols))
            if hashes[y] != fingerprint:
                hashes[y] = fingerprint
                changed = True
        return changed
