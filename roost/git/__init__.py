"""Git for the task board (M47, M54-M60): the safe, tested operations a task's branch,
worktree and merge are made of. Every git run goes through command.py (an argv list,
the user's environment, no prompt possible, a bounded timeout) and process.py (a
process of its own, waited on cooperatively under gevent); dulwich's blocking reads go
through blocking.py."""
