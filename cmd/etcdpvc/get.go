package main

import (
	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
)

// getOptions are the flags of `etcdpvc get`.
type getOptions struct {
	Args      []string
	Namespace string
	Key       string
	Rev       int64
	Print     printOptions
	// Force writes -o raw to a terminal.
	Force bool
	// Index reads the object as of a raft index of --wal.
	Index uint64
}

func getCommand() command {
	return command{
		name:  "get",
		usage: "print one stored object",
		args:  cliargs.Args{Kind: cliargs.ArgsObject},
		desc: "get reads one object from etcd (or from --db) and prints it as YAML or JSON, with\n" +
			"metadata.resourceVersion set to the key's mod revision as the apiserver would show it.\n" +
			"-o raw writes the stored bytes unchanged (ciphertext included); it refuses to write them\n" +
			"to a terminal (binary output garbles it) unless --force. --rev reads a past revision that\n" +
			"etcd has not compacted yet; with --wal, --index N reads the object as of raft index N of the log.",
		examples: `etcdpvc get pvc www-web-0 -n demo
etcdpvc get pv/pv-www-web-0 -o json
etcdpvc get --etcd-key /registry/services/specs/default/kubernetes -o raw > svc.bin
etcdpvc --db snapshot.db get sts web -n demo --rev 1200`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "yaml", Usage: "yaml, json or raw"},
			&cli.Int64Flag{Name: "rev", Usage: "read at this revision (0: the latest)"},
			indexFlag(),
			&cli.BoolFlag{Name: "show-secrets", Usage: "print Secret values instead of their sizes"},
			managedFieldsFlag(),
			&cli.BoolFlag{Name: "force", Usage: "write -o raw to a terminal anyway"},
		},
		action: func(c *cli.Context, e *env, in *input) error {
			o := getOptions{Args: in.obj, Namespace: in.namespace, Key: in.key,
				Rev: c.Int64("rev"), Print: printOptions{Output: c.String("output"), ShowSecrets: c.Bool("show-secrets"), HideManagedFields: !c.Bool("show-managed-fields")}, Force: c.Bool("force"), Index: c.Uint64("index")}
			if o.Index != 0 && o.Rev != 0 {
				return usagef("give --rev or --index, not both")
			}
			if err := cliargs.CheckOutput(o.Print.Output, "yaml", "json", "raw"); err != nil {
				return err
			}
			if o.Print.Output == "raw" && !o.Force {
				if isTerminal(e.stdout) {
					return flows.RawToTerminal("redirect the output (-o raw > value.bin, or -o raw | xxd | less), or pass --force")
				}
			}
			if o.Index != 0 && len(in.g.WAL) == 0 {
				return usagef("--index N reads raft index N of a write-ahead log: give --wal")
			}
			return runGet(e, in.g, o)
		},
	}
}

func runGet(e *env, g *globalOptions, o getOptions) error {
	s, err := openSession(e, g)
	if err != nil {
		return err
	}
	defer s.Close()
	ref, err := s.ref(o.Args, o.Namespace, o.Key)
	if err != nil {
		return err
	}
	got, err := s.Get(e.ctx, e, flows.GetRequest{Key: ref.Key, Rev: o.Rev, Index: o.Index, Raw: o.Print.Output == "raw"})
	if err != nil {
		return err
	}
	if o.Print.Output == "raw" {
		_, err = e.stdout.Write(got.Stored)
		return err
	}
	return printObject(e.stdout, got.Content, o.Print)
}
