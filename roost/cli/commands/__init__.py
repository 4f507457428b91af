"""One module per subcommand; each module's docstring is its docopt usage and its
`main(opts, ctx)` runs it (roost.cli.main lists them, roost.cli.context runs them,
roost.cli.completing completes their words). The table of them is here, below both, so
neither imports the other for it."""


# name -> (module under roost.cli.commands, one-line summary), in the order `roost --help` lists them.
COMMANDS = {
    "status": ("status", "show the daemon's state: pid, version, jobs, damaged files"),
    "ping": ("ping", "check that the daemon answers (starts it when none does)"),
    "daemon": ("daemon", "run the daemon (detached; --foreground keeps it here)"),
    "shutdown": ("shutdown", "stop the daemon (--keep-workers leaves the jobs running)"),
    "agent-file": ("agent_file", "write roost_agent.py, the agent client, into a directory"),
    "run": ("run", "start a job: a command, or an agent from a profile"),
    "profiles": ("profiles", "list the agent profiles: the built-in ones and roost.json's"),
    "doctor": ("doctor", "check roost (home, socket, keeper, version, sinks) and each profile's agent"),
    "hub": ("hub", "the whole fleet on one live screen (also `roost` alone in a terminal)"),
    "list": ("list", "list the jobs"),
    "notify": ("notify", "notifications: `test` sends one to each sink"),
    "attach": ("attach", "join a job's live terminal (detach with Ctrl-q)"),
    "peek": ("peek", "print a job's screen without attaching"),
    "timeline": ("timeline", "a job's flight recorder: its states and why, what was typed, its runs"),
    "explain": ("explain", "why a job's row says what it says now"),
    "reply": ("reply", "send a job a reply (typed, or delivered to a protocol agent)"),
    "keys": ("keys", "press keys in a job's terminal (Down, Enter, C-c: to answer a dialog)"),
    "events": ("events", "what happened across the jobs (-f follows it live)"),
    "task": ("task", "the shared task board: add, list, claim, done, ..."),
    "schedule": ("schedule", "sessions on a clock: add, list, rm, pause, resume, run"),
    "concierge": ("concierge", "the agent that watches the sessions for you: on, off, status, ask, policy"),
    "peers": ("peers", "an agent's: the sessions this job may message"),
    "send": ("send", "an agent's: send another session a message"),
    "watch": ("watch", "an agent's: be told when another session is idle or ended"),
    "spawn": ("spawn", "an agent's: start a child of this job"),
    "mcp": ("mcp", "an agent's: the MCP server of roost's tools (peers, send, watch, the board)"),
    "stop": ("stop", "stop a job and every process it started"),
    "rm": ("rm", "remove an ended job and its directory"),
    "respawn": ("respawn", "start an ended job again"),
    "pin": ("pin", "pin a job (listed first, never reaped)"),
    "limits": ("limits", "the jobs parked at their usage limit, and their resume at the reset (off, on)"),
    "rename": ("rename", "rename a job"),
    "proxy": ("proxy", "bridge stdin/stdout to this machine's daemon (what --host runs over ssh)"),
    "service": ("service", "start roost at login: install or remove a systemd --user unit"),
    "completion": ("completion", "print the shell completion script (bash, zsh, fish)"),
}
