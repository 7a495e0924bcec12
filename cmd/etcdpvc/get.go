package main

import (
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/resource"
)

// getOptions are the flags of `etcdpvc get`.
type getOptions struct {
	Rev   int64
	Print printOptions
	// Format is -o name, jsonpath or custom-columns (Kind "" for yaml,
	// json and raw).
	Format inspect.ListFormat
	// Force writes -o raw to a terminal.
	Force bool
	// Index reads the object as of a raft index of --wal; At as of the
	// last entry of --wal certainly before a time.
	Index uint64
	At    time.Time
}

func getCommand() command {
	return command{
		name:  "get",
		usage: "print one stored object",
		args:  cliargs.Args{Kind: cliargs.ArgsObject, OtherForms: true},
		desc: "get reads one object from etcd (or from --db) and prints it as YAML or JSON, with\n" +
			"metadata.resourceVersion set to the key's mod revision as the apiserver would show it.\n" +
			"-o raw writes the stored bytes unchanged (ciphertext included); it refuses to write them\n" +
			"to a terminal (binary output garbles it) unless --force. --rev reads a past revision that\n" +
			"etcd has not compacted yet; with --wal, --index N reads the object as of raft index N of the log, and --at TIME as the\n" +
			"last entry certainly before TIME left it, by the times the cluster writes into its objects.\n" +
			kubectlFormatsHelp + " --no-headers leaves out the custom columns'\n" +
			"headers. get lists nothing: RESOURCE without NAME is an error that names the ls command to run.",
		examples: `etcdpvc get pvc www-web-0 -n demo
etcdpvc get pv/pv-www-web-0 -o json
etcdpvc get --etcd-key /registry/services/specs/default/kubernetes -o raw > svc.bin
etcdpvc --db snapshot.db get sts web -n demo --rev 1200
etcdpvc get pvc www-web-0 -n demo -o jsonpath='{.spec.volumeName}'
etcdpvc get sts web -n demo -o name
etcdpvc get pvc www-web-0 -n demo -o custom-columns=NAME:.metadata.name,SIZE:.spec.resources.requests.storage --no-headers`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "yaml", Usage: "yaml, json, raw, name, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC or custom-columns-file=FILE"},
			&cli.BoolFlag{Name: "no-headers", Usage: "leave out the headers of -o custom-columns"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "not for get, which reads one object: the error names the ls RESOURCE -A to run"},
			&cli.Int64Flag{Name: "rev", Usage: "read at this revision (0: the latest)"},
			indexFlag(),
			&cli.StringFlag{Name: "at", Usage: "with --wal: read the object as the last entry certainly before this time left it (RFC 3339, or HH:MM[:SS] today in the local zone)"},
			&cli.BoolFlag{Name: "show-secrets", Usage: "print Secret values instead of their sizes"},
			managedFieldsFlag(),
			&cli.BoolFlag{Name: "force", Usage: "write -o raw to a terminal anyway"},
		},
		action: func(c *cli.Context, e *env, in *input) error {
			if err := getObject(c, in); err != nil {
				return err
			}
			o := getOptions{Rev: c.Int64("rev"), Print: printOptions{Output: c.String("output"), ShowSecrets: c.Bool("show-secrets"), HideManagedFields: !c.Bool("show-managed-fields")}, Force: c.Bool("force"), Index: c.Uint64("index")}
			at, err := clockTimeFlag("at", c.String("at"), e.now())
			if err != nil {
				return err
			}
			o.At = at
			if n := len(slices.DeleteFunc([]bool{o.Index != 0, o.Rev != 0, !at.IsZero()}, func(set bool) bool { return !set })); n > 1 {
				return usagef("give one of --rev, --index and --at")
			}
			f, err := parseFormat(o.Print.Output, getFormats, c.Bool("no-headers"), "")
			if err != nil {
				return err
			}
			if f.Kind == inspect.FormatName || f.Kind == inspect.FormatJSONPath || f.Kind == inspect.FormatCustomColumns {
				o.Format = f
			}
			if o.Print.Output == "raw" && !o.Force {
				if isTerminal(e.rawStdout) {
					return flows.RawToTerminal("redirect the output (-o raw > value.bin, or -o raw | xxd | less), or pass --force")
				}
			}
			if o.Index != 0 && len(in.g.WAL) == 0 {
				return usagef("--index N reads raft index N of a write-ahead log: give --wal")
			}
			if !at.IsZero() && len(in.g.WAL) == 0 {
				return usagef("--at TIME reads the object as a write-ahead log's times place it: give --wal")
			}
			return readObject(e, in, func(s *cliSession, ref resource.Ref) error {
				return printGot(e, s, ref, o)
			})
		},
	}
}

// printGot reads ref and prints it as o says.
func printGot(e *env, s *cliSession, ref resource.Ref, o getOptions) error {
	got, err := s.Get(e.ctx, e, flows.GetRequest{Key: ref.Key, Rev: o.Rev, Index: o.Index, At: o.At, Raw: o.Print.Output == "raw"})
	if err != nil {
		return err
	}
	if o.Print.Output == "raw" {
		_, err = e.stdout.Write(got.Stored)
		return err
	}
	if o.Format.Kind != "" {
		content := got.Content
		if !o.Print.ShowSecrets {
			content = codec.RedactSecret(content)
		}
		return inspect.PrintObject(e.stdout, content, o.Format)
	}
	return printObject(e.stdout, got.Content, o.Print)
}

// getFormats are get's -o formats ("raw" is get's own).
var getFormats = []string{inspect.FormatYAML, inspect.FormatJSON, "raw", inspect.FormatName, inspect.FormatJSONPath, inspect.FormatCustomColumns}

// getObject checks get's arguments: one object. A RESOURCE without a NAME
// (and -A) is a usage error whose hint is the ls that lists them, with the
// -n or -A given.
func getObject(c *cli.Context, in *input) error {
	args := c.Args().Slice()
	all := c.Bool("all-namespaces")
	if c.String("etcd-key") == "" && (len(args) == 1 && !strings.Contains(args[0], "/") || len(args) == 0 && all) {
		res := "RESOURCE"
		if len(args) == 1 {
			res = args[0]
			// The hint names an ls that works: a resource kubectl
			// would not resolve is the error.
			if _, err := resource.Lookup(res); err != nil {
				return usagef("%v", err)
			}
		}
		ls := "etcdpvc ls " + res
		switch {
		case all:
			ls += " -A"
		case c.String("namespace") != "":
			ls += " -n " + c.String("namespace")
		}
		return flows.WithHint(usagef("get reads one object: name it (RESOURCE NAME, RESOURCE/NAME or --etcd-key KEY)"), "to list them: "+ls)
	}
	if all {
		return usagef("-A lists every namespace: get reads one object (-n NAMESPACE names its namespace)")
	}
	return in.object()
}
