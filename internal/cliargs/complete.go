package cliargs

import (
	"maps"
	"slices"
	"strings"
)

// Lookup finds the completion candidates that are read from somewhere
// (etcd, the backup directory) for the command line l being completed.
// Each returns nil when it cannot read them.
type Lookup interface {
	// Names lists the names of resource's objects starting with typed:
	// in the namespace l gives, or all of them (-A, a cluster-scoped
	// resource).
	Names(l Line, resource, typed string) []string
	// Claims lists persistent volume claims as NAMESPACE/NAME.
	Claims(l Line, typed string) []string
	// Backups lists backup files, newest first.
	Backups(l Line, typed string) []string
}

// Completer finds the candidates for the word being completed on a
// command line of a Program. The program's help command (urfave/cli's
// "help [COMMAND]") is known without being declared.
type Completer struct {
	Program
	// Resources are every resource name, offered for a RESOURCE.
	Resources []string
	Lookup    Lookup
	// Max bounds the candidates returned.
	Max int
}

// helpCommand is the help command, for completion.
var helpCommand = Command{Name: "help", Hidden: true, Args: Args{Kind: ArgsCount, Max: 1, First: OfferCommands}}

// Complete returns the candidates for the last of words (the command line
// after the program's name; the last is the word being completed) that
// start with it, each once, at most c.Max of them.
func (c Completer) Complete(words []string) []string {
	cur := words[len(words)-1]
	l, cmd := c.ParseCompletion(words[:len(words)-1])
	var out []string
	switch {
	case l.Pending != "":
		what := c.Values[l.Pending]
		if cmd != nil && cmd.Values[l.Pending] != OfferNothing {
			what = cmd.Values[l.Pending]
		}
		out = c.offer(l, what, cur)
	case strings.HasPrefix(cur, "-"):
		out = c.flagNames(cmd)
	case cmd == nil:
		if len(l.Positional) == 0 {
			out = append(c.commandNames(), helpCommand.Name)
		}
	default:
		out = c.args(l, cmd, cur)
	}
	return Candidates(out, cur, c.Max)
}

// ParseCompletion reads the words before the one being completed, as the
// command line parser does, with its command (nil: none or unknown).
func (c Completer) ParseCompletion(words []string) (Line, *Command) {
	p := c.Program
	p.Commands = append(slices.Clip(p.Commands), helpCommand)
	l, cmd, _ := p.Parse(words, true)
	return l, cmd
}

// offer lists the candidates one Offer makes.
func (c Completer) offer(l Line, what Offer, cur string) []string {
	switch what {
	case OfferResources:
		return c.Resources
	case OfferCommands:
		return c.commandNames()
	case OfferShells:
		return slices.Sorted(maps.Keys(completionScripts))
	case OfferBackups:
		return c.Lookup.Backups(l, cur)
	case OfferNamespaces:
		return c.Lookup.Names(l, "namespaces", cur)
	case OfferClaims:
		return c.Lookup.Claims(l, cur)
	case OfferGroupBy:
		return GroupByValues
	}
	return nil
}

// args completes a command's positional arguments, as its declaration
// says.
func (c Completer) args(l Line, cmd *Command, cur string) []string {
	n := len(l.Positional)
	a := cmd.Args
	if a.Kind != ArgsObject {
		if n == 0 {
			return c.offer(l, a.First, cur)
		}
		return nil
	}
	resources := a.Resources
	if resources == nil {
		resources = c.Resources
	}
	switch {
	case n == 0 && strings.Contains(cur, "/"):
		res, _, _ := strings.Cut(cur, "/")
		if !slices.Contains(resources, res) {
			return nil
		}
		names := c.Lookup.Names(l, res, "")
		for i, name := range names {
			names[i] = res + "/" + name
		}
		return names
	case n == 0:
		return resources
	case n == 1 && !strings.Contains(l.Positional[0], "/"):
		return c.Lookup.Names(l, l.Positional[0], cur)
	}
	return nil
}

// commandNames lists the commands users type.
func (c Completer) commandNames() []string {
	var out []string
	for _, cmd := range c.Commands {
		if !cmd.Hidden {
			out = append(out, cmd.Name)
		}
	}
	return out
}

// flagNames lists the flags of cmd (nil: before a command), global ones
// included, as typed.
func (c Completer) flagNames(cmd *Command) []string {
	var out []string
	add := func(fs []Flag) {
		for _, f := range fs {
			for _, n := range f.Names {
				out = append(out, Dashes(n))
			}
		}
	}
	if cmd != nil {
		add(cmd.Flags)
	}
	add(c.Global)
	return append(out, "--help")
}
