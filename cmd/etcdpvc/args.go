package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// argKind is the kind of positional arguments a command takes.
type argKind int

const (
	// argFree: the action reads its arguments itself.
	argFree argKind = iota
	// argObject: one object, RESOURCE NAME | RESOURCE/NAME | --etcd-key
	// KEY, named with the object flags -n/--namespace and --etcd-key.
	argObject
	// argCount: between min and max values.
	argCount
)

// completer is what completes an argument or a flag's value.
type completer int

const (
	offerNothing completer = iota
	offerResources
	offerCommands
	offerShells
	offerBackups
	offerNamespaces
	offerClaims
)

// argSpec declares a command's positional arguments.
type argSpec struct {
	kind argKind

	// argObject: noun names the object in "takes one NOUN" (default
	// "object"); bare leaves out the object flags; resources are the
	// resource names completion offers (nil: every resource).
	noun      string
	bare      bool
	resources []string
	// more, if set, is the usage error when no argument follows the
	// object; without it none may.
	more string
	// otherForms: the action accepts other forms too (recover namespace
	// NAME, RESOURCE --all); it checks the object form with in.object().
	otherForms bool

	// argCount: how many, and what the error calls them ("RESOURCE");
	// other bounds than none, at most one and exactly one need usage,
	// the whole usage error.
	min, max int
	what     string
	usage    string

	// first completes the first argument (argCount, argFree).
	first completer
}

// none declares a command that takes no arguments.
var none = argSpec{kind: argCount}

// optional declares at most one argument, called what.
func optional(what string, first completer) argSpec {
	return argSpec{kind: argCount, max: 1, what: what, first: first}
}

// checkCount checks the number of arguments of an argCount command.
func (a argSpec) checkCount(name string, n int) error {
	if n >= a.min && n <= a.max {
		return nil
	}
	switch {
	case a.usage != "":
		return usagef("%s", a.usage)
	case a.max == 0:
		return usagef("%s takes no arguments", name)
	case a.min == a.max && a.max == 1:
		return usagef("%s takes one %s", name, a.what)
	default:
		return usagef("%s takes at most one %s", name, a.what)
	}
}

// object reads the object an object command's arguments name, and checks
// what follows it against the declaration.
func (in *input) object() error {
	a := in.cmd.args
	if !a.bare {
		in.namespace, in.key = in.c.String("namespace"), in.c.String("etcd-key")
	}
	obj, rest, err := objectArgs(in.c.Args().Slice(), in.key)
	if err != nil {
		return err
	}
	switch {
	case a.more == "" && len(rest) > 0:
		noun := a.noun
		if noun == "" {
			noun = "object"
		}
		return usagef("%s takes one %s; unexpected %q", in.cmd.name, noun, rest)
	case a.more != "" && len(rest) == 0:
		return usagef("%s", a.more)
	}
	in.obj, in.rest = obj, rest
	return nil
}

// objectArgs splits an object command's arguments into the object's name
// (RESOURCE NAME or RESOURCE/NAME; none with --etcd-key) and the rest.
func objectArgs(args []string, key string) (obj, rest []string, err error) {
	switch {
	case key != "":
		return nil, args, nil
	case len(args) >= 1 && strings.Contains(args[0], "/"):
		return args[:1], args[1:], nil
	case len(args) >= 2:
		return args[:2], args[2:], nil
	default:
		return nil, nil, usagef("name the object: RESOURCE NAME, RESOURCE/NAME or --etcd-key KEY")
	}
}

// objectFlags name one object: -n and --etcd-key.
func objectFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "the object's namespace (default \"default\" for namespaced resources)"},
		&cli.StringFlag{Name: "etcd-key", Usage: "name the object by its raw etcd key instead of RESOURCE NAME"},
	}
}

// takesValue reports which flag names take a value: the global flags and
// cmd's, or, before the command name (cmd nil), every command's, as any
// command's flags may come first.
func takesValue(cmds []command, cmd *command) map[string]bool {
	m := map[string]bool{}
	for _, g := range globalFlags {
		m[g.name] = g.kind != 'b'
		if g.alias != "" {
			m[g.alias] = g.kind != 'b'
		}
	}
	if cmd != nil {
		cmds = []command{*cmd}
	}
	for _, c := range cmds {
		for _, f := range c.flags {
			_, isBool := f.(*cli.BoolFlag)
			for _, n := range f.Names() {
				m[n] = m[n] || !isBool
			}
		}
	}
	return m
}

