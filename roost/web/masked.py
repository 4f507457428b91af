"""Everything a daemon says, masked before `roost web` keeps or sends it: each string in
a row, an event, a task or a screen line goes through roost's secret masking (the one
notifications use, roost.notify.masking). Ids stay as they are: they name, they say
nothing, and a page's request names a job by them."""

from roost.notify.masking import mask

UNMASKED = frozenset(("id", "jobId", "seq", "event", "kind"))


def masked(value, key=None):
    if isinstance(value, str):
        return value if key in UNMASKED else mask(value)
    if isinstance(value, dict):
        return {name: masked(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [masked(item) for item in value]
    return value
