package cliargs

import (
	"fmt"
	"slices"
	"strings"
)

// UsageError is a mistake in a command line's flags or arguments: the
// program's usage error, worded on one line.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError worded as fmt.Sprintf words it.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Kind is the kind of positional arguments a command takes.
type Kind int

const (
	// ArgsFree: the command reads its arguments itself.
	ArgsFree Kind = iota
	// ArgsObject: one object, RESOURCE NAME | RESOURCE/NAME | --etcd-key
	// KEY, named with the object flags -n/--namespace and --etcd-key.
	ArgsObject
	// ArgsCount: between Min and Max values.
	ArgsCount
)

// Offer is what completes an argument or a flag's value.
type Offer int

const (
	OfferNothing Offer = iota
	OfferResources
	OfferCommands
	OfferShells
	OfferBackups
	OfferNamespaces
	OfferClaims
	// OfferGroupBy: stats --by's groupings (GroupByValues).
	OfferGroupBy
)

// GroupByValues are the values of stats --by, as inspect.ParseGroupBy
// reads them, for completion.
var GroupByValues = []string{"resource", "namespace", "resource,namespace"}

// Args declares a command's positional arguments.
type Args struct {
	Kind Kind

	// ArgsObject: Noun names the object in "takes one NOUN" (default
	// "object"); Bare leaves out the object flags; Resources are the
	// resource names completion offers (nil: every resource).
	Noun      string
	Bare      bool
	Resources []string
	// More, if set, is the usage error when no argument follows the
	// object; without it none may.
	More string
	// OtherForms: the command accepts other forms too (recover namespace
	// NAME, RESOURCE --all); it checks the object form itself (Object).
	OtherForms bool

	// ArgsCount: how many, and what the error calls them ("RESOURCE");
	// other bounds than none, at most one and exactly one need Usage,
	// the whole usage error.
	Min, Max int
	What     string
	Usage    string

	// First completes the first argument (ArgsCount, ArgsFree).
	First Offer
}

// None declares a command that takes no arguments.
var None = Args{Kind: ArgsCount}

// Optional declares at most one argument, called what.
func Optional(what string, first Offer) Args {
	return Args{Kind: ArgsCount, Max: 1, What: what, First: first}
}

// CheckCount checks the number of arguments n of an ArgsCount command
// called name.
func (a Args) CheckCount(name string, n int) error {
	if n >= a.Min && n <= a.Max {
		return nil
	}
	switch {
	case a.Usage != "":
		return Usagef("%s", a.Usage)
	case a.Max == 0:
		return Usagef("%s takes no arguments", name)
	case a.Min == a.Max && a.Max == 1:
		return Usagef("%s takes one %s", name, a.What)
	default:
		return Usagef("%s takes at most one %s", name, a.What)
	}
}

// Object splits the arguments of an ArgsObject command called name into
// the object's name (RESOURCE NAME or RESOURCE/NAME; none with --etcd-key
// KEY) and the rest, and checks the rest against the declaration.
func (a Args) Object(name string, args []string, key string) (obj, rest []string, err error) {
	switch {
	case key != "":
		obj, rest = nil, args
	case len(args) >= 1 && strings.Contains(args[0], "/"):
		obj, rest = args[:1], args[1:]
	case len(args) >= 2:
		obj, rest = args[:2], args[2:]
	default:
		return nil, nil, Usagef("name the object: RESOURCE NAME, RESOURCE/NAME or --etcd-key KEY")
	}
	switch {
	case a.More == "" && len(rest) > 0:
		noun := a.Noun
		if noun == "" {
			noun = "object"
		}
		return nil, nil, Usagef("%s takes one %s; unexpected %q", name, noun, rest)
	case a.More != "" && len(rest) == 0:
		return nil, nil, Usagef("%s", a.More)
	}
	return obj, rest, nil
}

// Flag is what the parser and completion know of a flag.
type Flag struct {
	// Names are the flag's name and aliases, without dashes.
	Names []string
	// Value: the flag takes a value (it is no boolean).
	Value bool
}

// Command is what the parser and completion know of a command.
type Command struct {
	Name   string
	Hidden bool
	// Flags are the command's own flags.
	Flags []Flag
	Args  Args
	// Values names what completes the values of some of its flags.
	Values map[string]Offer
}

// Program is a program's commands and global flags, which may come
// before or after the command name.
type Program struct {
	Commands []Command
	Global   []Flag
	// Builtin are flag names that stay before the command name besides
	// the global flags (help, version).
	Builtin []string
	// Values names what completes the values of flags every command names
	// alike (-n: namespaces); a command's own Values win.
	Values map[string]Offer
}

// values reports which flag names take a value: the global flags and
// cmd's, or, before the command name (cmd nil), every command's, as any
// command's flags may come first.
func (p Program) values(cmd *Command) map[string]bool {
	m := map[string]bool{}
	for _, g := range p.Global {
		for _, n := range g.Names {
			m[n] = g.Value
		}
	}
	cmds := p.Commands
	if cmd != nil {
		cmds = []Command{*cmd}
	}
	for _, c := range cmds {
		for _, f := range c.Flags {
			for _, n := range f.Names {
				m[n] = m[n] || f.Value
			}
		}
	}
	return m
}

// global reports whether a flag name stays before the command name.
func (p Program) global(name string) bool {
	for _, g := range p.Global {
		if slices.Contains(g.Names, name) {
			return true
		}
	}
	return slices.Contains(p.Builtin, name)
}

// Parse reads args (Parse): flags may come anywhere, kubectl's joined
// short forms are split, and "--" ends the flags. It returns the line and
// its command (nil when none or unknown). A flag that takes a value and
// ends a full line is a *UsageError; on a partial line it is Pending.
func (p Program) Parse(args []string, partial bool) (Line, *Command, error) {
	var cmd *Command
	g := Grammar{Values: p.values(nil), Global: p.global,
		Command: func(name string) (map[string]bool, bool) {
			for i := range p.Commands {
				if p.Commands[i].Name == name {
					cmd = &p.Commands[i]
					return p.values(cmd), true
				}
			}
			return nil, false
		}}
	l, err := Parse(g, args, partial)
	if err != nil {
		return Line{}, nil, &UsageError{Msg: err.Error()}
	}
	return l, cmd, nil
}

// CheckOutput checks -o against the forms a command writes: a usage error
// naming them otherwise.
func CheckOutput(o string, allowed ...string) error {
	if slices.Contains(allowed, o) {
		return nil
	}
	return Usagef("-o %q: must be one of %v", o, allowed)
}
