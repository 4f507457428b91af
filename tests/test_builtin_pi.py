"""The built-in `pi` profile on the real pi: with no profile in roost.json, `--profile pi` runs pi
with roost's bundled extension (clients/typescript/pi/roost.ts) and `protocol: true`, so
its row is pi's own word: working on its task, waiting after the answer; a reply is
answered; a stop leaves nothing. The extension also works from a copy of the bundle's
two files anywhere (as the frozen binary unpacks them). Skipped without pi, as
tests/test_pi_extension.py is."""

import os
import shutil

from conftest import ROOT
from jobkit import job_processes, write_config
from pikit import PI, jail_grants, model, offline_world, pytestmark, reported, user_texts  # noqa: F401
from protokit import ProtoJob, ended


def start(daemon, tmp_path, model, task):
    env, work = offline_world(tmp_path, model.port)
    clear = [name for name in os.environ if name.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE", "CODEX_", "PI_"))]
    env.update({name: "" for name in clear if name not in env})
    env["PATH"] = f"{os.path.dirname(PI)}:{os.environ['PATH']}"
    launch = {"kind": "shell", "cwd": work, "sessionFile": "", "command": [], "env": env, "name": "",
              "origin": "dispatch", "profile": "pi", "task": task}
    return ProtoJob(daemon, daemon.call("dispatch", **launch)["id"])


def test_the_built_in_pi_profile_reports_pis_own_state(daemon, tmp_path, model):
    # No profile of roost.json: only what the jail of a pi installed under /tmp may see.
    write_config(daemon.home, {"sandbox": jail_grants(tmp_path)})
    job = start(daemon, tmp_path, model, "delay=2 echo: the built-in pi")
    row = job.wait_row(lambda row: reported(row) and row["state"] == "working", "pi working on its task", timeout=60)
    assert row["name"] == "pi" and "the built-in pi" in (row["summary"] or "")
    job.wait_row(lambda row: row["state"] == "blocked" and row["summary"] == "ECHO: the built-in pi",
                 "pi waiting after its answer", timeout=60)
    assert user_texts(model)[0].strip() == "delay=2 echo: the built-in pi"
    job.reply("echo: and a reply")
    job.wait_row(lambda row: row["summary"] == "ECHO: and a reply", "the reply answered", timeout=60)
    daemon.call("stop", id=job.id)
    job.wait_row(ended, "pi to end", timeout=30)
    assert job_processes(job.id) == []


def test_the_extension_runs_from_a_copy_of_the_bundled_files(daemon, tmp_path, model):
    bundle = tmp_path / "elsewhere"
    for part in (os.path.join("clients", "typescript", "pi", "roost.ts"),
                 os.path.join("clients", "typescript", "pi", "tools.ts"),
                 os.path.join("clients", "typescript", "src", "roost-agent.ts")):
        os.makedirs(bundle / os.path.dirname(part), exist_ok=True)
        shutil.copy(os.path.join(ROOT, part), bundle / part)
    write_config(daemon.home, {"agentProfiles": {"pi": {
        "command": ["pi", "-e", str(bundle / "clients" / "typescript" / "pi" / "roost.ts")],
        "task": "type", "protocol": True, "sandbox": jail_grants(tmp_path)}}})
    job = start(daemon, tmp_path, model, "echo: from the copy")
    job.wait_row(lambda row: reported(row) and row["summary"] == "ECHO: from the copy", "the answer", timeout=60)
