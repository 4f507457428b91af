"""The daemon's parts, built once in dependency order, each handed only what it uses (as
Mercurial's command server builds its own); the ops reach them through `call.services`.

    config, keeper, feed -> bus -> jobs -> runner -> links -> replies, reaper
    jobs, runner, replies -> timelines (each job's flight recorder, wired to them here)
    jobs -> directory -> messenger -> watches (peers) -> board, its actions -> workspaces
    bus -> subscribers (the jobs' row changes and removals wired to them here)
"""

import logging

import gevent.event

from roost import __version__
from roost.board.actions import BoardActions
from roost.board.board import TaskBoard
from roost.board.workspaces import Workspaces
from roost.config import Config
from roost.events.bus import EventBus
from roost.events.feed import EventFeed
from roost.events.subscribers import Subscribers
from roost.jobs import adoption
from roost.jobs.agent_links import AgentLinks
from roost.jobs.reaping import Reaper
from roost.jobs.record import now_ms
from roost.jobs.registry import JobRegistry
from roost.jobs.replies import ReplyDesk
from roost.jobs.runner import JobRunner
from roost.jobs.timeline import Timelines
from roost.keeper.client import KeeperClient
from roost.ops.job_args import launch_job
from roost.peers.directory import PeerDirectory
from roost.peers.messages import Messenger
from roost.peers.watches import Watches

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
        self.feed = EventFeed(home)
        self.bus = EventBus(self.feed)
        self.jobs = JobRegistry(home, self.bus)
        self.runner = JobRunner(self.jobs, self.keeper, self.config, socket_path)
        self.links = AgentLinks(self.jobs)
        self.replies = ReplyDesk(self.jobs, self.runner, self.links)
        self.reaper = Reaper(self.jobs, self.runner, self.config)
        self.timelines = Timelines(self.jobs)
        self.jobs.on_row_change.append(self.timelines.row_changed)
        self.runner.on_started.append(self.timelines.started)
        self.runner.on_adopted.append(lambda job: self.timelines.started(job, adopted=True))
        self.replies.on_typed.append(self.timelines.typed)
        self.directory = PeerDirectory(self.jobs)
        self.messenger = Messenger(self.directory, self.runner, self.replies, self.links, self.bus)
        self.watches = Watches(home, self.jobs, self.directory, self.messenger, self.bus)
        self.subscribers = Subscribers(self.bus, decorate=self.with_parent_open)
        self.jobs.on_row_change.append(self.subscribers.row_changed)
        self.jobs.on_remove.append(self.subscribers.removed)
        self.board = TaskBoard(home)
        self.board_actions = BoardActions(self.board, self.jobs, self.directory, self.messenger, self.bus,
                                          self.subscribers.push)
        self.workspaces = Workspaces(home, self.board, self.board_actions, self.jobs, self.config,
                                     lambda args, extra: launch_job(self, args, extra=extra))

    def with_parent_open(self, row):
        """M13: a row says whether someone holds its parent session now."""
        if row.get("parentSession"):
            row["parentOpen"] = self.directory.is_open(row["parentSession"])
        return row

    def start(self):
        """Before the socket serves: every job on record, the live ones adopted from the
        keeper (one is started when none runs), idle timers armed."""
        self.feed.load()
        self.jobs.load()
        self.board.load()
        try:
            adoption.adopt(self.runner)
        except Exception as error:
            log.exception("adopting the jobs failed")
            self.runner.pty_error = f"cannot reach the keeper: {error}"
        self.reaper.arm_all()
        try:
            self.workspaces.start()     # tasks.json and the repositories' worktrees agree again
        except Exception:
            log.exception("setting the task board's worktrees right failed")
        self.watches.load()
        self.watches.recheck()
        running = sum(1 for job in self.jobs.all() if job.running)
        self.bus.publish("daemon", f"roost {__version__} started: {running} jobs running")

    def stop(self, keep_workers):
        """With keepWorkers the keeper and every job go on for the next daemon; without,
        every job is stopped and the keeper leaves once they are gone."""
        self.bus.publish("daemon", "roost stopping" + (": its jobs go on" if keep_workers else ""))
        adoption.shut_down(self.runner, keep_workers)
        self.jobs.flush()
        self.bus.flush()
        self.timelines.flush()
