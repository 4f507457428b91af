"""Shell completion: prints the script for your shell, which completes roost's
commands, their options and words, and the daemon's job ids and names (each Tab runs
`roost __complete`; it never starts a daemon).

  bash:  roost completion bash > ~/.local/share/bash-completion/completions/roost
  zsh:   roost completion zsh > "${fpath[1]}/_roost"
  fish:  roost completion fish > ~/.config/fish/completions/roost.fish

Usage:
  roost completion (bash | zsh | fish)
  roost completion --help
"""

from roost.cli.context import ExitStatus

# Each candidate read as one line, never split or glob-expanded (a job named `*` is that
# name, not the current directory's files), and quoted as bash would type it (a name with
# `;` or `$(` in it is inserted as text, never run).
BASH = r"""# roost's completion for bash (`roost completion bash`)
_roost() {
    local candidate i
    COMPREPLY=()
    while IFS= read -r candidate; do
        COMPREPLY+=("$candidate")
    done < <(roost __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
    for i in "${!COMPREPLY[@]}"; do
        printf -v 'COMPREPLY[i]' '%q' "${COMPREPLY[i]}"
    done
    [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
}
complete -o default -F _roost roost
"""

ZSH = r"""#compdef roost
# roost's completion for zsh (`roost completion zsh`)
_roost() {
    local -a candidates
    candidates=("${(@f)$(roost __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    compadd -a candidates
}
compdef _roost roost
"""

FISH = r"""# roost's completion for fish (`roost completion fish`)
function __roost_complete
    set -l words (commandline -opc)
    set -e words[1]
    roost __complete $words (commandline -ct) 2>/dev/null
end
complete -c roost -f -a '(__roost_complete)'
"""


def main(opts, ctx):
    shell = next(name for name in ("bash", "zsh", "fish") if opts[name])
    ctx.stdout.write({"bash": BASH, "zsh": ZSH, "fish": FISH}[shell])
    return ExitStatus.OK
