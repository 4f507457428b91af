"""The one error type, carrying a code of the spec ("Error codes")."""

# Codes an agent may see: bad_request, unauthorized, not_found, full, busy, unsupported
# (the spec's list); the daemon's other clients may also see limit, conflict, internal.


class RoostError(Exception):
    """A refusal with a stable code; the server answers it as {ok: false, error, code}."""

    def __init__(self, code, text):
        super().__init__(text)
        self.code = code
        self.text = text

    def __repr__(self):
        return f"RoostError({self.code!r}, {self.text!r})"


def bad_request(text):
    return RoostError("bad_request", text)


def not_found(text):
    return RoostError("not_found", text)
