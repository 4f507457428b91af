#!/bin/sh
# roost @VERSION@ for linux-@ARCH@: one file holding roost's onedir bundle (a tar.gz
# after the last line of this script). The first run unpacks the bundle into a cache,
# ${XDG_CACHE_HOME:-~/.cache}/roost/@VERSION@-@HASH@/, and every run then executes the
# unpacked program directly: a plain PyInstaller one-file build would unpack itself at
# every start. Made by scripts/build from packaging/launcher.sh.
roost_id='@VERSION@-@HASH@'
payload_line=@PAYLOAD_LINE@
case ${XDG_CACHE_HOME:-} in
    /*) cache_root=$XDG_CACHE_HOME/roost ;;
    *) case ${HOME:-} in /*) cache_root=$HOME/.cache/roost ;; *) cache_root= ;; esac ;;
esac
# The marker is written last, before the unpacked copy is renamed into place.
if [ -n "$cache_root" ] && [ -f "$cache_root/$roost_id/.roost-complete" ]; then
    exec "$cache_root/$roost_id/roost" "$@"
fi

self=$0

say() {
    printf 'roost: %s\n' "$*" >&2
}

# ours ROOT: ROOT is a real directory of this user's, so no one else can write in it.
ours() {
    [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ]
}

# unpack ROOT: make ROOT/$roost_id a complete copy, or fail. The copy is unpacked into a
# private temporary directory beside it and renamed into place, so runs started at the
# same time never see a half-written copy: one rename wins, the others drop their own.
unpack() {
    root=$1
    (umask 077 && mkdir -p "$root") 2>/dev/null || return 1
    if ! ours "$root"; then
        say "$root is not a directory of yours"
        return 1
    fi
    chmod 700 "$root" 2>/dev/null || return 1
    target=$root/$roost_id
    [ -f "$target/.roost-complete" ] && return 0
    # Left by runs that were killed while unpacking.
    find "$root" -maxdepth 1 -name '.unpack.*' -mmin +60 -exec rm -rf {} + 2>/dev/null
    if [ -e "$target" ]; then
        # A copy without its marker cannot be trusted: set it aside.
        mv "$target" "$root/.broken.$$" 2>/dev/null && rm -rf "$root/.broken.$$"
    fi
    staging=$(umask 077 && mktemp -d "$root/.unpack.XXXXXX" 2>/dev/null) || return 1
    if ! tail -n "+$payload_line" "$self" | tar -xzf - -C "$staging" || [ ! -x "$staging/roost" ]; then
        rm -rf "$staging"
        say "the bundle in $self could not be unpacked into $root"
        return 1
    fi
    chmod 700 "$staging"
    if ! printf '%s\n' "$roost_id" > "$staging/.roost-complete"; then
        rm -rf "$staging"
        return 1
    fi
    # On disk before it is renamed into place: a crash must not leave a marked copy
    # whose files are empty.
    sync -f "$staging/.roost-complete" 2>/dev/null || sync
    # mv -T renames (rename(2)) and fails when another run's copy is there already;
    # without -T, mv would move this copy inside that one.
    if ! mv -T "$staging" "$target" 2>/dev/null; then
        [ -e "$target" ] || mv "$staging" "$target" 2>/dev/null
    fi
    [ -d "$staging" ] && rm -rf "$staging"
    [ -f "$target/.roost-complete" ]
}

if [ -n "$cache_root" ] && unpack "$cache_root"; then
    exec "$cache_root/$roost_id/roost" "$@"
fi
# No usable cache (a read-only home, no HOME): a directory of this user's under the
# temporary directory instead, kept for the next runs.
fallback_root=${TMPDIR:-/tmp}/roost-cache-$(id -u)
if ours "$fallback_root" && [ -f "$fallback_root/$roost_id/.roost-complete" ]; then
    exec "$fallback_root/$roost_id/roost" "$@"
fi
say "cannot unpack into ${cache_root:-a cache (HOME is not set)}; using $fallback_root instead"
if unpack "$fallback_root"; then
    exec "$fallback_root/$roost_id/roost" "$@"
fi
say "cannot unpack roost into ${cache_root:-a cache} or $fallback_root"
exit 126
