"""`notify {action: "test"}` (roost's own, issue 18) -> {sinks: [{sink, ok, error?}]}:
one notification to each sink roost.json names (roost.notify), answered once each has
sent it or failed."""

from roost.errors import bad_request
from roost.ops import op


@op("notify")
def notify(call):
    if call.args.get("action") != "test":
        raise bad_request('action must be "test"')
    results = call.services.notifier.test()
    return {"sinks": [dict({"sink": name, "ok": ok}, **({"error": why} if why else {}))
                      for name, ok, why in results]}
