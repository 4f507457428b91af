"""The daemon's parts, built once in dependency order, each handed only what it uses (as
Mercurial's command server builds its own); the ops reach them through `call.services`.

    config, keeper, feed -> bus -> jobs -> runner -> links -> replies, reaper, launcher
    jobs, runner, replies -> timelines (each job's flight recorder) -> sessions (each agent's own)
    jobs, replies, config, bus -> limit resumes (parked jobs typed into at their reset)
    windows; jobs, config, windows -> spend; jobs, config, spend, replies, bus -> budgets (park
        a job over a budget); jobs, config, budgets, windows -> admission (each job's tokens
        from its agent's records, its row's `spend`; the plan windows the records carry)
    jobs -> directory -> messenger -> watches (peers) -> board, its actions -> stages, task locks
      -> checks -> preparations, reviews, merges, exits -> upkeep -> workspaces; radar
    jobs, launcher -> schedules (the book) -> scheduler (their one timer)
    bus -> orders; jobs, launcher, replies, subscribers, orders -> concierge -> digests
    bus -> subscribers
    config, subscribers, board -> notifier (row changes, removals, the feed's stage changes)
    config -> web keeper (roost.json's `web`: a `roost web` kept running once the socket serves)

Every hook (who hears of a keeper's exit, a run's start, a row's change, a removal, an
event) is wired here, after the parts are built, so the order they fire in is written in
one place: `_wire`.
"""

import logging

import gevent
import gevent.event

