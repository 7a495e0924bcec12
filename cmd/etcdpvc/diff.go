package main

import (
	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
)

// diffOptions are the flags of `etcdpvc diff`.
type diffOptions struct {
	A, B               string
	Resource           string
	Namespace          string
	AllNamespaces      bool
	Output             string
	ShowSecrets        bool
	IgnoreMetadataOnly bool
	PageSize           int64
}

func diffCommand() command {
	return command{
		name:      "diff",
		usage:     "compare two states of the keyspace: files, the live etcd, revisions",
		argsUsage: "A B [RESOURCE]",
		desc: "diff compares two states object by object and prints one line per object that differs:\n" +
			"ADDED (only in B), DELETED (only in A) or MODIFIED, its resource, namespace, name, its mod\n" +
			"revision in A and in B, and for MODIFIED what changed (as history says it). A and B are each\n" +
			"a db or snapshot file, `live` (the etcd of the connection flags) or `rev:N`: revision N of\n" +
			"the other side's source (of --db, or of the live etcd, when both are rev:N). A namespaced\n" +
			"RESOURCE is compared in one namespace, as in kubectl: -n NAMESPACE, else default; -A compares\n" +
			"every namespace. The closing line names the namespace compared.\n" +
			"Stored bytes are compared first; only values that differ are decrypted (--encryption-config)\n" +
			"and decoded. A value rewritten with another key or provider, same plaintext, is reported as\n" +
			"re-encrypted, content unchanged; an object of which only resourceVersion or the times of\n" +
			"managedFields changed as metadata only (--ignore-metadata-only leaves those out); one whose\n" +
			"stored fields differ only where this build does not decode them (a newer apiserver's field)\n" +
			"as changed in fields this build does not decode. A Secret's\n" +
			"values are shown by size unless --show-secrets. Totals per resource end the output.\n" +
			"-o diff adds a unified YAML diff per object; -o json writes one JSON object a line (\"type\":\n" +
			"\"object\" per object, then \"type\": \"total\" per resource and one \"type\": \"summary\").\n" +
			"Exit status: 0 when the states are the same, 11 when they differ, 10 when a value could not\n" +
			"be read on a side (listed: its line says why), never reported as equal; 13 (no verdict) when\n" +
			"the namespace compared holds nothing of the scope on either side while other namespaces do.\n" +
			"Both sides are read before the first line: a side that cannot be (a compacted rev:N) prints\n" +
			"none. diff does not read --wal (a log replays over one db only): dump --all-revisions or\n" +
			"history read it.\n" +
			"A `live` side is the latest state: a compaction of etcd while it is read does not stop it (it\n" +
			"continues from the last key read at the current revision, each key compared once), and the\n" +
			"summary and a warning say which revisions it spans (-o json: readToRevisionA/B). A `rev:N`\n" +
			"side is one revision: a compaction past N stops the diff after the records written, with\n" +
			"status 10 and where else to read revision N (--db, --wal); it is never reported as equal.",
		examples: `etcdpvc diff before.db after.db
etcdpvc --db snapshot.db diff rev:1200 rev:1500 pvc -A
etcdpvc --kubeadm diff snapshot.db live -A --ignore-metadata-only
etcdpvc diff before.db after.db secrets -n demo -o diff`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "compare this namespace only"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "compare every namespace"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table, diff (with a unified YAML diff per object) or json (one object a line)"},
			&cli.BoolFlag{Name: "show-secrets", Usage: "show the values of a Secret that changed instead of their sizes"},
			&cli.BoolFlag{Name: "ignore-metadata-only", Usage: "leave out objects of which only resourceVersion or managedFields times changed"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request (live etcd)"},
		},
		args: cliargs.Args{Kind: cliargs.ArgsCount, Min: 2, Max: 3, Usage: "diff takes two states A and B (a file, live or rev:N) and at most one RESOURCE"},
		action: func(c *cli.Context, e *env, in *input) error {
			o := diffOptions{A: c.Args().Get(0), B: c.Args().Get(1), Resource: c.Args().Get(2),
				Namespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"), Output: c.String("output"),
				ShowSecrets: c.Bool("show-secrets"), IgnoreMetadataOnly: c.Bool("ignore-metadata-only"), PageSize: c.Int64("page-size")}
			if err := cliargs.CheckOutput(o.Output, "table", "diff", "json"); err != nil {
				return err
			}
			if o.PageSize <= 0 {
				return usagef("--page-size must be positive")
			}
			if o.Namespace != "" && o.AllNamespaces {
				return usagef("give -n NAMESPACE or -A, not both")
			}
			return runDiff(e, in.g, o)
		},
	}
}

func runDiff(e *env, g *globalOptions, o diffOptions) error {
	r := flows.DiffRequest{A: o.A, B: o.B, DB: g.DB, WAL: g.WAL, Resource: o.Resource, Namespace: o.Namespace, AllNamespaces: o.AllNamespaces,
		Output: o.Output, ShowSecrets: o.ShowSecrets, IgnoreMetadataOnly: o.IgnoreMetadataOnly, PageSize: o.PageSize, Warn: e.Warn}
	if _, _, err := r.Sources(); err != nil {
		return err
	}
	// --kubeadm is read once; each side's session starts from its result.
	if err := applyKubeadm(g); err != nil {
		return err
	}
	first := true
	return flows.Diff(e.ctx, e.stdout, func(file string) (*flows.Session, error) {
		gs := *g
		gs.DB = file
		if !first {
			gs.kubeadmWarnings = nil
		}
		first = false
		s, err := openSession(e, &gs)
		if err != nil {
			return nil, err
		}
		return s.Session, nil
	}, r)
}
