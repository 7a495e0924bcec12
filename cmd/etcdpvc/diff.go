package main

import (
	"bufio"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/inspect"
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
			"the other side's source (of --db, or of the live etcd, when both are rev:N).\n" +
			"Stored bytes are compared first; only values that differ are decrypted (--encryption-config)\n" +
			"and decoded. A value rewritten with another key or provider, same plaintext, is reported as\n" +
			"re-encrypted, content unchanged; an object of which only resourceVersion or the times of\n" +
			"managedFields changed as metadata only (--ignore-metadata-only leaves those out). A Secret's\n" +
			"values are shown by size unless --show-secrets. Totals per resource end the output.\n" +
			"-o diff adds a unified YAML diff per object; -o json writes one JSON object a line (\"type\":\n" +
			"\"object\" per object, then \"type\": \"total\" per resource and one \"type\": \"summary\").\n" +
			"Exit status: 0 when the states are the same, 11 when they differ, 10 when a value could not\n" +
			"be read on a side (listed: its line says why), never reported as equal. diff does not read\n" +
			"--wal (a log replays over one db only): dump --all-revisions or history read it.",
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
			if err := checkOutput(o.Output, "table", "diff", "json"); err != nil {
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
	sa, sb, err := inspect.DiffSources(g.DB, o.A, o.B)
	if err != nil {
		return &usageError{Msg: err.Error()}
	}
	if g.WAL != "" {
		// Each side opens its own source: --wal would be replayed over
		// every side's db, and a log replays only the db it follows.
		return withHint(usagef("diff does not read --wal: each side is a db or snapshot file, live, or rev:N of --db"),
			"read the log with `etcdpvc --wal DIR [--db DB] dump --all-revisions` (every revision it establishes) or `history KEY`")
	}
	// --kubeadm is read once; each side's session starts from its result.
	if err := applyKubeadm(g); err != nil {
		return err
	}
	open := func(src inspect.DiffSource, first bool) (*session, error) {
		gs := *g
		gs.DB = src.File
		if !first {
			gs.kubeadmWarnings = nil
		}
		return openSession(e, &gs)
	}
	a, err := open(sa, true)
	if err != nil {
		return fmt.Errorf("diff: A (%s): %w", sa, err)
	}
	defer a.Close()
	b := a
	if sb.File != sa.File {
		if b, err = open(sb, false); err != nil {
			return fmt.Errorf("diff: B (%s): %w", sb, err)
		}
		defer b.Close()
	}
	scope, err := a.Scope(o.Resource, o.Namespace, o.AllNamespaces)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(e.stdout, 64<<10)
	p := inspect.DiffWriter{W: w, JSON: o.Output == "json"}
	sum, err := inspect.Diff(e.ctx,
		inspect.DiffSide{Reader: a.Reader, Rev: sa.Rev, Planner: a.Planner},
		inspect.DiffSide{Reader: b.Reader, Rev: sb.Rev, Planner: b.Planner},
		inspect.DiffOptions{
			StorePrefix: g.Prefix, ListPrefix: scope.Prefix,
			Match: func(key string) bool {
				_, _, _, _, ok := scope.Match(g.Prefix, key)
				return ok
			},
			ShowSecrets: o.ShowSecrets, IgnoreMetadataOnly: o.IgnoreMetadataOnly,
			WithDiff: o.Output == "diff", PageSize: o.PageSize,
		}, p.Record)
	if err != nil {
		if ferr := w.Flush(); ferr != nil {
			return ferr
		}
		return fmt.Errorf("diff %s with %s: %w", sa, sb, err)
	}
	if err := p.Summary(sa, sb, sum); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	switch {
	case sum.Unreadable > 0:
		return withHint(&incompleteError{msg: fmt.Sprintf("diff incomplete: %s could not be compared (listed, with why)",
			inspect.Count(sum.Unreadable, "object", "objects"))},
			"a value encrypted at rest needs the kube-apiserver's EncryptionConfiguration: --encryption-config FILE (or --kubeadm)")
	case sum.Differ > 0:
		return fmt.Errorf("%s: %w", inspect.Count(sum.Differ, "object differs", "objects differ"), inspect.ErrDiffer)
	}
	return nil
}
