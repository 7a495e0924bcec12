package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/cmd/etcdpvc/internal/demo"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
)

func demoCommand() command {
	return command{
		name:  "demo",
		usage: "a first run: real stored objects in a throwaway etcd, and the commands that fix them",
		desc: "demo starts an etcd server inside the process (temporary directory, free ports on\n" +
			"127.0.0.1), loads into it the bytes a real kube-apiserver v1.37 stored for a small\n" +
			"StatefulSet (a namespace, a Bound claim and its volume, a claim stuck Terminating and its\n" +
			"volume, a pod, an encrypted Secret), then runs the real commands against it one by one,\n" +
			"printing each command line before its output: ls, get, undelete --dry-run, undelete --yes,\n" +
			"history and restore. Nothing outside the temporary directory is read or written, and\n" +
			"everything is removed at the end. It needs nothing installed.",
		examples: `go run ./cmd/etcdpvc demo
etcdpvc demo`,
		args:      cliargs.None,
		noGlobals: true,
		action: func(c *cli.Context, e *env, in *input) error {
			return runDemo(e)
		},
	}
}

func runDemo(e *env) error {
	dir, err := os.MkdirTemp("", "etcdpvc-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(e.stdout, "Starting a throwaway etcd in %s ...\n", dir)
	d, err := demo.Start(e.ctx, dir)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer d.Close()
	fmt.Fprint(e.stdout, d.Intro())
	steps := d.Steps()
	for i, st := range steps {
		if err := demoRun(e, i+1, st, d.Global); err != nil {
			return err
		}
	}
	restore, err := d.RestoreStep()
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := demoRun(e, len(steps)+1, restore, d.Global); err != nil {
		return err
	}
	fmt.Fprint(e.stdout, demo.Outro)
	return nil
}

// demoRun prints a step and runs it through run, the program's one entry
// point.
func demoRun(e *env, n int, st demo.Step, global []string) error {
	fmt.Fprintf(e.stdout, "\n# %d. %s\n$ etcdpvc %s\n", n, st.Why, strings.Join(st.Args, " "))
	args := append(append([]string{}, global...), st.Args...)
	if code := run(e.ctx, args, strings.NewReader(""), e.stdout, e.stderr); code != exitcode.OK {
		return fmt.Errorf("demo: step %d, `etcdpvc %s`, failed with exit status %d", n, strings.Join(st.Args, " "), code)
	}
	return nil
}
