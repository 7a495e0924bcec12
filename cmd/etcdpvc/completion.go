package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// Shell completion: `etcdpvc completion SHELL` prints a small script that
// asks the hidden `etcdpvc __complete -- WORDS...` for candidates, so that
// completion (commands, flags, and the names inspect's Complete* look up:
// resources, namespaces, objects, claims, backups) is written once, for
// every shell.

func completionCommand() command {
	return command{
		name:      "completion",
		usage:     "print a shell completion script (bash, zsh or fish)",
		argsUsage: "bash|zsh|fish",
		desc: "completion prints a script that completes etcdpvc's commands, flags, resource names\n" +
			"(plural and short names, as kubectl spells them), namespaces and object names. Object\n" +
			"names and namespaces are read from the etcd the command line names (its connection flags,\n" +
			"the ETCDCTL_* variables or --kubeadm), with a short timeout; when etcd cannot be reached,\n" +
			"nothing is offered and the shell falls back to file names.",
		examples: `source <(etcdpvc completion bash)
etcdpvc completion bash | sudo tee /etc/bash_completion.d/etcdpvc
etcdpvc completion zsh > "${fpath[1]}/_etcdpvc"
etcdpvc completion fish > ~/.config/fish/completions/etcdpvc.fish`,
		args:      argSpec{kind: argCount, min: 1, max: 1, what: "shell: bash, zsh or fish", first: offerShells},
		noGlobals: true,
		action: func(c *cli.Context, e *env, in *input) error {
			script, ok := completionScripts[c.Args().First()]
			if !ok {
				return usagef("completion: unknown shell %q: want bash, zsh or fish", c.Args().First())
			}
			_, err := io.WriteString(e.stdout, script)
			return err
		},
	}
}

// completionScripts are the shell scripts; each passes the words of the
// command line, the program's name first and the word being completed
// last, to `etcdpvc __complete --`.
var completionScripts = map[string]string{
	"bash": `# bash completion for etcdpvc. Load it with: source <(etcdpvc completion bash)
_etcdpvc() {
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
complete -o default -F _etcdpvc etcdpvc
`,
	"zsh": `#compdef etcdpvc
# zsh completion for etcdpvc. Load it with: source <(etcdpvc completion zsh)
# or save it as _etcdpvc in a directory of $fpath.
_etcdpvc() {
    local -a candidates
    candidates=("${(@f)$("${words[1]}" __complete -- "${(@)words[1,CURRENT]}" 2>/dev/null)}")
    if (( ${#candidates} )) && [[ -n "${candidates[1]}" ]]; then
        compadd -a candidates
    else
        _files
    fi
}
if [[ "${funcstack[1]}" == "_etcdpvc" ]]; then
    _etcdpvc "$@"
else
    compdef _etcdpvc etcdpvc
fi
`,
	"fish": `# fish completion for etcdpvc. Load it with: etcdpvc completion fish | source
function __etcdpvc_complete
    set -l tokens (commandline -opc)
    set -l current (commandline -ct)
    set -l out ($tokens[1] __complete -- $tokens $current 2>/dev/null)
    if test (count $out) -gt 0
        printf '%s\n' $out
    else
        __fish_complete_path $current
    end
end
complete -c etcdpvc -f -a '(__etcdpvc_complete)'
`,
}

func completeCommand() command {
	return command{
		name:      "__complete",
		usage:     "print completion candidates (used by the completion scripts)",
		argsUsage: "-- PROGRAM WORDS...",
		desc:      "__complete prints, one per line, the candidates for the last of WORDS, the command line after PROGRAM (etcdpvc's name as typed). It prints nothing when it has none or on any error.",
		examples:  `etcdpvc __complete -- etcdpvc get pvc -n demo ''`,
		hidden:    true,
		noGlobals: true,
		action: func(c *cli.Context, e *env, in *input) error {
			words := c.Args().Slice()
			if len(words) > 0 {
				words = words[1:] // the program's name
			}
			if len(words) == 0 {
				words = []string{""}
			}
			for _, w := range complete(c, e, words) {
				fmt.Fprintln(e.stdout, w)
			}
			return nil
		},
	}
}

// Completion bounds: etcd is asked with these timeouts, and at most
// maxCandidates names are printed.
const (
	completeTimeout = 2 * time.Second
	maxCandidates   = 500
)

// helpCommand declares urfave/cli's help command for completion.
var helpCommand = command{name: "help", args: argSpec{kind: argCount, max: 1, first: offerCommands}}

// parseCompletionLine reads the words before the one being completed, as
// the command line parser does.
func parseCompletionLine(words []string) commandLine {
	l, _ := parseLine(append(commands(), helpCommand), words, true)
	return l
}

// flagValues complete the values of the flags every command names alike.
var flagValues = map[string]completer{"namespace": offerNamespaces, "n": offerNamespaces}

// complete returns the candidates for the last word.
func complete(c *cli.Context, e *env, words []string) []string {
	cur := words[len(words)-1]
	l := parseCompletionLine(words[:len(words)-1])
	var out []string
	switch {
	case l.pending != "":
		what := flagValues[l.pending]
		if l.cmd != nil && l.cmd.values[l.pending] != offerNothing {
			what = l.cmd.values[l.pending]
		}
		out = completeWith(c, e, l, what, cur)
	case strings.HasPrefix(cur, "-"):
		out = flagCandidates(l.cmd)
	case l.cmd == nil:
		if len(l.positional) == 0 {
			out = append(commandNames(), "help")
		}
	default:
		out = completeArgs(c, e, l, cur)
	}
	var kept []string
	for _, w := range out {
		if strings.HasPrefix(w, cur) && !slices.Contains(kept, w) {
			kept = append(kept, w)
		}
	}
	if len(kept) > maxCandidates {
		kept = kept[:maxCandidates]
	}
	return kept
}

