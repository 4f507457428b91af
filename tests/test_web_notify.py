"""The `command` sink's ntfy recipe (issue 30 item 5): `roost notify ntfy TOPIC` runs
`ntfy publish` with the notification's title and body, and with an action button that
opens `roost web`'s page at the job when roost.json's `web` says where the page is."""

import json
import os
import stat

from conftest import PYTHON, DaemonProcess, wait_for
from jobkit import dispatch, write_config

FAKE_NTFY = """#!{python}
import json, sys
with open({out!r}, "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
"""


def test_the_ntfy_recipe_opens_the_page_at_the_job(home, tmp_path):
    out = tmp_path / "ntfy.calls"
    fake = tmp_path / "ntfy"
    fake.write_text(FAKE_NTFY.format(python=PYTHON, out=str(out)))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    os.makedirs(home, mode=0o700)
    write_config(home, {"web": {"url": "https://box.example.ts.net/"},
                        "notify": {"desktop": False, "terminal": False,
                                   "command": [PYTHON, "-m", "roost", "notify", "ntfy", "mytopic", "--ntfy", str(fake)]}})
    daemon = DaemonProcess(home).start()
    try:
        job_id = dispatch(daemon, ["sh", "-c", "echo 'ship it? password=hunter2'; read line"], name="shipper")
        wait_for(lambda: out.exists() and out.read_text().strip(), timeout=20, what="ntfy run by the command sink")
    finally:
        daemon.stop()
    argv = json.loads(out.read_text().splitlines()[0])
    page = f"https://box.example.ts.net/#job={job_id}"
    assert argv[:3] == ["publish", "--title", "roost: shipper asks"]
    assert argv[argv.index("--click") + 1] == page
    assert argv[argv.index("--actions") + 1] == f"view, Open in roost, {page}, clear=true"
    assert argv[-2:] == ["mytopic", "ship it? password=***"]
