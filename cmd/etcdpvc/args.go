package main

import (
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/session"
)

// object reads the object an object command's arguments name, and checks
// what follows it against the declaration (cliargs.Args.Object).
func (in *input) object() error {
	if !in.cmd.args.Bare {
		in.namespace, in.key = in.c.String("namespace"), in.c.String("etcd-key")
	}
	obj, rest, err := in.cmd.args.Object(in.cmd.name, in.c.Args().Slice(), in.key)
	if err != nil {
		return err
	}
	in.obj, in.rest = obj, rest
	return nil
}

// objectFlags name one object: -n and --etcd-key.
func objectFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "the object's namespace (default \"default\" for namespaced resources)"},
		&cli.StringFlag{Name: "etcd-key", Usage: "name the object by its raw etcd key instead of RESOURCE NAME"},
	}
}

// program is what the command line parser and completion know of the
// commands, as declared, and of the global flags.
func program(cmds []command) cliargs.Program {
	p := cliargs.Program{Builtin: []string{"help", "h", "version", "v"},
		Values: map[string]cliargs.Offer{"namespace": cliargs.OfferNamespaces, "n": cliargs.OfferNamespaces}}
	for _, g := range globalFlags {
		p.Global = append(p.Global, cliargs.Flag{Names: g.cliFlag(false).Names(), Value: g.kind != session.KindBool})
	}
	for _, c := range cmds {
		pc := cliargs.Command{Name: c.name, Hidden: c.hidden, Args: c.args, Values: c.values}
		for _, f := range c.flags {
			_, isBool := f.(*cli.BoolFlag)
			pc.Flags = append(pc.Flags, cliargs.Flag{Names: f.Names(), Value: !isBool})
		}
		p.Commands = append(p.Commands, pc)
	}
	return p
}

// reorderArgs lets flags come anywhere, as in kubectl: it moves every flag
// (with its value) of the command line before the positional arguments of
// its command, so that `etcdpvc undelete pvc x -n demo --yes` and
// `etcdpvc --endpoints E get pvc x` both parse. "--" ends flag parsing. A
// flag that takes a value but ends the command line is a usage error.
func reorderArgs(cmds []command, args []string) ([]string, error) {
	l, _, err := program(cmds).Parse(nodeArgs(args), false)
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
	return &usageError{Msg: cliargs.FlagError(err.Error(), names)}
}

// unknownCommand is the error for a command name that does not exist.
func unknownCommand(app *cli.App, name string) error {
	var names []string
	for _, c := range app.Commands {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	return &usageError{Msg: cliargs.UnknownCommand(name, names)}
}

// nodeArgs gives --node its optional value: "--node ROOT" when ROOT is an
// absolute path (no command or resource name is one), "--node=ROOT", and a
// bare "--node", which becomes "--node=" (ROOT found: "/", else "/host").
func nodeArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a != "--node" {
			out = append(out, a)
			continue
		}
		if i+1 < len(args) && filepath.IsAbs(args[i+1]) {
			out = append(out, "--node="+args[i+1])
			i++
			continue
		}
		out = append(out, "--node=")
	}
	return out
}
