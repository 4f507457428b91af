"""The one page, from its template (static/index.html): the CSRF token in `<meta
name="csrf-token">`, whether the page is read-only, and the device's name, each escaped
as HTML. Everything else the page shows comes over its event stream and is put in the
page as text (textContent), never as HTML."""

import html
import os

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static", "index.html")


def render(csrf_token, read_only, device_name):
    with open(TEMPLATE, encoding="utf-8") as handle:
        text = handle.read()
    return (text.replace("{{csrf}}", html.escape(csrf_token, quote=True))
                .replace("{{readOnly}}", "true" if read_only else "false")
                .replace("{{device}}", html.escape(device_name or "", quote=True))
                .encode("utf-8"))