// completeWith lists the candidates one completer offers.
func completeWith(c *cli.Context, e *env, l commandLine, what completer, cur string) []string {
	switch what {
	case offerResources:
		return inspect.ResourceNames()
	case offerCommands:
		return commandNames()
	case offerShells:
		return slices.Sorted(maps.Keys(completionScripts))
	case offerBackups:
		return completeBackups(l, cur)
	case offerNamespaces:
		return completeNames(c, e, l, "namespaces", "", cur)
	case offerClaims:
		return completeClaims(c, e, l, cur)
	}
	return nil
}

// completeArgs completes a command's positional arguments, as its
// declaration says.
func completeArgs(c *cli.Context, e *env, l commandLine, cur string) []string {
	n := len(l.positional)
	a := l.cmd.args
	if a.kind != argObject {
		if n == 0 {
			return completeWith(c, e, l, a.first, cur)
		}
		return nil
	}
	resources := a.resources
	if resources == nil {
		resources = inspect.ResourceNames()
	}
	switch {
	case n == 0 && strings.Contains(cur, "/"):
		res, _, _ := strings.Cut(cur, "/")
		if !slices.Contains(resources, res) {
			return nil
		}
		names := completeNames(c, e, l, res, "", "")
		for i, name := range names {
			names[i] = res + "/" + name
		}
		return names
	case n == 0:
		return resources
	case n == 1 && !strings.Contains(l.positional[0], "/"):
		return completeNames(c, e, l, l.positional[0], "", cur)
	}
	return nil
}

// commandNames lists the commands users type.
func commandNames() []string {
	var out []string
	for _, cmd := range commands() {
		if !cmd.hidden {
			out = append(out, cmd.name)
		}
	}
	return out
}

// flagCandidates lists the flags of cmd (nil: before a command), global
// ones included.
func flagCandidates(cmd *command) []string {
	var out []string
	add := func(f cli.Flag) {
		for _, n := range f.Names() {
			if len(n) == 1 {
				out = append(out, "-"+n)
			} else {
				out = append(out, "--"+n)
			}
		}
	}
	if cmd != nil {
		for _, f := range cmd.flags {
			add(f)
		}
	}
	for _, f := range globalCLIFlags() {
		add(f)
	}
	return append(out, "--help")
}

// completionSession opens the store the command line names, with short
// timeouts and no output. It returns nil when that fails.
func completionSession(c *cli.Context, e *env, l commandLine) (*session, *env, func()) {
	g, err := resolveGlobals(c, e)
	if err != nil {
		return nil, nil, func() {}
	}
	for _, gf := range globalFlags {
		v, ok := l.flags[gf.name]
		if !ok {
			continue
		}
		g.Given[gf.name] = true
		if g.Set(gf.name, v) != nil {
			return nil, nil, func() {}
		}
	}
	g.DialTimeout = min(g.DialTimeout, completeTimeout/2)
	g.CommandTimeout = min(g.CommandTimeout, completeTimeout/2)
	ctx, cancel := context.WithTimeout(e.ctx, completeTimeout)
	quiet := *e
	quiet.ctx, quiet.stderr = ctx, io.Discard
	s, err := openSession(&quiet, g)
	if err != nil {
		cancel()
		return nil, nil, func() {}
	}
	return s, &quiet, func() { s.Close(); cancel() }
}

// completeNames lists the names of res's objects starting with cur: in the
// namespace the command line gives (default "default"), or all of them
// with -A or for a cluster-scoped resource (inspect.CompleteNames).
// namespace overrides the command line's when not empty.
func completeNames(c *cli.Context, e *env, l commandLine, res, namespace, cur string) []string {
	s, qe, done := completionSession(c, e, l)
	if s == nil {
		return nil
	}
	defer done()
	q := inspect.NameQuery{Prefix: s.g.Prefix, Resource: res, Namespace: namespace, Typed: cur, Max: maxCandidates}
	if q.Namespace == "" {
		q.Namespace = l.flags["namespace"]
		if v, ok := l.flags["n"]; ok {
			q.Namespace = v
		}
		q.AllNamespaces = l.flags["all-namespaces"] != "" || l.flags["A"] != ""
	}
	out, _ := inspect.CompleteNames(qe.ctx, s.Reader, s.Resolver, q)
	return out
}

// completeClaims lists claims as NAMESPACE/NAME, for rebind --to-claim
// (inspect.CompleteClaims).
func completeClaims(c *cli.Context, e *env, l commandLine, cur string) []string {
	s, qe, done := completionSession(c, e, l)
	if s == nil {
		return nil
	}
	defer done()
	out, _ := inspect.CompleteClaims(qe.ctx, s.Reader, s.g.Prefix, cur, maxCandidates)
	return out
}

// completeBackups lists backup files, newest first: those of the directory
// being typed when cur holds a "/", else those of --backup-dir or the
// default backup directory, as absolute paths (inspect.CompleteBackups).
func completeBackups(l commandLine, cur string) []string {
	dir := l.flags["backup-dir"]
	if dir == "" {
		dir = surgery.DefaultBackupDir()
	}
	out, _ := inspect.CompleteBackups(dir, cur)
	return out
}