from roost import __version__
from roost.board.actions import BoardActions
from roost.board.board import TaskBoard
from roost.board.exits import Exits
from roost.board.locks import TaskLocks
from roost.board.merging import Merges
from roost.board.preparing import Preparations
from roost.board.radar import Radar
from roost.board.review import Reviews
from roost.board.stages import Stages
from roost.board.upkeep import Upkeep
from roost.board.verifying import Checks
from roost.board.workspaces import Workspaces
from roost.clock import Clock
from roost.concierge.desk import ConciergeDesk
from roost.concierge.digests import Digests
from roost.concierge.orders import StandingOrders
from roost.daemon.web_keeper import WebKeeper
from roost.config import Config
from roost.events.bus import EventBus
from roost.events.feed import EventFeed
from roost.events.subscribers import Subscribers
from roost.jobs import adoption, roost_on_path
from roost.jobs.agent_links import AgentLinks
from roost.jobs.keeper_loss import KeeperLosses
from roost.jobs.launcher import Launcher
from roost.jobs.limit_resume import LimitResumer
from roost.jobs.origins import ProcessOrigins
from roost.jobs.reaping import Reaper
from roost.jobs.registry import JobRegistry
from roost.jobs.replies import ReplyDesk
from roost.jobs.runner import JobRunner
from roost.jobs.sessions import SessionFinder
from roost.jobs.spawn_tree import TreeSweeper
from roost.jobs.timeline import Timelines
from roost.keeper.client import KeeperClient
from roost.notify.notifier import Notifier
from roost.peers.directory import PeerDirectory
from roost.peers.messages import Messenger
from roost.peers.watches import Watches
from roost.schedule.book import ScheduleBook
from roost.schedule.clock import Scheduler
from roost.spend.admission import Admission
from roost.spend.budgets import Budgets
from roost.spend.tracker import SpendTracker
from roost.spend.windows import Windows

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
        # The one clock the parts that decide by time read (a test hands them its own).
        self.clock = Clock(gevent.spawn_later)
        self.started_at = self.clock.now_ms()
        self.shutdown = ShutdownRequest()
        self.config = Config(home)
        self.web = WebKeeper(self.config, home, socket_path)     # roost.json's `web`: started once serving
        self.keeper = KeeperClient(home, user_umask)
        self.feed = EventFeed(home)
        self.bus = EventBus(self.feed)
        self.jobs = JobRegistry(home, self.bus, self.clock)
        self.runner = JobRunner(self.jobs, self.keeper, self.config, socket_path, self.clock,
                                roost_on_path.install(home))
        keeper_pid = lambda: self.keeper.keeper_pid   # noqa: E731
        self.keeper_losses = KeeperLosses(home, self.bus, keeper_pid, self.clock)
        self.origins = ProcessOrigins(self.jobs, keeper_pid, losses=self.keeper_losses)
        self.links = AgentLinks(self.jobs)
        self.replies = ReplyDesk(self.jobs, self.runner, self.links)
        self.reaper = Reaper(self.jobs, self.runner, self.config, self.clock)
        self.spawn_trees = TreeSweeper(self.jobs, self.runner)
        # Every part that starts jobs (dispatch, spawn, the board, schedules) starts them here.
        self.launcher = Launcher(self.jobs, self.runner, self.replies, self.config)
        self.timelines = Timelines(self.jobs)
        self.sessions = SessionFinder(self.jobs, self.timelines)
        self.limit_resumes = LimitResumer(self.jobs, self.replies, self.config, self.bus, self.clock)
        self.windows = Windows(home, self.clock)
        self.spend = SpendTracker(self.jobs, self.config, home, self.windows, self.clock)
        self.budgets = Budgets(self.jobs, self.config, self.spend, self.replies, self.bus, self.clock)
        self.admission = Admission(self.jobs, self.config, self.budgets, self.windows, self.clock)
        self.directory = PeerDirectory(self.jobs)
        self.messenger = Messenger(self.directory, self.runner, self.replies, self.links, self.bus)
        self.watches = Watches(home, self.jobs, self.directory, self.messenger)
        self.subscribers = Subscribers(decorate=self.with_parent_open)
        self.board = TaskBoard(home)
        self.board_actions = BoardActions(self.board, self.jobs, self.directory, self.messenger, self.bus,
                                          self.subscribers.push)
        self.notifier = Notifier(self.config, self.subscribers.push, self.attached, self.board.get, self.clock)
        # The board's workspaces: the shared parts once (a workspace's stage, one greenlet
        # at a time per task), then each part with what it uses.
        self.stages = Stages(self.board, self.board_actions)
        self.task_locks = TaskLocks(self.board, self.stages)
        board_parts = (self.board, self.board_actions, self.stages, self.task_locks)
        self.checks = Checks(home, *board_parts, self.jobs, self.launcher)
        self.preparations = Preparations(home, *board_parts, self.launcher, self.config, self.clock, self.checks,
                                         self.admission)
        self.reviews = Reviews(*board_parts)
        self.merges = Merges(*board_parts, self.checks)
        self.exits = Exits(self.board_actions, self.task_locks)
        self.upkeep = Upkeep(home, *board_parts, self.jobs, self.checks, self.preparations, self.merges)
        self.workspaces = Workspaces(home, *board_parts, self.checks, self.preparations, self.reviews, self.merges,
                                     self.exits, self.upkeep)
        self.schedules = ScheduleBook(home, self.jobs, self.config, self.clock)
        self.scheduler = Scheduler(self.schedules, self.jobs, self.runner, self.launcher, self.replies, self.bus,
                                   self.clock, self.admission)
        self.orders = StandingOrders(home, self.bus)
        self.concierge = ConciergeDesk(home, self.jobs, self.runner, self.launcher, self.replies, self.config,
                                       self.bus, self.subscribers.push, self.orders)
        self.digests = Digests(self.jobs, self.concierge, self.orders, self.messenger, self.config, self.clock)
        # the overlap radar reads a worktree again when its holder goes quiet (issue 20)
        self.radar = Radar(self.board, self.board_actions)
        self._wire()

    def _wire(self):
        """The hooks, in the order they fire."""
        self.keeper.exit_listeners.append(self.runner.ends.exited)
        self.keeper.lost_listeners.append(self.keeper_losses.lost)    # a security event first
        self.keeper.lost_listeners.append(self.runner.keeper_lost)
        self.runner.on_started.append(lambda job: self.keeper_losses.seen())   # the keeper's start, while it lives
        self.runner.on_started.append(self.timelines.started)    # each job's flight recorder first
        self.runner.on_adopted.append(lambda job: self.timelines.started(job, adopted=True))
        self.replies.on_typing.append(self.timelines.typing)     # who ends a dialog, known from its first key
        self.replies.on_typed.append(self.timelines.typed)
        self.runner.on_held.append(self.timelines.held)       # a screen's word the kernel held back
        self.runner.on_started.append(self.replies.kick)     # a started run's replies are typed
        self.runner.on_adopted.append(self.replies.resume)   # and an adopted one's waiting ones
        checks = self.checks
        for hook in (self.timelines.row_changed, self.sessions.row_changed, self.reaper.row_changed,
                     self.subscribers.row_changed, self.board_actions.row_changed, checks.row_changed,
                     self.concierge.row_changed, self.notifier.row_changed, self.radar.row_changed,
                     self.limit_resumes.row_changed, self.spend.row_changed, self.admission.row_changed):
            self.jobs.on_row_change.append(hook)
        for hook in (self.subscribers.removed, self.board_actions.removed, checks.removed, self.notifier.removed,
                     self.spawn_trees.removed,       # a tree's root removed: its spawned jobs with it
                     self.spend.removed):
            self.jobs.on_remove.append(hook)
        # The feed's listeners: kept watches fire before hubs hear of the event.
        self.bus.listeners.append(self.watches.event)
        self.bus.listeners.append(self.subscribers.event)
        self.bus.listeners.append(self.digests.event)       # what the concierge is woken with
        self.bus.listeners.append(self.notifier.event)      # what needs the person, told once
        self.bus.listeners.append(self.radar.heard)         # a land or a commit: the others read again
        self.orders.on_change = self.digests.changed
        self.board_actions.done_by.append(self.workspaces.finish)     # M55: a workspace's done
        self.checks.on_setup_passed.append(self.preparations.launch_session)   # then its session starts
        self.spend.on_spend.append(self.budgets.spent)      # a job over its budget is parked
        self.admission.on_free.append(lambda provider: self.scheduler.changed())   # the queued try again
        self.admission.on_free.append(self.preparations.start_queued)

    def attached(self, job_id):
        """A person is in this job's terminal now (roost attach, the hub's enter)."""
        job = self.jobs.get(job_id)
        return bool(job is not None and job.terminal is not None and job.terminal.attached)

    def with_parent_open(self, row):
        """M13: a row says whether someone holds its parent session now."""
        if row.get("parentSession"):
            row["parentOpen"] = self.directory.is_open(row["parentSession"])
        return row

    def start(self):
        """Before the socket serves: every job on record, the live ones adopted from the
        keeper (one is started when none runs), idle timers armed."""
        self.feed.load()
        self.keeper_losses.load()
        self.jobs.load()
        for job in self.jobs.all():
            if job.state is not None:
                self.notifier.seed(job.row())      # waits told before this start are not told again
        self.board.load()
        self.concierge.load()
        self.orders.load()
        try:
            adoption.adopt(self.runner)
        except Exception as error:
            log.exception("adopting the jobs failed")
            self.runner.pty_error = f"cannot reach the keeper: {error}"
        self.keeper_losses.seen()
        self.reaper.arm_all()
        try:
            self.workspaces.start()     # tasks.json and the repositories' worktrees agree again
        except Exception:
            log.exception("setting the task board's worktrees right failed")
        self.watches.load()
        self.watches.recheck()
        try:
            self.scheduler.start()      # after adoption: a cut-short run is known as such
        except Exception:
            log.exception("starting the schedules failed")
        try:
            self.preparations.start_queued()     # task starts maxLive queued (issue 29)
        except Exception:
            log.exception("starting the queued task starts failed")
        self.digests.start()
        self.limit_resumes.start()      # after adoption: parked rows are resumed from their records
        self.windows.load()
        self.spend.start()              # each ledger from its file, then what was written meanwhile
        self.budgets.start()
        running = sum(1 for job in self.jobs.all() if job.running)
        self.bus.publish("daemon", f"roost {__version__} started: {running} jobs running")

    def stop(self, keep_workers):
        """With keepWorkers the keeper and every job go on for the next daemon; without,
        every job is stopped and the keeper leaves once they are gone."""
        self.bus.publish("daemon", "roost stopping" + (": its jobs go on" if keep_workers else ""))
        self.web.stop()
        self.scheduler.stop()
        self.digests.stop()
        self.limit_resumes.stop()
        self.budgets.stop()
        self.spend.stop()
        self.windows.flush()
        adoption.shut_down(self.runner, keep_workers)
        self.jobs.flush()
        self.bus.flush()
        self.timelines.flush()
