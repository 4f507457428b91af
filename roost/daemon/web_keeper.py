"""The `roost web` the daemon keeps running when roost.json says so (issue 30):

    "web": {"listen": "127.0.0.1:7717", "readOnly": false, "tls": ["cert.pem", "key.pem"],
            "behindProxy": "https://box.tailnet.ts.net", "hosts": ["local", "box"]}

(`"web": true` takes the defaults.) It is started once the daemon serves, as the daemon's
own child, outside every job, so it is the person on the socket, like a `roost web` the
person started; it is restarted when it dies (after RESTART_FIRST_S, doubling to
RESTART_MOST_S, back to the first once it ran a minute), and stopped with the daemon. It
logs to `$ROOST_HOME/web.log`; `roost web pair` prints a pairing URL for it.

It is told the daemon's socket (`--socket`), so it never starts a daemon of its own.
"""

import logging
import os
import time

import gevent

from roost.bundle.userenv import detached_environ, roost_command
from roost.git import process

log = logging.getLogger(__name__)

RESTART_FIRST_S = 1.0
RESTART_MOST_S = 60.0
STEADY_S = 60.0
FOREVER_S = 10 * 365 * 86400.0


def web_argv(setting, socket_path, log_path):
    """The argv of the kept `roost web` for roost.json's `web`, or None when it is off or
    not a setting roost can follow (logged)."""
    if setting is True:
        setting = {}
    if not isinstance(setting, dict) or setting.get("enabled", True) is False:
        if setting not in (None, False):
            log.warning("roost.json's web must be true or an object, not %r: no roost web kept", setting)
        return None
    argv = roost_command() + ["--socket", socket_path, "web", "--log", log_path]
    listen = setting.get("listen")
    if isinstance(listen, str) and listen:
        argv += ["--listen", listen]
    if setting.get("readOnly") is True:
        argv.append("--read-only")
    tls = setting.get("tls")
    if isinstance(tls, list) and len(tls) == 2 and all(isinstance(part, str) for part in tls):
        argv += ["--tls", tls[0], tls[1]]
    proxy = setting.get("behindProxy")
    if isinstance(proxy, str) and proxy:
        argv += ["--behind-proxy", proxy]
    for host in setting.get("hosts") or ():
        if isinstance(host, str) and host:
            argv += ["--host", host]
    return argv


class WebKeeper:
    def __init__(self, config, home, socket_path):
        self.config = config
        self.home = home
        self.socket_path = socket_path
        self.running = None          # the process.Running of the web now
        self.greenlet = None
        self.stopping = False
        self.starts = 0

    def start(self):
        if web_argv(self.config.get("web"), self.socket_path, "") is not None:
            self.greenlet = gevent.spawn(self._keep)

    def stop(self):
        self.stopping = True
        if self.running is not None:
            self.running.abandon()
        if self.greenlet is not None:
            self.greenlet.kill(block=False)

    def _keep(self):
        backoff = RESTART_FIRST_S
        while not self.stopping:
            argv = web_argv(self.config.get("web"), self.socket_path, os.path.join(self.home, "web.log"))
            if argv is None:
                return
            began = time.monotonic()
            try:
                self.starts += 1
                env = dict(detached_environ(), ROOST_HOME=self.home)
                self.running = process.Running(argv[0], argv, env, FOREVER_S)
                ended = self.running.finish()
                why = f"it exited with status {ended.returncode}: " + ended.stderr.decode("utf-8", "replace")[-300:]
            except Exception as error:
                why = str(error)
            finally:
                self.running = None
            if self.stopping:
                return
            if time.monotonic() - began >= STEADY_S:
                backoff = RESTART_FIRST_S
            log.warning("the roost web roost.json asks for ended (%s); started again in %.0f s", why.strip(), backoff)
            gevent.sleep(backoff)
            backoff = min(RESTART_MOST_S, backoff * 2)
