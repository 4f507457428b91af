#!/bin/sh
# Installs roost from its release files: the one file roost-<version>-linux-<arch>,
# checked against SHA256SUMS, put in ~/.local/bin (or the directory given).
#
#   sh install.sh [--from DIR|URL] [--dir DIR]
#   curl -fsSL URL/install.sh | sh -s -- --from URL
#
#   --from  where the release files are: a directory (default: the one this script is in,
#           else the current one) or a URL to download them from (with curl or wget)
#   --dir   where to put `roost` (default: ~/.local/bin)
#
# Safe over a running daemon: the file is replaced by a rename, and the daemon runs from
# its own unpacked copy, so it and its jobs keep running. The next roost command says the
# daemon is older than the CLI; `roost shutdown --keep-workers` and any command then
# start the new daemon, which adopts the jobs.
set -eu

say() {
    printf '%s\n' "$*"
}

fail() {
    printf 'roost install: %s\n' "$*" >&2
    exit 1
}

from=
dest=
while [ $# -gt 0 ]; do
    case $1 in
        --from) [ $# -ge 2 ] || fail "--from needs a directory or a URL"; from=$2; shift 2 ;;
        --from=*) from=${1#--from=}; shift ;;
        --dir) [ $# -ge 2 ] || fail "--dir needs a directory"; dest=$2; shift 2 ;;
        --dir=*) dest=${1#--dir=}; shift ;;
        -h|--help) sed -n '2,16s/^# \{0,1\}//p' "$0" 2>/dev/null || true; exit 0 ;;
        *) fail "unknown argument $1 (see the top of this script)" ;;
    esac
done

[ "$(uname -s)" = Linux ] || fail "roost's release runs on Linux only"
arch=$(uname -m)
if [ -z "$dest" ]; then
    [ -n "${HOME:-}" ] || fail "HOME is not set: say where with --dir DIR"
    dest=$HOME/.local/bin
fi
if [ -z "$from" ]; then
    case $0 in
        */install.sh) from=$(cd "$(dirname "$0")" && pwd) ;;
        *) from=$(pwd) ;;
    esac
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/roost-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

fetch() { # fetch URL FILE
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL -o "$2" "$1"
    elif command -v wget >/dev/null 2>&1; then
        wget -q -O "$2" "$1"
    else
        fail "neither curl nor wget is installed to download $1"
    fi
}

case $from in
    http://*|https://*)
        base=${from%/}
        fetch "$base/SHA256SUMS" "$work/SHA256SUMS" || fail "cannot download $base/SHA256SUMS"
        ;;
    *)
        [ -d "$from" ] || fail "no directory $from"
        [ -f "$from/SHA256SUMS" ] || fail "no SHA256SUMS in $from: download it beside the roost file"
        cp "$from/SHA256SUMS" "$work/SHA256SUMS"
        ;;
esac

# The one file for this machine, as SHA256SUMS names it.
line=$(grep -E "^[0-9a-f]{64}  roost-[^ /]+-linux-$arch\$" "$work/SHA256SUMS" | head -n 1) ||
    fail "SHA256SUMS names no roost file for linux-$arch"
want=${line%% *}
name=${line#*  }
case $from in
    http://*|https://*) fetch "$base/$name" "$work/$name" || fail "cannot download $base/$name" ;;
    *) [ -f "$from/$name" ] || fail "no $name in $from"; cp "$from/$name" "$work/$name" ;;
esac

if command -v sha256sum >/dev/null 2>&1; then
    got=$(sha256sum "$work/$name" | cut -d' ' -f1)
elif command -v shasum >/dev/null 2>&1; then
    got=$(shasum -a 256 "$work/$name" | cut -d' ' -f1)
else
    fail "neither sha256sum nor shasum is installed to check $name"
fi
[ "$got" = "$want" ] || fail "$name does not match SHA256SUMS (a damaged or different download): not installed"
say "checked $name against SHA256SUMS"

mkdir -p "$dest" || fail "cannot make $dest"
# Copied beside its place, run once (it unpacks itself into the cache and shows it runs
# on this system), then renamed over any older roost: a running roost is never cut short.
staged=$dest/.roost.install.$$
cp "$work/$name" "$staged" && chmod 755 "$staged" || fail "cannot write to $dest"
if ! said=$("$staged" --version 2>&1); then
    rm -f "$staged"
    fail "$name does not run here: $said"
fi
mv -f "$staged" "$dest/roost"
say "installed $said"
say "  as $dest/roost"

case ":${PATH:-}:" in
    *":$dest:"*) ;;
    *)
        say ""
        say "$dest is not on your PATH. Add it, for bash in ~/.bashrc (zsh: ~/.zshrc):"
        say "  export PATH=\"$dest:\$PATH\""
        ;;
esac
say ""
say "To complete roost's commands in bash, add to ~/.bashrc:"
say "  complete -W \"\$(roost --help | sed -n '/^Commands:/,/^\$/s/^  \\([a-z-]*\\) .*/\\1/p')\" roost"

home=${ROOST_HOME:-${XDG_STATE_HOME:-${HOME:-}/.local/state}/roost}
if [ -S "$home/roost.sock" ]; then
    say ""
    say "A roost daemon of an earlier install may be running: it keeps running your jobs."
    say "To move them to this version: roost shutdown --keep-workers (the next roost command"
    say "starts the new daemon, which adopts them)."
fi
