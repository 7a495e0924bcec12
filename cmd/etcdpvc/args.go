package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs lets flags come anywhere, as in kubectl: it moves every flag
// (with its value) of the command line before the positional arguments of
// its command, so that `etcdpvc undelete pvc x -n demo --yes` and
// `etcdpvc --endpoints E get pvc x` both parse. "--" ends flag parsing. A
// flag that takes a value but ends the command line is a usage error.
func reorderArgs(app *cli.App, args []string) ([]string, error) {
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
	args, err := splitJoinedShort(args, anyFlags)
	if err != nil {
		return nil, err
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
		return append(before, moved...), nil
	}
	if i >= len(args) {
		return before, nil
	}
	cmdName := args[i]
	var cmd *cli.Command
	for _, c := range app.Commands {
		if c.HasName(cmdName) {
			cmd = c
		}
	}
	if cmd == nil {
		return args, nil
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
	return out, nil
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

// splitJoinedShort splits kubectl's joined short forms, `-ndemo` into
// `-n demo` and `-oyaml` into `-o yaml`: a single-dash argument that is no
// flag's name, whose first letter is a one-letter flag taking a value.
// (`-n=demo` needs nothing: the flag package reads it.) The value of a flag
// (`--password -nx`) and everything after "--" are left alone. A flag
// that takes a value but ends the command line is a usage error.
func splitJoinedShort(args []string, flags map[string]bool) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
			continue
		}
		name, hasValue := flagName(a)
		if _, known := flags[name]; !known && !hasValue && !strings.HasPrefix(a, "--") && len(name) > 1 && flags[name[:1]] {
			out = append(out, "-"+name[:1], name[1:])
			continue
		}
		out = append(out, a)
		if flags[name] && !hasValue {
			if i+1 >= len(args) {
				return nil, usagef("flag %s needs a value", dashes(name))
			}
			i++
			out = append(out, args[i])
		}
	}
	return out, nil
}

// undefinedFlag matches the flag package's error for an unknown flag.
var undefinedFlag = regexp.MustCompile(`flag provided but not defined: -+(\S+)`)

// singleDashFlag matches the flag package's "flag -name".
var singleDashFlag = regexp.MustCompile(`flag -[\w-]+`)

// flagUsageError turns a flag parse error into one line: an unknown flag
// names the nearest known one ("unknown flag --namspace; did you mean
// --namespace?"). No help page is printed.
func flagUsageError(err error, flags []cli.Flag) error {
	m := undefinedFlag.FindStringSubmatch(err.Error())
	if m == nil {
		// "invalid value "x" for flag -rev: ...": name it as it is typed.
		msg := singleDashFlag.ReplaceAllStringFunc(err.Error(), func(f string) string {
			return "flag " + dashes(strings.TrimPrefix(f, "flag -"))
		})
		return &usageError{msg: msg}
	}
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	msg := "unknown flag " + dashes(m[1])
	if near := nearest(m[1], names); near != "" {
		msg += "; did you mean " + dashes(near) + "?"
	}
	return &usageError{msg: msg}
}

// unknownCommand is the error for a command name that does not exist.
func unknownCommand(app *cli.App, name string) error {
	var names []string
	for _, c := range app.Commands {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if near := nearest(name, names); near != "" {
		msg += "; did you mean " + near + "?"
	}
	return &usageError{msg: msg}
}

func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// nearest returns the candidate closest to s in edit distance, if it is
// close enough to be a likely typo (at most a third of its length, and at
// most 3 edits), else "".
func nearest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := editDistance(s, c)
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > 3 || bestD*3 > max(len(s), len(best)) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
