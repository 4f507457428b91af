"""What every git run of roost's sets so that git runs nothing configured (issue 26 item 4).

A task's worktree is written by its agent, and so may be its repository's git directory
(an agent commits): config, attributes, hooks, a nested repository's `.git`. The daemon's
git runs outside every job, as the person; a program git started for it from that config
would be the person too. So every run sets, over every config file git may read:

- no hook (`core.hooksPath` at /dev/null, where none can be; `--no-verify` where a command
  takes it), no fsmonitor (a program git runs on every status);
- no signing (`commit.gpgSign`, `tag.gpgSign`, `merge.verifySignatures` off: gpg.program
  would be a program of the config's choosing), no pager, no credential helper;
- no transport at all (`GIT_ALLOW_PROTOCOL` names none, which git lets override any
  config): a partial clone's lazy fetch, a remote's `uploadpack`, an `ext::` URL cannot
  start anything; `git push` (remote.py) is the one run that reaches a remote;
- no submodule recursion (`submodule.recurse` off, and status and diff are asked with
  `--ignore-submodules=dirty`: a nested repository's HEAD is read, its files and config
  never; git's own status in a submodule would get none of these settings);
- no gc or maintenance started behind a command, no replace refs (what a commit is stays
  what its object says);
- diffs for reading with `--no-ext-diff --no-textconv` (changes.py).

Filter, merge and diff drivers are named by attributes and defined by config under any
name, which settings cannot reach: the runs that read or write a tree's files (`content`
below) get the repository's config replaced by a copy that keeps only plain settings
(repo_config.py), inside a jail of their own (jail.py).
"""

import os

# `-c` settings, given after every config file git reads, so they win.
SETTINGS = (
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=" + os.devnull,
    "-c", "core.pager=cat",
    "-c", "core.useReplaceRefs=false",
    "-c", "credential.helper=",
    "-c", "diff.external=",
    "-c", "submodule.recurse=false",
    "-c", "status.submoduleSummary=false",
    "-c", "commit.gpgSign=false",
    "-c", "tag.gpgSign=false",
    "-c", "merge.verifySignatures=false",
    "-c", "merge.renormalize=false",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
)

# Set in every run's environment (git reads them over its config).
ENVIRONMENT = {
    "GIT_ALLOW_PROTOCOL": "none",     # a list naming no transport: every one refused
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
}
# Taken out of it: the user's shell may set them, and each would start a program (a run
# that reaches a remote keeps the ones that are how it gets there).
UNSET = ("GIT_EXTERNAL_DIFF",)
UNSET_LOCAL = ("GIT_SSH", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS")

# Commands that read refs and objects only: no file of a tree is read or written, no
# merge is made, so no filter or merge driver can be reached and the settings suffice.
# Anything else counts as `content` (the safe default for a command added later).
_REFS_AND_OBJECTS = frozenset({
    "cat-file", "check-ref-format", "commit-tree", "config", "diff-tree", "for-each-ref", "ls-files", "merge-base", "push", "remote",
    "rev-list", "rev-parse", "show-ref", "symbolic-ref", "update-ref", "var", "version",
})
_WORKTREE_LISTS = frozenset({"list", "prune"})


def subcommand(args):
    """The git command of `args` (`-c` settings and global options before it skipped)."""
    index = 0
    while index < len(args):
        word = args[index]
        if word == "-c":
            index += 2
            continue
        if not word.startswith("-"):
            return word, args[index + 1:]
        index += 1
    return None, []


def touches_content(args):
    """Whether a run of `args` may read or write a tree's files or make a merge."""
    name, rest = subcommand(args)
    if name in _REFS_AND_OBJECTS:
        return False
    if name == "worktree":
        options = rest[:rest.index("--")] if "--" in rest else rest
        if options[:1] == ["remove"] and "--force" in options:
            return False        # deletes files, reads none (without --force it runs a status)
        return not (rest and rest[0] in _WORKTREE_LISTS)
    if name == "diff":
        # Between two commits (`A...B`) or the index and HEAD: no file of a tree is read.
        options = rest[:rest.index("--")] if "--" in rest else rest
        return not any("..." in word or word in ("--cached", "--staged") for word in options)
    return True


def environ(env, remote=False):
    """`env` with the settings above: what every git run of roost's is given. A run that
    reaches a remote (`remote`: `git push`) keeps the user's transports and credentials."""
    for name in UNSET + (() if remote else UNSET_LOCAL):
        env.pop(name, None)
    env.update(ENVIRONMENT)
    if remote:
        del env["GIT_ALLOW_PROTOCOL"]
    return env


def settings(remote=False):
    """The `-c` settings of a run (`remote`: without the one that drops credential helpers)."""
    if not remote:
        return list(SETTINGS)
    kept = list(SETTINGS)
    at = kept.index("credential.helper=")
    del kept[at - 1:at + 1]
    return kept
