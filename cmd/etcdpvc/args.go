package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs lets flags come anywhere, as in kubectl: it moves every flag
// (with its value) of the command line before the positional arguments of
// its command, so that `etcdpvc undelete pvc x -n demo --yes` and
// `etcdpvc --endpoints E get pvc x` both parse. "--" ends flag parsing.
func reorderArgs(app *cli.App, args []string) []string {
	takesValue := func(flags []cli.Flag) map[string]bool {
		m := map[string]bool{}
		for _, f := range flags {
			_, isBool := f.(*cli.BoolFlag)
			for _, n := range f.Names() {
				m[n] = !isBool
			}
		}
		return m
	}
	appFlags := takesValue(app.Flags)
	var before []string
	i := 0
	// Global flags before the command name.
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" && args[i] != "-" {
		before = append(before, args[i])
		if name, hasValue := flagName(args[i]); !hasValue && appFlags[name] && i+1 < len(args) {
			i++
			before = append(before, args[i])
		}
		i++
	}
	if i >= len(args) {
		return before
	}
	cmdName := args[i]
	var cmd *cli.Command
	for _, c := range app.Commands {
		if c.HasName(cmdName) {
			cmd = c
		}
	}
	if cmd == nil {
		return args
	}
	cmdFlags := takesValue(cmd.Flags)
	var flags, positional []string
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			positional = append(positional, rest[j+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
			if name, hasValue := flagName(a); !hasValue && cmdFlags[name] && j+1 < len(rest) {
				j++
				flags = append(flags, rest[j])
			}
			continue
		}
		positional = append(positional, a)
	}
	out := append(append([]string{}, before...), cmdName)
	out = append(out, flags...)
	if len(positional) > 0 {
		out = append(out, "--")
		out = append(out, positional...)
	}
	return out
}

// flagName returns the name of a flag argument and whether it carries its
// value (--name=value).
func flagName(a string) (string, bool) {
	a = strings.TrimLeft(a, "-")
	if i := strings.IndexByte(a, '='); i >= 0 {
		return a[:i], true
	}
	return a, false
}
