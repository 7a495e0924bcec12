package main

import (
	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
)

// lsOptions are the flags of `etcdpvc ls`.
type lsOptions struct {
	Resource      string
	Namespace     string
	AllNamespaces bool
	Terminating   bool
	Deleted       bool
	Output        string
	ShowKeys      bool
	PageSize      int64
	Rev           int64
}

func lsCommand() command {
	return command{
		name:      "ls",
		usage:     "list stored objects, reading only their metadata",
		argsUsage: "[RESOURCE]",
		desc: "ls lists objects page by page (every page pinned to the first page's revision, unless a\n" +
			"compaction moves it: see below), decoding\n" +
			"only their metadata; claims and volumes are decoded whole for kubectl's columns (a claim\n" +
			"without spec.volumeName shows the volume whose claimRef names it). Without RESOURCE it\n" +
			"lists every resource. --terminating keeps objects with a deletionTimestamp; --deleted (with\n" +
			"--db or --wal) lists objects whose newest revision is a deletion; with --wal also an object\n" +
			"deleted and created again (another uid) inside the log, as \"Deleted@REV (uid UID),\n" +
			"re-created@REV\". STATUS shows \"Terminating 3d\"\n" +
			"with the deletionTimestamp's age. A value that cannot be decrypted or decoded is listed with\n" +
			"why in STATUS, and ls then exits with status 10. -o wide adds ENCRYPTION: how each value is\n" +
			"stored at rest, from its k8s:enc: header (identity, aescbc/key1, kms/NAME). -o json and -o yaml\n" +
			"write a Kubernetes List of the objects' metadata, with each key's revisions and encryption\n" +
			"under \"etcd\".\n" +
			"A compaction of etcd (kube-apiserver compacts every 5 minutes) that passes the revision of a\n" +
			"live listing while it runs does not stop it: it continues from the last key read at the\n" +
			"current revision, each object listed once, and warns that the listing spans revisions R1–R2\n" +
			"(a List then ends with readFromRevision and readToRevision, fields kubectl's List does not\n" +
			"have). With --rev N it does not mix revisions: a compaction past N stops the listing after\n" +
			"the objects written, with status 10 and where else to read revision N (--db, --wal).",
		examples: `etcdpvc ls -A --terminating
etcdpvc ls pvc -n demo
etcdpvc ls pv
etcdpvc ls pods -A -o wide --show-keys
etcdpvc ls pvc -A -o json | jq -r '.items[].metadata.name'
etcdpvc --db snapshot.db ls -A --deleted`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "list this namespace only"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "list every namespace"},
			&cli.BoolFlag{Name: "terminating", Usage: "only objects with a deletionTimestamp"},
			&cli.BoolFlag{Name: "deleted", Usage: "only objects whose newest revision is a deletion (--db, --wal), and with --wal objects deleted and created again"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table, wide, json or yaml"},
			&cli.BoolFlag{Name: "show-keys", Usage: "add the UID and etcd KEY columns to the table"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request"},
			&cli.Int64Flag{Name: "rev", Usage: "list as of this revision (0: the latest)"},
		},
		args: cliargs.Optional("RESOURCE", cliargs.OfferResources),
		action: func(c *cli.Context, e *env, in *input) error {
			o := lsOptions{Resource: c.Args().First(), Namespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"),
				Terminating: c.Bool("terminating"), Deleted: c.Bool("deleted"), Output: c.String("output"),
				ShowKeys: c.Bool("show-keys"), PageSize: c.Int64("page-size"), Rev: c.Int64("rev")}
			if err := cliargs.CheckOutput(o.Output, "table", "wide", "json", "yaml"); err != nil {
				return err
			}
			if o.PageSize <= 0 {
				return usagef("--page-size must be positive")
			}
			return runLs(e, in.g, o)
		},
	}
}

func runLs(e *env, g *globalOptions, o lsOptions) error {
	s, err := openSession(e, g)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.List(e.ctx, e, e.stdout, flows.ListRequest{Resource: o.Resource, Namespace: o.Namespace, AllNamespaces: o.AllNamespaces,
		Terminating: o.Terminating, Deleted: o.Deleted, Output: o.Output, ShowKeys: o.ShowKeys, PageSize: o.PageSize, Rev: o.Rev, Now: e.now()})
}
