"""The types that hold others: ListOf, MapOf, Shape, and Anything (taken whole)."""

from roost.contract.field import LEFT_OUT, REQUIRED, Field
from roost.contract.scalars import Choice, Integer
from roost.errors import RoostError, bad_request


class ListOf(Field):
    """A list of `item`s. `what`: how a refusal names the list ("a list of task ids");
    `max_items` with `too_many` (its refusal, formatted with `max` and `given`), or
    `cut`: the items past `max_items` are left out; `drop_others`: items not of the type
    are left out rather than refused."""

    plural = "lists"

    def __init__(self, item, doc=None, what=None, max_items=None, too_many=None, cut=False, drop_others=False,
                 **kwargs):
        super().__init__(doc, **kwargs)
        self.item = item
        self.what = what or f"a list of {item.plural}"
        self.max_items = max_items
        self.too_many = too_many
        self.cut = cut
        self.drop_others = drop_others

    def is_of(self, value):
        return isinstance(value, list)

    def check(self, value, name):
        if not isinstance(value, list):
            raise bad_request(f"{name} must be {self.what}")
        if self.max_items is not None and len(value) > self.max_items and not self.cut:
            raise bad_request((self.too_many or "{name} holds at most {max} ({given} given)").format(
                name=name, max=self.max_items, given=len(value)))
        checked = []
        check = self.item.check
        for index, item in enumerate(value):
            try:
                if item is None:
                    raise bad_request(f"{name} must be {self.what}")
                checked.append(check(item, name))
            except RoostError as error:
                if item is None or not _may_be(self.item, item):
                    if self.drop_others:
                        continue
                    raise bad_request(f"{name} must be {self.what}") from None
                # the item's own refusal (a limit), naming it by its place
                raise RoostError(error.code, error.text.replace(name, f"{name}[{index}]", 1)) from None
        return checked[:self.max_items] if self.cut else checked

    def problems(self, value, where):
        found = super().problems(value, where)
        if found or value is None:
            return found
        for index, item in enumerate(value):
            found += self.item.problems(item, f"{where}[{index}]")
        return found

    def _spec(self):
        return _grouped(self.item.spec()) + "[]"

    def _typescript(self):
        return _grouped(self.item.typescript()) + "[]"

    def limit(self):
        words = [f"<= {self.max_items} items" + (" (more are cut)" if self.cut else "")] \
            if self.max_items is not None else []
        if self.item.limit():
            words.append(f"each {self.item.limit()}")
        if self.drop_others:
            words.append(f"what is not {self.item.spec()} is ignored")
        return ", ".join(words)


class MapOf(Field):
    """An object whose every value is a `value` (Record<string, T>)."""

    plural = "objects"

    def __init__(self, value, doc=None, **kwargs):
        super().__init__(doc, **kwargs)
        self.value = value

    def is_of(self, value):
        return isinstance(value, dict)

    def check(self, value, name):
        if not isinstance(value, dict):
            raise bad_request(f"{name} must be an object")
        checked = {}
        for key, item in value.items():
            if item is None or not _may_be(self.value, item):
                raise bad_request(f"{name} values must be {self.value.plural}")
            checked[key] = self.value.check(item, f"{name}.{key}")
        return checked

    def problems(self, value, where):
        found = super().problems(value, where)
        if found or value is None:
            return found
        for key, item in value.items():
            found += self.value.problems(item, f"{where}.{key}")
        return found

    def _spec(self):
        return f"Record<string, {self.value.spec()}>"

    def _typescript(self):
        return f"Record<string, {self.value.typescript()}>"


class Anything(Field):
    """A JSON value taken whole (`object=True`: an object): what roost keeps or passes
    on without reading it here."""

    plural = "objects"

    def __init__(self, doc=None, object=False, **kwargs):
        super().__init__(doc, **kwargs)
        self.object = object

    def is_of(self, value):
        return isinstance(value, dict) if self.object else True

    def check(self, value, name):
        if self.object and not isinstance(value, dict):
            raise bad_request(f"{name} must be an object")
        return value

    def _spec(self):
        return "object" if self.object else "unknown"

    def _typescript(self):
        return "Record<string, unknown>" if self.object else "unknown"


class Shape(Field):
    """An object with named fields. `name`: a shared shape's (DispatchArgs, JobRow), shown
    by name in the reference. `open`: a value the daemon sends may hold fields the shape
    does not name (an event's own fields). `prefix`: put before a field's name in a
    refusal ("report." for a report's fields)."""

    plural = "objects"

    def __init__(self, fields, name=None, doc=None, open=False, prefix="", **kwargs):
        super().__init__(doc, **kwargs)
        self.fields = dict(fields)
        self.name = name
        self.open = open
        self.prefix = prefix

    def but(self, **changes):
        changed = super().but(**changes)
        changed._plan = None       # made again for the copy (its prefix may differ)
        return changed

    def is_of(self, value):
        return isinstance(value, dict)

    def check(self, value, name):
        if not isinstance(value, dict):
            raise bad_request(f"{name} must be an object")
        return self.check_fields(value)

    def check_fields(self, given):
        """The arguments an op receives: each field checked, defaults filled in, fields
        the shape does not name left out."""
        plan = self._plan
        if plan is None or plan[0] is not self.fields or plan[1] != len(self.fields):
            plan = self._plan = self._make_plan()
        checked = {}
        get = given.get
        for name, check, full_name, nullable, lenient, default, copy in plan[2]:
            value = get(name)
            if value is not None and (lenient is None or _may_be(lenient, value)):
                checked[name] = check(value, full_name)
            elif value is None and nullable and name in given:
                checked[name] = None
            elif default is REQUIRED:
                raise bad_request(f"{full_name} is required")
            elif default is not LEFT_OUT:
                checked[name] = copy(default) if copy is not None else default
        return checked

    _plan = None

    def _make_plan(self):
        """What check_fields needs of each field, read once: a request's check is on the
        path of every request."""
        steps = tuple((name, field.check, self.prefix + name, field.nullable, field if field.lenient else None,
                       field.default, type(field.default) if isinstance(field.default, (list, dict)) else None)
                      for name, field in self.fields.items())
        return self.fields, len(self.fields), steps

    def problems(self, value, where):
        found = super().problems(value, where)
        if found or value is None:
            return found
        for name, field in self.fields.items():
            if name in value:
                found += field.problems(value[name], f"{where}.{name}")
            elif field.required:
                found.append(f"{where}.{name} is missing")
        if not self.open:
            found += [f"{where}.{name} is not in its contract" for name in value if name not in self.fields]
        return found

    def _spec(self):
        return self.name or self.inline(lambda field: field.spec())

    def _typescript(self):
        return self.name or self.inline(lambda field: field.typescript())

    def inline(self, type_of):
        parts = [f"{name}{'' if field.required else '?'}: {type_of(field)}" for name, field in self.fields.items()]
        return "{ " + ", ".join(parts) + " }" if parts else "{}"


def _may_be(field, value):
    """The value is of the field's type (a Choice: a string; limits and options aside)."""
    if isinstance(field, Choice):
        return isinstance(value, str)
    if isinstance(field, Integer):
        return (isinstance(value, int) and not isinstance(value, bool)) or \
            (isinstance(value, float) and value.is_integer()) or \
            (field.digits_ok and isinstance(value, str) and value.isdigit())
    return field.is_of(value)


def _grouped(text):
    return f"({text})" if " " in text and not text.startswith("{") else text


NO_ARGS = Shape({})
