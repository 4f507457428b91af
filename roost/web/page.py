"""The one page, from its template (static/index.html): the CSRF token in `<meta
name="csrf-token">`, whether the page is read-only, and the device's name, each escaped
as HTML. Everything else the page shows comes over its event stream and is put in the
page as text (textContent), never as HTML."""

import functools
import hashlib
import html
import json
import os

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static", "index.html")


@functools.lru_cache(maxsize=1)
def _template():
    with open(TEMPLATE, encoding="utf-8") as handle:
        # The page's files named by what they hold: a browser caches them until they change.
        return handle.read().replace("{{version}}", _files_digest())


def _files_digest():
    digest = hashlib.sha256()
    directory = os.path.dirname(TEMPLATE)
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as handle:
            digest.update(name.encode() + b"\0" + handle.read())
    return digest.hexdigest()[:12]


def render(csrf_token, read_only, device_name, snapshot):
    """The page; `snapshot` goes in a JSON data block (never run as script, so the
    Content-Security-Policy allows it), with <, > and & escaped so no text in it can
    close the block."""
    data = (json.dumps(snapshot, ensure_ascii=False, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))
    text = _template()
    return (text.replace("{{snapshot}}", data)
                .replace("{{csrf}}", html.escape(csrf_token, quote=True))
                .replace("{{readOnly}}", "true" if read_only else "false")
                .replace("{{device}}", html.escape(device_name or "", quote=True))
                .encode("utf-8"))
