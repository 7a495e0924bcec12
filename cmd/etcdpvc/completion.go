package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/session"
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
			"nothing is offered and the shell falls back to file names.\n" +
			"Installed as the kubectl plugin kubectl-etcdpvc, `kubectl etcdpvc` is completed by kubectl\n" +
			"itself (v1.26 and later) through a program named kubectl_complete-etcdpvc on PATH: a link to\n" +
			"the same binary, which answers in kubectl's protocol.",
		examples: `source <(etcdpvc completion bash)
etcdpvc completion bash | sudo tee /etc/bash_completion.d/etcdpvc
etcdpvc completion zsh > "${fpath[1]}/_etcdpvc"
etcdpvc completion fish > ~/.config/fish/completions/etcdpvc.fish`,
		args:      cliargs.Args{Kind: cliargs.ArgsCount, Min: 1, Max: 1, What: "shell: bash, zsh or fish", First: cliargs.OfferShells},
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

// completionScripts are the shell scripts (cliargs.CompletionScripts);
// each passes the words of the command line, the program's name first and
// the word being completed last, to `etcdpvc __complete --`.
var completionScripts = cliargs.CompletionScripts("etcdpvc")

func completeCommand() command {
	return command{
		name:      "__complete",
		usage:     "print completion candidates (used by the completion scripts)",
		argsUsage: "-- PROGRAM WORDS...",
		desc:      "__complete prints, one per line, the candidates for the last of WORDS, the command line after PROGRAM (etcdpvc's name as typed). It prints nothing when it has none or on any error.",
		examples:  `etcdpvc __complete -- etcdpvc get pvc -n demo ''`,
		hidden:    true,
		noGlobals: true,
		flags:     []cli.Flag{&cli.BoolFlag{Name: "kubectl", Usage: "answer as kubectl's plugin completion (kubectl_complete-etcdpvc): the candidates, then cobra's directive line"}},
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
			if c.Bool("kubectl") {
				// kubectl's plugin completion speaks cobra's protocol:
				// the candidates, then the directive ":4", no file
				// completion.
				fmt.Fprintln(e.stdout, ":4")
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

// complete returns the candidates for the last word (cliargs.Completer),
// looking names up as the command line says (completionLookup).
func complete(c *cli.Context, e *env, words []string) []string {
	comp := cliargs.Completer{Program: program(commands()), Resources: inspect.ResourceNames(),
		Lookup: completionLookup{c: c, e: e}, Max: maxCandidates}
	return comp.Complete(words)
}

// completionLookup reads the names completion offers: objects and claims
// from the etcd the command line names, backups from its --backup-dir.
type completionLookup struct {
	c *cli.Context
	e *env
}

// session opens the store the command line names, with short
// timeouts and no output. It returns nil when that fails.
func (cl completionLookup) session(l cliargs.Line) (*cliSession, *env, func()) {
	e := cl.e
	g, err := resolveGlobals(cl.c, e)
	if err != nil {
		return nil, nil, func() {}
	}
	for _, gf := range globalFlags {
		v, ok := l.Flags[gf.name]
		if !ok {
			continue
		}
		if gf.kind == session.KindRepeated {
			v = session.JoinRepeated(l.Values[gf.name])
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

// Names lists the names of res's objects starting with cur: in the
// namespace the command line gives (default "default"), or all of them
// with -A or for a cluster-scoped resource (inspect.CompleteNames).
func (cl completionLookup) Names(l cliargs.Line, res, cur string) []string {
	s, qe, done := cl.session(l)
	if s == nil {
		return nil
	}
	defer done()
	q := inspect.NameQuery{Prefix: s.g.Prefix, Resource: res, Namespace: l.Flags["namespace"], Typed: cur, Max: maxCandidates,
		AllNamespaces: l.Flags["all-namespaces"] != "" || l.Flags["A"] != ""}
	if v, ok := l.Flags["n"]; ok {
		q.Namespace = v
	}
	out, _ := inspect.CompleteNames(qe.ctx, s.Reader, s.Resolver, q)
	return out
}

// Claims lists claims as NAMESPACE/NAME, for rebind --to-claim
// (inspect.CompleteClaims).
func (cl completionLookup) Claims(l cliargs.Line, cur string) []string {
	s, qe, done := cl.session(l)
	if s == nil {
		return nil
	}
	defer done()
	out, _ := inspect.CompleteClaims(qe.ctx, s.Reader, s.g.Prefix, cur, maxCandidates)
	return out
}

// Backups lists backup files, newest first: those of the directory
// being typed when cur holds a "/", else those of --backup-dir or the
// default backup directory, as absolute paths (inspect.CompleteBackups).
func (completionLookup) Backups(l cliargs.Line, cur string) []string {
	dir := l.Flags["backup-dir"]
	if dir == "" {
		dir = surgery.DefaultBackupDir()
	}
	out, _ := inspect.CompleteBackups(dir, cur)
	return out
}
