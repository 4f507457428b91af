"""Starting a job from a DispatchArgs (`dispatch`, `spawn`, a task's start, a schedule's
run): the Launcher, built once by the daemon and handed to every part that starts jobs,
and the reading of its arguments: the row's first fields, the launch (argv, term,
resume, ...) and the task to type once the agent first waits for text (the spec's
`term.typeTask`, or roost's own `task`)."""

import os

import gevent.event

from roost.errors import UNAUTHORIZED, UNSUPPORTED, RoostError, bad_request
from roost.jobs import launch as launching
from roost.jobs import builtin_profiles, profiles, sessions
from roost.jobs.launch_args import DISPATCH_ARGS

TASK_LIMIT = 200


def read_dispatch(args, config):
    """(record fields, launch, text to type once it first waits) for a dispatch; refuses
    what cannot be run with bad_request, `kind: "pi"` with unsupported. `args` is checked
    against DispatchArgs here, whoever built it."""
    args = DISPATCH_ARGS.check_fields(args)
    if args["kind"] == "pi":
        raise RoostError(UNSUPPORTED, "kind \"pi\" is not supported by this daemon yet: "
                                      "run an agent from a profile, or a command as kind \"shell\"")
    cwd = args["cwd"]
    if not os.path.isabs(cwd):
        raise bad_request(f"cwd must be an absolute path, not {cwd!r}")
    if not os.path.isdir(cwd):
        raise bad_request(f"cwd {cwd} is not a directory")
    profile = args["profile"]
    term = profiles.check_term(args["term"], linear=True)     # a client's patterns: RE2
    # The first task: the spec's term.typeTask, or roost's own `task` (the CLI's).
    task = args["task"]
    if task is None and term is not None:
        task = term.get("typeTask")
        if isinstance(task, str):
            DISPATCH_ARGS.fields["task"].check(task, "task")     # typed as the first reply
    task = task.strip() if task else None
    if term is not None:
        # roost types the task itself (roost.jobs.replies): the screen reader never does.
        term.pop("typeTask", None)
    launch = {"argv": args["command"], "env": args["env"], "term": term}
    for field in ("resumeCommand", "resumable", "protocol", "taskInArgv", "origin", "rows", "cols",
                  # The person's own shell (issue 16): its processes are the person. The
                  # launcher keeps it only for the person's own dispatch.
                  "person",
                  # roost's own (issue 26): `false` runs it without a jail; the person's dispatch only.
                  "sandbox"):
        launch[field] = args[field]
    if profile:
        launch["profile"] = profile
        type_task = profiles.apply(launch, config, task)
    elif not launch["argv"]:
        raise bad_request("command must not be empty (or name a profile)")
    else:
        # A command's task is typed once it first waits for text, unless its argv has it.
        type_task = None if launch["taskInArgv"] else task
    if args["restart"]:
        launch["restart"] = args["restart"]      # "always": started again after the machine restarts
    sessions.give(launch)
    if launch["protocol"] is None:
        launch["protocol"] = False
    if launch["person"] is None:
        launch["person"] = False
    if launch["sandbox"] is not False:
        launch.pop("sandbox")
    if launch["resumable"] is None:
        launch["resumable"] = bool(launch["resumeCommand"])
    launching.check_runnable(builtin_profiles.expand(launch["argv"][:1])[0], cwd, {**os.environ, **args["env"]})
    missing = builtin_profiles.missing_files(launch["argv"] + (launch["resumeCommand"] or []))
    if missing:
        raise bad_request(f"cannot run {launch['argv'][0]}: roost's own file {missing[0]} is missing "
                          "(an incomplete install of roost)")
    name = launching.fold_name(args["name"]) or launching.default_name(launch["argv"], profile)
    fields = {
        "cwd": cwd,
        "kind": "shell",
        "profile": profile or "shell",
        "name": launching.check_name(name),
        "sessionFile": args["sessionFile"],
        "model": args["model"],
        "thinking": args["thinking"],
        "task": launching.one_line(task, TASK_LIMIT) if task else None,
    }
    if launch["person"]:
        fields["person"] = True
    for optional in ("fanout", "agent", "schedule"):
        if args[optional] is not None:
            fields[optional] = args[optional]
    worktree = args["worktree"]
    if worktree is not None:
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
                raise RoostError(UNAUTHORIZED, "only the person's own dispatch may make a job the person's shell")
            launch["person"] = False
            fields.pop("person", None)
        if launch.get("sandbox") is False and not by_person:
            # A jailed agent's spawn would otherwise start its way out of its jail.
            raise RoostError(UNAUTHORIZED, "only the person's own dispatch may run a job without a jail")
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
