"""The order of a merge train that does not stop (issue 20): what git predicts to
conflict goes last, said before the train starts, and the rest checked again against
each new base as the train lands.

A task goes last when git predicts (roost.git.overlap.predict_merge, the radar's
`git merge-tree`) that the commit it would land conflicts with its base, or with the
commit of a task of the same repository that lands before it; the others keep the
order they were given. On a git too old to predict, the order stays as given, and the
plan says so.
"""

from roost import git
from roost.git import overlap as git_overlap
from roost.git.errors import GitError


def landing_tip(repo, task):
    """The commit the train would land for the task: the one verified and reviewed."""
    workspace = task["workspace"]
    return workspace.get("verifiedTip") or git.ref_sha(repo, workspace["branch"])


def _predict(repo, one, other):
    try:
        return git_overlap.predict_merge(repo, one, other)
    except GitError as error:
        return git_overlap.Prediction(None, f"git could not predict the merge: {error.text}")


def _files(conflicts):
    return ", ".join(conflicts[:5]) + (" ..." if len(conflicts) > 5 else "")


class Plan:
    """The train's order (`tasks`), why (`lines`), and the ids put last."""

    def __init__(self, tasks, lines, last):
        self.tasks, self.lines, self.last = tasks, lines, last


def plan(tasks, repository_of):
    """The Plan of landing `tasks` (in review, in the order given); `repository_of(task)`
    is the task's repository."""
    kept, last, lines, unknown = [], [], [], None
    for task in tasks:
        repo = repository_of(task)
        workspace = task["workspace"]
        tip = landing_tip(repo, task)
        base = git.ref_sha(repo, workspace["baseRef"])
        why = None
        found = _predict(repo, base, tip) if tip and base else git_overlap.Prediction(None, "no commit to land")
        if found.conflicts is None:
            unknown = unknown or found.note
        elif found.conflicts:
            why = f"git predicts a conflict with {workspace['baseRef']} in {_files(found.conflicts)}"
        for earlier in kept:
            if why is not None or earlier.get("project") != task.get("project"):
                continue
            against = _predict(repo, landing_tip(repo, earlier), tip)
            if against.conflicts:
                why = f"git predicts a conflict with #{earlier['id']} in {_files(against.conflicts)}"
        if why is None:
            kept.append(task)
        else:
            last.append(task)
            lines.append(f"#{task['id']} goes last: {why}")
    if unknown:
        lines.append(f"the order is as given where git could not say ({unknown})")
    ordered = kept + last
    lines.insert(0, "order: " + ", ".join(f"#{task['id']}" for task in ordered))
    return Plan(ordered, lines, {task["id"] for task in last})


def recheck(remaining, last, repository_of):
    """After a land: the remaining tasks against the base it left; one git now predicts
    to conflict with it goes last (once). (the new order, lines saying what moved)."""
    moved, lines = [], []
    for task in remaining:
        if task["id"] in last:
            continue
        repo = repository_of(task)
        base = git.ref_sha(repo, task["workspace"]["baseRef"])
        tip = landing_tip(repo, task)
        found = _predict(repo, base, tip) if base and tip else git_overlap.Prediction(None)
        if found.conflicts:
            moved.append(task)
            last.add(task["id"])
            lines.append(f"#{task['id']} goes last: on the new {task['workspace']['baseRef']} git predicts a "
                         f"conflict in {_files(found.conflicts)}")
    return [task for task in remaining if task not in moved] + moved, lines
