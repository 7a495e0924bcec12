package cliargs

import "strings"

// CompletionScripts returns the shell completion scripts of program, by
// shell (bash, zsh, fish). Each passes the words of the command line, the
// program's name as typed first and the word being completed last, to
// `PROGRAM __complete --`, and offers the lines it prints; when it prints
// none, the shell falls back to file names. The program's completion is
// thus written once, for every shell.
func CompletionScripts(program string) map[string]string {
	out := make(map[string]string, len(completionScripts))
	for shell, s := range completionScripts {
		out[shell] = strings.ReplaceAll(s, "PROGRAM", program)
	}
	return out
}

// completionScripts are the scripts, with PROGRAM for the program's name.
var completionScripts = map[string]string{
	"bash": `# bash completion for PROGRAM. Load it with: source <(PROGRAM completion bash)
_PROGRAM() {
    local cur words cword
    if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        _get_comp_words_by_ref -n =: cur words cword
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi
    local IFS=$'\n'
    COMPREPLY=($(compgen -W "$("${words[0]}" __complete -- "${words[@]:0:$((cword + 1))}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _PROGRAM PROGRAM
`,
	"zsh": `#compdef PROGRAM
# zsh completion for PROGRAM. Load it with: source <(PROGRAM completion zsh)
# or save it as _PROGRAM in a directory of $fpath.
_PROGRAM() {
    local -a candidates
    candidates=("${(@f)$("${words[1]}" __complete -- "${(@)words[1,CURRENT]}" 2>/dev/null)}")
    if (( ${#candidates} )) && [[ -n "${candidates[1]}" ]]; then
        compadd -a candidates
    else
        _files
    fi
}
if [[ "${funcstack[1]}" == "_PROGRAM" ]]; then
    _PROGRAM "$@"
else
    compdef _PROGRAM PROGRAM
fi
`,
	"fish": `# fish completion for PROGRAM. Load it with: PROGRAM completion fish | source
function __PROGRAM_complete
    set -l tokens (commandline -opc)
    set -l current (commandline -ct)
    set -l out ($tokens[1] __complete -- $tokens $current 2>/dev/null)
    if test (count $out) -gt 0
        printf '%s\n' $out
    else
        __fish_complete_path $current
    end
end
complete -c PROGRAM -f -a '(__PROGRAM_complete)'
`,
}
