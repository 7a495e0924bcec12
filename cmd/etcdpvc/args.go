package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/internal/cliargs"
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

// commandLine is a command line as etcdpvc reads it (cliargs.Line), with
// its command's declaration (nil when unknown or none).
type commandLine struct {
	cliargs.Line
	cmd *command
}

// parseLine reads args as etcdpvc does (cliargs.Parse): flags may come
// anywhere, as in kubectl, kubectl's joined short forms (-ndemo, -oyaml)
// are split, and "--" ends the flags. A flag that takes a value and ends
// a full line is a usage error; on a partial line it is pending.
func parseLine(cmds []command, args []string, partial bool) (commandLine, error) {
	var cmd *command
	g := cliargs.Grammar{Values: takesValue(cmds, nil), Global: isGlobal,
		Command: func(name string) (map[string]bool, bool) {
			for i := range cmds {
				if cmds[i].name == name {
					cmd = &cmds[i]
					return takesValue(cmds, cmd), true
				}
			}
			return nil, false
		}}
	l, err := cliargs.Parse(g, args, partial)
	if err != nil {
		return commandLine{}, &usageError{msg: err.Error()}
	}
	return commandLine{Line: l, cmd: cmd}, nil
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
	return l.Reordered(), nil
}

// flagUsageError turns a flag parse error into one line: an unknown flag
// names the nearest known one ("unknown flag --namspace; did you mean
// --namespace?"). No help page is printed.
func flagUsageError(err error, flags []cli.Flag) error {
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return &usageError{msg: cliargs.FlagError(err.Error(), names)}
}

// unknownCommand is the error for a command name that does not exist.
func unknownCommand(app *cli.App, name string) error {
	var names []string
	for _, c := range app.Commands {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	return &usageError{msg: cliargs.UnknownCommand(name, names)}
}
