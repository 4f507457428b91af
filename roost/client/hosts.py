"""Other machines (issue 18): a command runs against another machine's daemon through
`ssh HOST roost proxy`, whose stdin and stdout carry the wire as they are. No port is
opened anywhere: SSH is the transport, and each machine keeps its own daemon, which
decides there who is the person (the proxy's pid, outside every job).

roost.json's `ssh` says how: a list, the ssh command (`["ssh", "-o", "BatchMode=yes"]`),
or an object `{"command": [...], "roost": [...]}` that also names the remote roost (an
argv list: `["/opt/bin/roost"]`). `hosts` lists the hub's machines (`local` is this one)."""

import json
import shlex

from roost import paths
from roost.client.connection import Client, Unreachable
from roost.controls import visible

DEFAULT_SSH = ["ssh"]
DEFAULT_REMOTE_ROOST = ["roost"]
LOCAL = "local"


class BadSetting(ValueError):
    """A host name or an `ssh` setting that cannot be used as it is."""


def settings(env):
    """roost.json as this machine's CLI reads it (the standard library's json: the CLI's
    path imports nothing heavy)."""
    path = paths.config_file(env)
    try:
        with open(path, "rb") as handle:
            value = json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise BadSetting(f"{path} cannot be read: {error}")
    if not isinstance(value, dict):
        raise BadSetting(f"{path} is not a JSON object")
    return value


def _argv(value, what):
    if not (isinstance(value, list) and value and all(isinstance(word, str) and word for word in value)):
        raise BadSetting(f"roost.json's {what} must be a list of words (an argv list), not {value!r}")
    return list(value)


def ssh_setting(settings_value):
    """(the ssh command, the remote roost) as roost.json's `ssh` says."""
    value = settings_value.get("ssh")
    if value is None:
        return list(DEFAULT_SSH), list(DEFAULT_REMOTE_ROOST)
    if isinstance(value, list):
        return _argv(value, "ssh"), list(DEFAULT_REMOTE_ROOST)
    if isinstance(value, dict):
        return (_argv(value.get("command", DEFAULT_SSH), "ssh.command"),
                _argv(value.get("roost", DEFAULT_REMOTE_ROOST), "ssh.roost"))
    raise BadSetting(f"roost.json's ssh must be a list or an object, not {value!r}")


def check_host(host):
    """A host name as ssh takes it: never an option (a leading `-`), no spaces or
    control characters."""
    if not host or host.startswith("-") or any(char.isspace() or not char.isprintable() for char in host):
        raise BadSetting(f"{visible(repr(host))} is not a host name ssh can take")
    return host


def proxy_argv(host, settings_value):
    """`ssh ... -- HOST 'roost' 'proxy'`: ssh hands the remote command to the remote
    shell as one string, so each word is quoted there and stays one word."""
    command, remote = ssh_setting(settings_value)
    return command + ["--", check_host(host), shlex.join(remote + ["proxy"])]


def hosts_of(settings_value):
    """roost.json's `hosts`: the hub's machines."""
    value = settings_value.get("hosts")
    if value is None:
        return []
    if not (isinstance(value, list) and all(isinstance(host, str) for host in value)):
        raise BadSetting(f"roost.json's hosts must be a list of host names, not {value!r}")
    return [host if host == LOCAL else check_host(host) for host in value]


def open_host(host, env, timeout=None, stderr=None, own_session=False):
    """A Client of HOST's daemon through ssh; Unreachable when ssh cannot be run."""
    argv = proxy_argv(host, settings(env))
    try:
        client = Client.over_command(argv, timeout, stderr, own_session)
    except OSError as error:
        raise Unreachable(f"cannot run {argv[0]} for host {host}: {error.strerror or error}")
    return client
