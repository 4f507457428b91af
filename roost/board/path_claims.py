"""Claims on paths (issue 20, the alp protocol's pins): where a task says it will work,
as globs relative to its repository, kept on the task as `paths: {globs, by}`.

A session claims paths for the task it holds (a person for any task, and `roost task
add --paths` says them at the start); another session's claim on a file a workspace
edits is an overlap from the start (roost.board.radar). A session's claim goes with its
claim of the task: released with it. A person's stays until released.

Globs: `*` and `?` within one path segment, `**` across segments, and a plain path
names the file or everything under the directory (`src/board`). At most 50 a task.
"""

import fnmatch

import gevent

from roost.errors import UNSUPPORTED, RoostError, bad_request

MAX_GLOBS = 50
MAX_GLOB_CHARS = 300
YIELD_EVERY = 500           # paths matched between two turns of the loop


def check_globs(value):
    """The globs of a claim, checked: a list of 1 to 50 relative paths, none leaving
    the repository; bad_request otherwise."""
    if not isinstance(value, list) or not value:
        raise bad_request("paths must be a list of globs relative to the repository")
    if len(value) > MAX_GLOBS:
        raise bad_request(f"at most {MAX_GLOBS} paths are claimed for a task (got {len(value)})")
    globs = []
    for glob in value:
        if not isinstance(glob, str) or not glob.strip() or len(glob) > MAX_GLOB_CHARS:
            raise bad_request(f"a path is a glob of 1 to {MAX_GLOB_CHARS} characters: {str(glob)[:80]!r}")
        glob = glob.strip().rstrip("/")
        if any(ord(char) < 32 or ord(char) == 127 for char in glob):
            raise bad_request(f"a path holds no control characters: {glob[:80]!r}")
        if glob.startswith("/") or ".." in glob.split("/"):
            raise bad_request(f"a path is relative to the repository and stays in it: {glob[:80]!r}")
        if glob.startswith("./"):
            glob = glob[2:]
        if glob and glob not in globs:
            globs.append(glob)
    if not globs:
        raise bad_request("paths must name at least one path")
    return globs


def _matches(parts, path_parts):
    """Whether glob segments `parts` name the path (its segments) or a directory of it.
    Segment by segment (fnmatch within one, `**` for any number of them), so the cost is
    bounded by segments times segments: no pattern can make it backtrack for long."""
    reach = [True] + [False] * len(path_parts)      # reach[j]: the glob so far names path_parts[:j]
    for part in parts:
        if part == "**":
            for index in range(1, len(reach)):
                reach[index] = reach[index] or reach[index - 1]
        else:
            reach = [False] + [reach[index - 1] and fnmatch.fnmatchcase(path_parts[index - 1], part)
                               for index in range(1, len(reach))]
    return any(reach[1:])


def matching(globs, files):
    """The files of `files` (repository-relative paths) that one of `globs` names."""
    split = [glob.split("/") for glob in globs]
    found = set()
    for count, path in enumerate(files):
        if count % YIELD_EVERY == YIELD_EVERY - 1:
            gevent.sleep(0)         # a worktree of thousands of changed files holds no one up
        path_parts = path.split("/")
        if any(_matches(parts, path_parts) for parts in split):
            found.add(path)
    return found


def claim(task, actor, globs):
    """The task's paths claimed by `actor` (a session for a task it holds, a person for
    any); replaces what was claimed before."""
    if not actor.person:
        owner = task.get("owner") or {}
        if task["state"] != "claimed" or owner.get("id") != actor.peer.id:
            raise RoostError(UNSUPPORTED, f"task #{task['id']} is not yours: a session claims paths for a "
                                            "task it holds (claim the task first)")
    if task["state"] in ("done", "dropped"):
        raise bad_request(f"task #{task['id']} is {task['state']}: no paths are claimed for it")
    task["paths"] = {"globs": globs, "by": actor.by}
    return task


def release(task, actor):
    """The task's claim on paths given up (its holder's, or a person's)."""
    if not task.get("paths"):
        raise bad_request(f"task #{task['id']} claims no paths")
    if not actor.person:
        owner = task.get("owner") or {}
        if owner.get("id") != actor.peer.id:
            raise RoostError(UNSUPPORTED, f"task #{task['id']} is not yours: only its holder releases its paths")
    task.pop("paths", None)
    return task


def released_with_claim(task):
    """A session's claim on paths goes with its claim of the task (called as it is
    released); a person's stays."""
    if ((task.get("paths") or {}).get("by") or {}).get("whoId"):
        task.pop("paths", None)


def claimant(task):
    """The session id whose claim the task's paths are, or None (a person's, or none)."""
    return ((task.get("paths") or {}).get("by") or {}).get("whoId")