// isGlobal reports whether a flag name stays before the command name.
func isGlobal(name string) bool {
	for _, g := range globalFlags {
		if g.name == name || g.alias == name {
			return true
		}
	}
	return name == "help" || name == "h" || name == "version" || name == "v"
}

// commandLine is a command line as etcdpvc reads it: flags before the
// command name, the command, its flags and its positional arguments.
type commandLine struct {
	// global are the global flags before the command name, with their
	// values; moved the other flags given there.
	global, moved []string
	// name is the command name as typed ("" when none); cmd its
	// declaration (nil when unknown or none).
	name string
	cmd  *command
	// after are the flags after the command name, with their values.
	after []string
	// positional are the arguments ("--" ends the flags).
	positional []string
	// flags holds every flag given, by name as typed, with its value
	// ("true" for one without).
	flags map[string]string
	// pending is the flag that ends the line still waiting for its value
	// (a partial line only).
	pending string
	// words is the line with its joined short flags split.
	words []string
}

// parseLine reads args as etcdpvc does: flags may come anywhere, as in
// kubectl, kubectl's joined short forms (-ndemo, -oyaml) are split, and
// "--" ends the flags. On a partial line (being completed), a flag that
// takes a value and ends the line is pending; otherwise it is a usage
// error. After an unknown command name, words are read as positional.
func parseLine(cmds []command, args []string, partial bool) (commandLine, error) {
	l := commandLine{flags: map[string]string{}}
	anyFlags := takesValue(cmds, nil)
	args, err := splitJoinedShort(args, anyFlags, partial)
	if err != nil {
		return l, err
	}
	l.words = args
	flags := anyFlags
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" && l.name != "" {
			l.positional = append(l.positional, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" && a != "--" {
			name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			group := []string{a}
			switch {
			case hasValue:
			case flags[name] && i+1 < len(args):
				i++
				value = args[i]
				group = append(group, value)
			case flags[name] && partial:
				l.pending = name
				return l, nil
			default:
				value = "true"
			}
			l.flags[name] = value
			switch {
			case l.name != "":
				l.after = append(l.after, group...)
			case isGlobal(name):
				l.global = append(l.global, group...)
			default:
				l.moved = append(l.moved, group...)
			}
			continue
		}
		if l.name == "" && len(l.positional) == 0 {
			l.name = a
			for j := range cmds {
				if cmds[j].name == a {
					l.cmd = &cmds[j]
					flags = takesValue(cmds, l.cmd)
				}
			}
			if l.cmd == nil && !partial {
				// Unknown: the CLI reports it, with the line as typed.
				l.positional = args[i+1:]
				return l, nil
			}
			if l.cmd == nil {
				l.name = ""
				l.positional = append(l.positional, a)
			}
			continue
		}
		l.positional = append(l.positional, a)
	}
	return l, nil
}

// reorderArgs lets flags come anywhere, as in kubectl: it moves every flag
// (with its value) of the command line before the positional arguments of
// its command, so that `etcdpvc undelete pvc x -n demo --yes` and
// `etcdpvc --endpoints E get pvc x` both parse. "--" ends flag parsing. A
// flag that takes a value but ends the command line is a usage error.
func reorderArgs(cmds []command, args []string) ([]string, error) {
	l, err := parseLine(cmds, args, false)
	if err != nil {
		return nil, err
	}
	if l.name == "" {
		return append(l.global, l.moved...), nil
	}
	if l.cmd == nil {
		return l.words, nil
	}
	out := append(append([]string{}, l.global...), l.name)
	out = append(append(out, l.moved...), l.after...)
	if len(l.positional) > 0 {
		out = append(out, "--")
		out = append(out, l.positional...)
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
// that takes a value but ends the command line is a usage error, unless
// the line is partial.
func splitJoinedShort(args []string, flags map[string]bool, partial bool) ([]string, error) {
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
			if i+1 >= len(args) && partial {
				break
			}
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
