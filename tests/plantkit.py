"""What an agent may plant for the daemon's git to run (issue 26 item 4): every program a
repository's config, its attributes, its hooks or a nested repository can name, each
the same marker program, which leaves a file named after what ran it in the repository's
git dir (a place a jailed git may write, so a run there is seen as well) and passes its
input through. `markers` says what ran."""

import os

from gitkit import git, write

MARK = """#!/bin/sh
name=$1; shift
: > "{markers}/$name.$$"
case $name in
    *filter*) cat ;;                                    # a filter: its input, unchanged
    *) if [ $# -gt 0 ] && [ -f "$1" ]; then cat "$1"; fi ;;
esac
"""
HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-merge-commit", "post-merge",
         "post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc", "pre-push")


def plant_everything(common_dir, worktree, git_dir):
    """Plant in a repository (its `common_dir`), one of its worktrees (`worktree`, whose
    git dir is `git_dir`) and a repository nested in that worktree. Returns the marker
    program's path. Nothing is committed: the caller commits what it wants base to hold."""
    markers = os.path.join(common_dir, "markers")
    os.makedirs(markers, exist_ok=True)
    mark = os.path.join(common_dir, "mark.sh")
    write(mark, MARK.format(markers=markers))
    os.chmod(mark, 0o755)
    config = os.path.join(common_dir, "config")
    settings = {
        "filter.top.clean": f"{mark} filter-clean", "filter.top.smudge": f"{mark} filter-smudge",
        "filter.top.required": "true", "filter.proc.process": f"{mark} filter-process",
        "diff.tc.textconv": f"{mark} textconv", "diff.ext.command": f"{mark} diff-command",
        "diff.external": f"{mark} diff-external", "merge.md.driver": f"{mark} merge-driver %A %O %B",
        "core.fsmonitor": f"{mark} fsmonitor", "core.hooksPath": os.path.join(worktree, ".hooks"),
        "core.pager": f"{mark} pager", "core.sshCommand": f"{mark} ssh", "credential.helper": f"!{mark} credential",
        "commit.gpgSign": "true", "gpg.program": f"{mark} gpg", "gc.auto": "1",
        "include.path": os.path.join(worktree, ".evil.config"), "extensions.worktreeConfig": "true",
    }
    for key, value in settings.items():
        git(common_dir, "config", "--file", config, key, value)
    git(common_dir, "config", "--file", config, "core.repositoryformatversion", "1")
    write(os.path.join(worktree, ".evil.config"), f'[filter "inc"]\n\tclean = {mark} include-filter\n'
                                                  f'\tsmudge = {mark} include-filter\n')
    write(os.path.join(git_dir, "config.worktree"), f'[filter "wt"]\n\tclean = {mark} worktree-config-filter\n'
                                                   f'\tsmudge = {mark} worktree-config-filter\n')
    write(os.path.join(worktree, ".gitattributes"),
          "* filter=top merge=md diff=ext\n*.txt filter=inc diff=tc\n*.md filter=wt\n*.proc filter=proc\n")
    for where in (os.path.join(common_dir, "hooks"), os.path.join(worktree, ".hooks")):
        for hook in HOOKS:
            write(os.path.join(where, hook), f"#!/bin/sh\nexec {mark} hook-{hook} </dev/null\n")
            os.chmod(os.path.join(where, hook), 0o755)
    nest(worktree, mark)
    return mark


def nest(worktree, mark):
    """The issue's reproduction: a gitlink and a real `sub/.git/` whose config has a filter
    that `* filter=x` in `sub/.gitattributes` applies, and `.gitmodules` saying to look in."""
    sub = os.path.join(worktree, "sub")
    os.makedirs(sub, exist_ok=True)
    git(sub, "init", "--quiet", "--initial-branch=main")
    git(sub, "config", "user.name", "Nested")
    git(sub, "config", "user.email", "nested@roost.invalid")
    write(os.path.join(sub, "f"), "nested\n")
    write(os.path.join(sub, ".gitattributes"), "* filter=x\n")
    git(sub, "add", "-A")
    git(sub, "commit", "--quiet", "-m", "nested")
    git(sub, "config", "filter.x.clean", f"{mark} nested-filter")
    git(sub, "config", "core.fsmonitor", f"{mark} nested-fsmonitor")
    write(os.path.join(worktree, ".gitmodules"), '[submodule "sub"]\n\tpath = sub\n\turl = ./sub\n\tignore = none\n')
    git(worktree, "update-index", "--add", "--cacheinfo", f"160000,{git(sub, 'rev-parse', 'HEAD')},sub")
    touch_nested(worktree)


def touch_nested(worktree):
    """Change the nested repository's tracked file, so a status there must clean it."""
    path = os.path.join(worktree, "sub", "f")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("more\n")
    os.utime(path, (1, 1))


def markers(common_dir):
    """What ran: the names the marker program was run with."""
    try:
        return sorted({name.rsplit(".", 1)[0] for name in os.listdir(os.path.join(common_dir, "markers"))})
    except FileNotFoundError:
        return []


def clear_markers(common_dir):
    for name in os.listdir(os.path.join(common_dir, "markers")):
        os.unlink(os.path.join(common_dir, "markers", name))
