"""What tokens cost: the dated table shipped with roost (prices.json, made by
scripts/update-prices from LiteLLM's public table of the providers' list prices), and
roost.json's `prices`, which adds models or overrides them:

    "prices": {"my-model": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}

USD per million tokens. `usd` is an estimate at list price (a plan's subscription, a
discount or a batch price is not seen). A model with no price makes a figure's `usd`
null, with the model named in `unpriced`: never a confident wrong number.

A model is looked up as the agent names it, then without a provider's prefix
("anthropic/claude-..."), then without a date suffix ("-20250929").
"""

import json
import logging
import re

from roost.bundle import files

log = logging.getLogger(__name__)

TABLE = "roost/spend/prices.json"
FIELDS = ("input", "output", "cacheRead", "cacheWrite")
_DATED = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")
_shipped = None


def shipped():
    """The table shipped with roost: {version, date, source, unit, models}."""
    global _shipped
    if _shipped is None:
        try:
            with open(files.bundled(TABLE), encoding="utf-8") as handle:
                _shipped = json.load(handle)
        except (OSError, ValueError) as error:
            log.error("the price table cannot be read (%s): every model is unpriced", error)
            _shipped = {"date": None, "source": None, "models": {}}
    return _shipped


def _checked(name, value):
    """A roost.json price, or None (logged) when it is not one."""
    if not isinstance(value, dict) or not all(
            isinstance(value.get(field), (int, float)) and not isinstance(value.get(field), bool)
            and value.get(field) >= 0 for field in ("input", "output")):
        log.warning("roost.json prices.%s needs input and output (USD per million tokens): ignored", name)
        return None
    price = {field: float(value[field]) for field in ("input", "output")}
    for field in ("cacheRead", "cacheWrite"):
        given = value.get(field)
        ok = isinstance(given, (int, float)) and not isinstance(given, bool) and given >= 0
        price[field] = float(given) if ok else price["input"]
    return price


class Prices:
    """The table in force: the shipped one with roost.json's on top."""

    def __init__(self, config=None):
        self.table = dict(shipped().get("models") or {})
        self.own = {}
        given = (config or {}).get("prices")
        if isinstance(given, dict):
            for name, value in given.items():
                price = _checked(name, value)
                if price is not None:
                    self.own[name] = price
        self.table.update(self.own)

    def of(self, model):
        """The price of `model` ({input, output, cacheRead, cacheWrite}), or None."""
        if not isinstance(model, str):
            return None
        for name in (model, model.rsplit("/", 1)[-1]):
            price = self.table.get(name) or self.table.get(_DATED.sub("", name))
            if price is not None:
                return price
        return None

    def usd(self, by_model):
        """(USD or None, the unpriced models) of {model: count}; a model that spent no
        token is never unpriced."""
        total, unpriced = 0.0, []
        for model, count in sorted(by_model.items()):
            if not any(count):
                continue
            price = self.of(model)
            if price is None:
                unpriced.append(model)
                continue
            total += cost(price, count)
        return (None if unpriced else round(total, 6)), unpriced

    def listing(self):
        """The table in force, for `roost usage --prices`."""
        table = shipped()
        return {"date": table.get("date"), "source": table.get("source"), "unit": "USD per million tokens",
                "models": {name: {field: price.get(field) for field in FIELDS} for name, price in
                           sorted(self.table.items())},
                "fromConfig": sorted(self.own)}


def cost(price, count):
    """USD of a count [input (cache included), output, cacheRead, cacheWrite]."""
    fresh = max(0, count[0] - count[2] - count[3])
    return (fresh * price["input"] + count[1] * price["output"] + count[2] * price.get("cacheRead", price["input"])
            + count[3] * price.get("cacheWrite", price["input"])) / 1_000_000
