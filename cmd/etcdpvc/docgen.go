package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/internal/clidoc"
)

// docs/cli.md is generated from the same command definitions the help is
// rendered from, so the two cannot disagree: `etcdpvc gen-docs >
// docs/cli.md`, or `go test ./cmd/etcdpvc -run TestCLIDocs -update`. The
// test fails when the file is stale.

func genDocsCommand() command {
	return command{
		name:      "gen-docs",
		usage:     "write the command reference (docs/cli.md) from the commands' help",
		argsUsage: "[FILE]",
		desc:      "gen-docs writes the Markdown command reference to FILE, or to standard output.",
		examples:  `etcdpvc gen-docs docs/cli.md`,
		hidden:    true,
		args:      cliargs.Optional("FILE", cliargs.OfferNothing),
		noGlobals: true,
		action: func(c *cli.Context, e *env, in *input) error {
			if c.NArg() == 0 {
				return writeCLIDocs(e.stdout)
			}
			var b strings.Builder
			if err := writeCLIDocs(&b); err != nil {
				return err
			}
			if err := os.WriteFile(c.Args().First(), []byte(b.String()), 0o644); err != nil {
				return fmt.Errorf("gen-docs: %w", err)
			}
			return nil
		},
	}
}

// writeCLIDocs writes the command reference in Markdown.
func writeCLIDocs(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# etcdpvc command reference\n\n")
	b.WriteString("<!-- Generated from the commands' help by `etcdpvc gen-docs docs/cli.md`; do not edit.\n" +
		"     `go test ./cmd/etcdpvc -run TestCLIDocs -update` rewrites it; the test fails when it is stale. -->\n\n")
	b.WriteString("etcdpvc reads, and edits with a diff, a durable backup and a compare-and-swap, the objects\n" +
		"kube-apiserver stores in etcd, and reads etcd db and snapshot files offline. `etcdpvc COMMAND --help`\n" +
		"prints each section below, with its examples; `etcdpvc --help` lists the global flags and the exit\n" +
		"statuses. New here? Run\n" +
		"`go run ./cmd/etcdpvc demo`.\n\n")

	var cmds []clidoc.Command
	for _, c := range visibleCommands() {
		cmds = append(cmds, clidoc.Command{Name: c.name, Usage: c.usage, ArgsUsage: c.argsUsage, Desc: c.desc, Flags: c.flags, Examples: c.examples})
	}
	b.WriteString("## Commands\n\n")
	clidoc.Index(&b, "etcdpvc", cmds)

	b.WriteString("\n## Global flags\n\nThey work before or after the command name, and every flag may follow the arguments, as in\n" +
		"kubectl. Each connection flag falls back to its `ETCDCTL_*` variable, as etcdctl's do.\n\n")
	clidoc.Flags(&b, globalCLIFlags(false))

	b.WriteString("\n## Exit status\n\nEvery command exits with one of these statuses.\n\n| status | meaning |\n|---|---|\n")
	for _, line := range strings.Split(exitStatusHelp, "\n")[1:] {
		code, meaning, _ := strings.Cut(strings.TrimSpace(line), "  ")
		fmt.Fprintf(&b, "| %s | %s |\n", code, clidoc.Text(strings.TrimSpace(meaning)))
	}

	for _, c := range cmds {
		clidoc.Section(&b, "etcdpvc", c, "\nand the [global flags](#global-flags).\n\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// visibleCommands are the commands the help lists.
func visibleCommands() []command {
	var out []command
	for _, c := range commands() {
		if !c.hidden {
			out = append(out, c)
		}
	}
	return out
}
