"""Starting a job from a DispatchArgs (`dispatch`, `spawn`, a task's start, a schedule's
run): the Launcher, built once by the daemon and handed to every part that starts jobs,
and the reading of its arguments: the row's first fields, the launch (argv, term,
resume, ...) and the task to type once the agent first waits for text (the spec's
`term.typeTask`, or roost's own `task`)."""

import os

import gevent.event

from roost import args as read
from roost.errors import RoostError, bad_request
from roost.jobs import launch as launching
from roost.jobs import builtin_profiles, profiles, sessions
from roost.term.screen.screen import MAX_SIZE

TASK_LIMIT = 200
ORIGINS = ("bg", "dispatch", "adopt", "fork")
DEFAULT_ROWS, DEFAULT_COLS = 40, 120


def read_dispatch(args, config):
    """(record fields, launch, text to type once it first waits) for a dispatch; refuses
    what cannot be run with bad_request, `kind: "pi"` with unsupported."""
    kind = read.choice(args, "kind", ("pi", "shell"), default="shell")
    if kind == "pi":
        raise RoostError("unsupported", "kind \"pi\" is not supported by this daemon yet: "
                                        "run an agent from a profile, or a command as kind \"shell\"")
    cwd = read.text(args, "cwd", min_length=1)
    if not os.path.isabs(cwd):
        raise bad_request(f"cwd must be an absolute path, not {cwd!r}")
    if not os.path.isdir(cwd):
        raise bad_request(f"cwd {cwd} is not a directory")
    command = read.strings(args, "command", default=[])
    env = read.mapping(args, "env", default={})
    if not all(isinstance(value, str) for value in env.values()):
        raise bad_request("env values must be strings")
    profile = read.text(args, "profile", default=None)
    term = profiles.check_term(args.get("term"), linear=True)     # a client's patterns: RE2
    # The first task: the spec's term.typeTask, or roost's own `task` (the CLI's).
    task = args.get("task")
    if task is not None and not isinstance(task, str):
        raise bad_request("task must be a string")
    if task is None and term is not None:
        task = term.get("typeTask")
    if isinstance(task, str):
        read.check_typed(task, "task")     # typed as the first reply
    task = task.strip() if task else None
    if term is not None:
        # roost types the task itself (roost.jobs.replies): the screen reader never does.
        term.pop("typeTask", None)
    launch = {
        "argv": list(command),
        "env": dict(env),
        "term": term,
        "resumeCommand": read.strings(args, "resumeCommand", default=None),
        "resumable": read.flag(args, "resumable", default=None),
        "protocol": read.flag(args, "protocol", default=None),
        # The person's own shell (issue 16): its processes are the person. The launcher
        # keeps it only for the person's own dispatch.
        "person": read.flag(args, "person", default=None),
        # roost's own (issue 26): `false` runs it without a jail; the person's dispatch only.
        "sandbox": read.flag(args, "sandbox", default=None),
        "taskInArgv": read.flag(args, "taskInArgv", default=False),
        "origin": read.choice(args, "origin", ORIGINS, default="dispatch"),
        "rows": read.integer(args, "rows", default=DEFAULT_ROWS, minimum=2, maximum=MAX_SIZE),
        "cols": read.integer(args, "cols", default=DEFAULT_COLS, minimum=2, maximum=MAX_SIZE),
    }
    if profile:
        launch["profile"] = profile
        type_task = profiles.apply(launch, config, task)
    elif not launch["argv"]:
        raise bad_request("command must not be empty (or name a profile)")
    else:
        # A command's task is typed once it first waits for text, unless its argv has it.
        type_task = None if launch["taskInArgv"] else task
    restart = read.choice(args, "restart", ("always", "never"), default=None)
    if restart:
        launch["restart"] = restart      # "always": started again after the machine restarts
    sessions.give(launch)
    if launch["protocol"] is None:
        launch["protocol"] = False
    if launch["person"] is None:
        launch["person"] = False
    if launch["sandbox"] is not False:
        launch.pop("sandbox")
    if launch["resumable"] is None:
        launch["resumable"] = bool(launch["resumeCommand"])
    launching.check_runnable(builtin_profiles.expand(launch["argv"][:1])[0], cwd, {**os.environ, **env})
    missing = builtin_profiles.missing_files(launch["argv"] + (launch["resumeCommand"] or []))
    if missing:
        raise bad_request(f"cannot run {launch['argv'][0]}: roost's own file {missing[0]} is missing "
                          "(an incomplete install of roost)")
    name = launching.fold_name(read.text(args, "name", default="") or "")
    if not name:
        name = launching.default_name(launch["argv"], profile)
    fields = {
        "cwd": cwd,
        "kind": "shell",
        "profile": profile or "shell",
        "name": launching.check_name(name),
        "sessionFile": read.text(args, "sessionFile", default=""),
        "model": read.text(args, "model", default=None),
        "thinking": read.text(args, "thinking", default=None),
        "task": launching.one_line(task, TASK_LIMIT) if task else None,
    }
    if launch["person"]:
        fields["person"] = True
    for optional in ("fanout", "agent", "schedule"):
        if isinstance(args.get(optional), str):
            fields[optional] = args[optional]
    worktree = args.get("worktree")
    if isinstance(worktree, dict):
        fields["worktree"] = {key: worktree.get(key) for key in ("path", "branch", "base") if key in worktree}
    return fields, launch, type_task


class Launcher:
    def __init__(self, registry, runner, replies, config):
        self.registry = registry
        self.runner = runner
        self.replies = replies
        self.config = config

    def launch(self, args, request_id=None, extra=None, by_person=False):
        """A job from a DispatchArgs: made, started, its first task queued; {id, name}.
        `extra`: row fields of the launcher's (a spawn's parent, a schedule's name).
        `by_person`: the person's own dispatch, the only launch that may make a job the
        person's shell; any other (a session's spawn, a task's start, a schedule's run,
        the concierge's) is refused one that asks for it, and a profile's `"person":
        true` does not count for it."""
        registry = self.registry
        if request_id is not None:
            # M36: a resend gets the job the first one made, whatever its other arguments.
            earlier = registry.get(registry.by_request_id.get(request_id))
            if earlier is not None:
                return {"id": earlier.id, "name": earlier.name}
            running = registry.dispatching.get(request_id)
            if running is not None:
                job = running.get()
                return {"id": job.id, "name": job.name}
        fields, launch, type_task = read_dispatch(args, self.config.current())
        if launch["person"] and not by_person:
            if args.get("person"):
                raise RoostError("unauthorized", "only the person's own dispatch may make a job the person's shell")
            launch["person"] = False
            fields.pop("person", None)
        if launch.get("sandbox") is False and not by_person:
            # A jailed agent's spawn would otherwise start its way out of its jail.
            raise RoostError("unauthorized", "only the person's own dispatch may run a job without a jail")
        fields.update(extra or {})
        marker = gevent.event.AsyncResult()
        if request_id is not None:
            registry.dispatching[request_id] = marker
        try:
            job = registry.create(fields, launch, request_id)
            try:
                self.runner.start(job)
            except RoostError:
                registry.remove(job, news=False)   # it never ran: nothing to show for it
                raise
            if type_task:
                # The first task is reply 1: typed once the agent first waits for text, or
                # delivered to a protocol agent when it connects (CONTRACT.md "Agent profiles").
                self.replies.queue(job, type_task)
            marker.set(job)
        except BaseException as error:
            marker.set_exception(error)
            raise
        finally:
            if request_id is not None:
                registry.dispatching.pop(request_id, None)
        return {"id": job.id, "name": job.name}
