package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/connect"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
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
			if err := checkOutput(o.Print.Output, "yaml", "json", "raw"); err != nil {
				return err
			}
			if o.Print.Output == "raw" && !o.Force {
				if err := refuseRawToTerminal(e); err != nil {
					return err
				}
			}
			if o.Index != 0 && in.g.WAL == "" {
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
	if o.Index != 0 {
		kv, err := getAtIndex(e, s, ref.Key, o.Index)
		if err != nil {
			return err
		}
		if o.Print.Output == "raw" {
			_, err = e.stdout.Write(kv.Value)
			return err
		}
		cur, err := s.Planner.Open(e.ctx, *kv)
		if err != nil {
			return fmt.Errorf("get %s at raft index %d: %w", objectName(s.g.Prefix, ref.Key), o.Index, err)
		}
		return printObject(e.stdout, inspect.WithResourceVersion(cur.Obj.Content, kv.ModRevision), o.Print)
	}
	if o.Print.Output == "raw" {
		kv, err := s.Reader.Get(e.ctx, ref.Key, o.Rev)
		if errors.Is(err, store.ErrNotFound) {
			return surgery.NotFound(e.ctx, s.Reader, s.g.Prefix, ref.Key, o.Rev, err)
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", ref.Key, err)
		}
		_, err = e.stdout.Write(kv.Value)
		return err
	}
	cur, err := s.Planner.Load(e.ctx, s.Reader, ref.Key, o.Rev)
	if err != nil {
		return err
	}
	if len(cur.Obj.Undecoded) > 0 {
		fmt.Fprintf(e.stderr, "etcdpvc: note: %s is not in this build's scheme; %d bytes beyond metadata were left undecoded (see -o raw)\n", cur.Obj.GVK, len(cur.Obj.Undecoded))
	}
	return printObject(e.stdout, inspect.WithResourceVersion(cur.Obj.Content, cur.KV.ModRevision), o.Print)
}

// refuseRawToTerminal refuses -o raw when stdout is a terminal: binary
// bytes garble the session (and can send it control sequences).
func refuseRawToTerminal(e *env) error {
	if !isTerminal(e.stdout) {
		return nil
	}
	return &connect.RefusedError{Msg: "-o raw writes binary bytes, which would garble this terminal; nothing printed", Hint: "redirect the output (-o raw > value.bin, or -o raw | xxd | less), or pass --force"}
}
