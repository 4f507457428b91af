"""Setting right a checkout that a land, killed half-way, left behind.

Before a land changes any file of base's checkout it records base, the old and the new
commit and the checkout in its lock file (landing.py, step 4). If it died before it
cleared that record, the checkout may be anywhere between the two: some files written,
its index old or new, its ref old or new. The ref is the truth (it moved or it did not,
atomically), so the checkout is brought to the ref's commit: only the files that differ
between old and new, and only when each of them, in the index and on disk, is exactly
old's or new's version, which is what roost wrote or what was there before. A file with
anything else in it is someone's work: then nothing is touched, the record is dropped,
and the note names the files for a person.

Rare work, so it favours being exact over being fast: git hashes the files (with the
repository's filters, as `git add` would see them).
"""

import logging
import os
import stat

from roost.git import command
from roost.git.changes import worktree_head
from roost.git.checkouts import checkout_of
from roost.git.errors import GitError
from roost.git.repository import ref_sha

log = logging.getLogger(__name__)

CHUNK = 500         # paths per run of git, well under any argv limit


def repair(repo, lock, target=None):
    """Bring the checkout of an unfinished land (the lock's record) to its ref, or to
    `target` (the old commit, when the land itself gives up); returns what was done (""
    when there was no record or nothing to do). Call under the lock."""
    landing = lock.landing()
    if not landing:
        return ""
    try:
        note = _repair(repo, landing, target)
    finally:
        lock.clear()
    if note:
        log.warning("%s", note)
    return note


def _repair(repo, landing, target):
    base, old, new, checkout = (landing.get(key) for key in ("base", "old", "new", "checkout"))
    if not all(isinstance(value, str) and value for value in (base, old, new, checkout)):
        return f"an interrupted land left a record roost cannot read ({landing!r}): dropped"
    where = f"an interrupted land of {base} ({old[:12]} -> {new[:12]})"
    if target is None:
        target = ref_sha(repo, base)
        if target not in (old, new):
            return f"{where}: {base} is at {str(target)[:12]} since; {checkout} left as it is"
    if not os.path.isdir(checkout):
        return f"{where}: {checkout} no longer has {base} checked out; left as it is"
    try:
        checkout = checkout_of(repo, checkout)      # the record names a path: git runs by the repository's
    except GitError as error:
        return f"{where}: {error.text}; left as it is"
    if worktree_head(checkout)[0] != base:
        return f"{where}: {checkout} no longer has {base} checked out; left as it is"
    changed = _changed_between(checkout, old, new)
    index = _index_entries(checkout, list(changed))
    disk = _disk_versions(checkout, changed)
    foreign, to_fix = [], []
    for path, (old_sha, new_sha) in changed.items():
        in_index = index.get(path, (None,))[0]      # ("conflict",) is no commit's version
        if in_index not in (old_sha, new_sha) or disk[path] not in (old_sha, new_sha):
            foreign.append(path)
            continue
        wanted = new_sha if target == new else old_sha
        if in_index != wanted or disk[path] != wanted:
            to_fix.append((path, wanted))
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        return f"{where}: {checkout} holds changes roost did not make ({shown}); left as it is"
    if not to_fix:
        return ""
    _restore(checkout, target, to_fix)
    return f"{where} left {checkout} part-way; {len(to_fix)} files set back to {base}'s {target[:12]}"


def _changed_between(checkout, old, new):
    """{path: (sha in old or None, sha in new or None)}; submodules left out (a land
    never writes inside one)."""
    done = command.run(["diff-tree", "-r", "-z", "--no-renames", old, new], checkout, what="git diff-tree")
    fields = done.stdout.split(b"\0")
    changed = {}
    for header, path in zip(fields[0::2], fields[1::2]):
        if not header.startswith(b":"):
            continue
        old_mode, new_mode, old_sha, new_sha = header[1:].split(b" ")[:4]
        if b"160000" in (old_mode, new_mode):
            continue
        changed[os.fsdecode(path)] = (_sha_or_none(old_sha), _sha_or_none(new_sha))
    return changed


def _sha_or_none(raw):
    text = raw.decode("ascii")
    return None if set(text) == {"0"} else text


def _index_entries(checkout, paths):
    """{path: (sha,)} of the index at stage 0; ("conflict",) for a path in conflict."""
    entries = {}
    wanted = set(paths)
    for start in range(0, len(paths), CHUNK):
        done = command.run(["--literal-pathspecs", "ls-files", "--stage", "-z", "--", *paths[start:start + CHUNK]],
                           checkout, what="git ls-files --stage")
        for record in done.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            path = os.fsdecode(raw_path)
            if path not in wanted:
                continue
            _mode, sha, stage = meta.decode("ascii").split(" ")
            entries[path] = ("conflict",) if stage != "0" else (sha,)
    return entries


def _disk_versions(checkout, changed):
    """{path: the blob sha of what is on disk there, or None when nothing is}. A path
    that is neither a file nor a link gets a value no commit has."""
    versions, files = {}, []
    for path in changed:
        full = os.path.join(checkout, path)
        try:
            mode = os.lstat(full).st_mode
        except (FileNotFoundError, NotADirectoryError):
            versions[path] = None
            continue
        if stat.S_ISLNK(mode):
            versions[path] = _hash(checkout, os.fsencode(os.readlink(full)), path)
        elif stat.S_ISREG(mode):
            files.append(path)
        elif stat.S_ISDIR(mode):
            versions[path] = None       # a directory where a file was: the file is not there
        else:
            versions[path] = "not a file"
    plain = [path for path in files if "\n" not in path]
    for start in range(0, len(plain), CHUNK):
        chunk = plain[start:start + CHUNK]
        done = command.run(["hash-object", "--stdin-paths"], checkout, input=b"".join(
            os.fsencode(path) + b"\n" for path in chunk), what="git hash-object")
        versions.update(zip(chunk, done.text().split()))
    for path in files:
        if "\n" in path:
            with open(os.path.join(checkout, path), "rb") as handle:
                versions[path] = _hash(checkout, handle.read(), path)
    return versions


def _hash(checkout, data, path):
    return command.run(["hash-object", "--stdin", "--path=" + path], checkout, input=data,
                       what="git hash-object").text().strip()


def _restore(checkout, target, to_fix):
    present = [path for path, sha in to_fix if sha is not None]
    absent = [path for path, sha in to_fix if sha is None]
    for start in range(0, len(present), CHUNK):
        command.run(["--literal-pathspecs", "checkout", target, "--", *present[start:start + CHUNK]], checkout,
                    timeout=command.WORK_S, what="git checkout")
    for start in range(0, len(absent), CHUNK):
        command.run(["--literal-pathspecs", "rm", "--cached", "--quiet", "--ignore-unmatch", "--",
                     *absent[start:start + CHUNK]], checkout, what="git rm --cached")
    for path in absent:
        _remove_file(checkout, path)


def _remove_file(checkout, path):
    checkout = os.fspath(checkout)
    full = os.path.join(checkout, path)
    try:
        os.unlink(full)
    except FileNotFoundError:
        return
    except IsADirectoryError:
        return
    parent = os.path.dirname(full)
    top = os.path.realpath(checkout)
    while os.path.realpath(parent) != top and parent.startswith(checkout):
        try:
            os.rmdir(parent)        # only an empty directory, which the land made
        except OSError:
            break
        parent = os.path.dirname(parent)
