"""The one error of roost.git: a refusal or a failure of git, with git's own words.

`GitError` is a RoostError, so an op that lets one through answers with a fitting code;
`reason` says which refusal it is in words a caller can branch on (the board turns
`conflict` into a stage, `dirty` into its own text), and the text carries git's stderr.
"""

from roost.errors import RoostError

# reason -> the spec's code an op answers with when it passes the error on unchanged
CODES = {
    "bad_request": "bad_request",     # an argument no git operation could take
    "invalid_name": "bad_request",    # a branch or ref name git's rules refuse
    "not_a_repository": "bad_request",
    "dirty": "bad_request",           # uncommitted or untracked changes where none may be
    "no_identity": "bad_request",     # git knows no user.name / user.email
    "not_found": "not_found",         # no such branch, ref or worktree
    "exists": "conflict",             # a branch, or a path, that is there already
    "checked_out": "conflict",        # the branch is checked out (or rebased) somewhere
    "unmerged": "conflict",           # commits that are not in base would be lost
    "not_synced": "conflict",         # base moved on: sync the branch with it first
    "moved": "conflict",              # a ref was not where it was read a moment ago
    "conflict": "conflict",           # a merge stopped on conflicting changes
    "busy": "busy",                   # the repository's lock is held, or a rebase runs
    "timeout": "busy",                # git took longer than its bound and was killed
    "unverified": "conflict",         # the branch is not at the commit that was verified
    "tampered": "conflict",           # a worktree's .git points elsewhere than git made it
    "failed": "internal",             # git failed for a reason of its own (see the text)
}


class GitError(RoostError):
    """git refused or failed. `reason` is a key of CODES; `stderr` is git's, as text."""

    def __init__(self, reason, text, argv=None, returncode=None, stderr=""):
        stderr = (stderr or "").strip()
        full = f"{text}: {stderr}" if stderr and stderr not in text else text
        super().__init__(CODES.get(reason, "internal"), full)
        self.reason = reason
        self.argv = list(argv or [])
        self.returncode = returncode
        self.stderr = stderr

    def __repr__(self):
        return f"GitError({self.reason!r}, {self.text!r})"
