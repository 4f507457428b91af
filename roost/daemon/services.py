"""The daemon's parts, built once in dependency order, each handed only what it uses (as
Mercurial's command server builds its own); the ops reach them through `call.services`.

    config, keeper -> jobs -> runner -> links -> replies, reaper
"""

import logging

import gevent.event

from roost.config import Config
from roost.jobs import adoption
from roost.jobs.agent_links import AgentLinks
from roost.jobs.reaping import Reaper
from roost.jobs.record import now_ms
from roost.jobs.registry import JobRegistry
from roost.jobs.replies import ReplyDesk
from roost.jobs.runner import JobRunner
from roost.keeper.client import KeeperClient

log = logging.getLogger(__name__)


class ShutdownRequest:
    """How the daemon is asked to leave (the `shutdown` op, SIGTERM, SIGINT): the first
    request is the one that counts; the daemon's main greenlet waits for it."""

    def __init__(self):
        self._asked = gevent.event.AsyncResult()

    def request(self, keep_workers):
        if not self._asked.ready():
            self._asked.set(bool(keep_workers))

    def wait(self):
        """keepWorkers of the request, once there is one."""
        return self._asked.get()


class Services:
    def __init__(self, home, socket_path, user_umask):
        self.home = home
        self.socket_path = socket_path
        self.started_at = now_ms()
        self.shutdown = ShutdownRequest()
        self.config = Config(home)
        self.keeper = KeeperClient(home, user_umask)
        self.jobs = JobRegistry(home)
        self.runner = JobRunner(self.jobs, self.keeper, self.config, socket_path)
        self.links = AgentLinks(self.jobs)
        self.replies = ReplyDesk(self.jobs, self.runner, self.links)
        self.reaper = Reaper(self.jobs, self.runner, self.config)

    def start(self):
        """Before the socket serves: every job on record, the live ones adopted from the
        keeper (one is started when none runs), idle timers armed."""
        self.jobs.load()
        try:
            adoption.adopt(self.runner)
        except Exception as error:
            log.exception("adopting the jobs failed")
            self.runner.pty_error = f"cannot reach the keeper: {error}"
        self.reaper.arm_all()

    def stop(self, keep_workers):
        """With keepWorkers the keeper and every job go on for the next daemon; without,
        every job is stopped and the keeper leaves once they are gone."""
        adoption.shut_down(self.runner, keep_workers)
        self.jobs.flush()
