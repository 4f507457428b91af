"""A task's other way out (M60): a pull request instead of a local merge.

`pr` is a person's, from review. Dry, it says what it will do and answers the branch's
tip as `hash`; with that hash (the branch must not have moved since) it pushes the
branch to its remote and runs `gh pr create`, and records `workspace.pr`. The task stays
in review: whether the request is merged is GitHub's to know, and a branch merged there
and pulled is marked merged when the board is listed.
"""

from roost import git
from roost.board import task_git
from roost.clock import now_ms
from roost.errors import CONFLICT, RoostError, bad_request
from roost.git.remote import default_remote

BODY = 4000


class Exits:
    def __init__(self, actions, locks):
        self.actions = actions
        self.locks = locks

    def pull_request(self, actor, task_id, dry=False, wanted_hash=None):
        """(task, note, hash)."""
        task = self.actions.task(actor, task_id)
        with self.locks.lock(task_id):
            workspace = task_git.workspace(task, "review")
            repo = task_git.repository(task)
            tip = git.require_sha(repo, workspace["branch"])
            unverified = task_git.unverified(task)
            if unverified:
                raise RoostError(CONFLICT, f"task #{task_id}: {unverified}")
            remote = default_remote(repo)
            plan = (f"push {workspace['branch']} ({tip[:12]}) to {remote}, then `gh pr create --base "
                    f"{workspace['baseRef']} --head {workspace['branch']}` titled {task['title']!r}")
            if dry:
                return task, f"would {plan}", tip
            if not isinstance(wanted_hash, str) or not wanted_hash:
                raise bad_request("pr takes the hash its dry run answered (the branch's tip it showed)")
            if wanted_hash != tip:
                raise RoostError(CONFLICT, f"task #{task_id}'s branch moved since the dry run "
                                             f"({wanted_hash[:12]} -> {tip[:12]}): look again")
            git.push_branch(repo, workspace["branch"], remote, tip=tip)      # the commit reviewed, exactly
            # gh runs git where it starts: the main checkout, never the worktree (its .git
            # is the agent's to change)
            url = git.open_pull_request(repo.root,
                                        workspace["baseRef"], workspace["branch"], task["title"], self.body(task))
            workspace["pr"] = {"url": url, "hash": tip, "remote": remote, "at": now_ms()}
            self.actions.changed(actor, task, "pr", f": {url}")
        return task, f"opened {url}", tip

    @staticmethod
    def body(task):
        parts = [task.get("detail") or "", f"Result: {task['result']}" if task.get("result") else "",
                 f"Task #{task['id']} on roost's board."]
        return "\n\n".join(part for part in parts if part)[:BODY]
