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
	// Any flag of any command may come before the command name too
	// (`etcdpvc -n demo get pvc x`); those that are not global move after it.
	anyFlags := map[string]bool{}
	for _, c := range app.Commands {
		for n, v := range takesValue(c.Flags) {
			anyFlags[n] = anyFlags[n] || v
		}
	}
	for n, v := range appFlags {
		anyFlags[n] = v
	}
	var before, moved []string
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" && args[i] != "-" {
		name, hasValue := flagName(args[i])
		group := []string{args[i]}
		if !hasValue && anyFlags[name] && i+1 < len(args) {
			i++
			group = append(group, args[i])
		}
		if _, global := appFlags[name]; global || name == "help" || name == "h" || name == "version" || name == "v" {
			before = append(before, group...)
		} else {
			moved = append(moved, group...)
		}
		i++
	}
	if len(moved) > 0 && i >= len(args) {
		return append(before, moved...)
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
	flags := moved
	var positional []string
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
