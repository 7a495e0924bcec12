package main

import (
	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/inspect"
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
	Format        inspect.ListFormat
	Selector      string
	FieldSelector string
	ShowKeys      bool
	ShowEtcd      bool
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
			"re-created@REV\"; TIME is when the deletion happened, as the times the cluster writes into\n" +
			"its objects bound it (Lease renewals, managedFields; read from the log with --wal, else from\n" +
			"the revisions the db holds; -o json: etcd.deleteTime). STATUS shows \"Terminating 3d\"\n" +
			"with the deletionTimestamp's age. A value that cannot be decrypted or decoded is listed with\n" +
			"why in STATUS, and ls then exits with status 10. -o wide adds kubectl's wide columns (and for\n" +
			"claims the volume's RECLAIM POLICY and the pods MOUNTED BY each); --show-etcd adds, to any table,\n" +
			"how etcd keeps each object: FINALIZERS, REVISION (and CREATED, VERSION, LEASE for other resources)\n" +
			"and ENCRYPTION, how each value is stored at rest, from its k8s:enc: header (identity,\n" +
			"aescbc/key1, kms/NAME). -o json and -o yaml write a Kubernetes List of the objects' metadata,\n" +
			"with each key's revisions and encryption under \"etcd\". A revision, create revision or version\n" +
			"a write-ahead log does not establish is \"-\" in the table and left out of the JSON.\n" +
			kubectlFormatsHelp + " -o jsonpath runs its template over\n" +
			"the List of every object listed, as kubectl does, so it holds them all in memory; so does\n" +
			"--sort-by JSONPATH (kubectl's order: objects without the field first), which decodes each object\n" +
			"whole. --no-headers leaves out a table's headers.\n" +
			"-l SELECTOR keeps the objects whose labels match (kubectl's syntax: app=web,tier!=db, 'env in\n" +
			"(a,b)', key, !key); --field-selector FIELD=VALUE (==, !=, comma-separated) the objects whose\n" +
			"fields match, with the fields the apiserver selects the resource by: metadata.name and\n" +
			"metadata.namespace, and for example pods' spec.nodeName, status.phase, spec.restartPolicy,\n" +
			"spec.schedulerName, spec.serviceAccountName, spec.hostNetwork, status.podIP,\n" +
			"status.nominatedNodeName; namespaces' status.phase (no metadata.namespace); secrets' type;\n" +
			"events' involvedObject.*, reason, reportingComponent, source, type; nodes' spec.unschedulable\n" +
			"(no metadata.namespace); services' spec.clusterIP, spec.type; replicationcontrollers'\n" +
			"status.replicas; jobs' status.successful; a custom resource's, the selectableFields of its\n" +
			"CustomResourceDefinition's storage version. Another field is an error, as the apiserver's\n" +
			"\"field label not supported\". Both decode each object whole, except a field selector on the\n" +
			"name and namespace alone; a value that cannot be read cannot be matched and is listed, with why.\n" +
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
etcdpvc ls pvc -A -o wide --show-etcd
etcdpvc ls pods -A -l app=web --field-selector status.phase!=Running
etcdpvc ls pvc -A -o name
etcdpvc ls pvc -A -o custom-columns=NAME:.metadata.name,SIZE:.spec.resources.requests.storage --sort-by .spec.resources.requests.storage
etcdpvc ls pods -n demo -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.spec.nodeName}{"\n"}{end}'
etcdpvc ls pvc -A -o json | jq -r '.items[].metadata.name'
etcdpvc --db snapshot.db ls -A --deleted`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "list this namespace only"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "list every namespace"},
			&cli.BoolFlag{Name: "terminating", Usage: "only objects with a deletionTimestamp"},
			&cli.BoolFlag{Name: "deleted", Usage: "only objects whose newest revision is a deletion (--db, --wal), and with --wal objects deleted and created again"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table, wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC or custom-columns-file=FILE"},
			&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Usage: "only objects whose labels match this selector (kubectl's syntax)"},
			&cli.StringFlag{Name: "field-selector", Usage: "only objects whose fields match (FIELD=VALUE, ==, !=, comma-separated; the fields the apiserver selects the resource by)"},
			&cli.BoolFlag{Name: "no-headers", Usage: "leave out the table's headers (tables, custom-columns)"},
			&cli.StringFlag{Name: "sort-by", Usage: "sort by this JSONPath of each object, as kubectl does (decodes each object whole and holds the listed objects in memory)"},
			&cli.BoolFlag{Name: "show-keys", Usage: "add the UID and etcd KEY columns to the table"},
			&cli.BoolFlag{Name: "show-etcd", Usage: "add how etcd keeps each object to the table: FINALIZERS, REVISION (CREATED, VERSION, LEASE) and ENCRYPTION"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request"},
			&cli.Int64Flag{Name: "rev", Usage: "list as of this revision (0: the latest)"},
		},
		args: cliargs.Optional("RESOURCE", cliargs.OfferResources),
		action: func(c *cli.Context, e *env, in *input) error {
			o := lsOptions{Resource: c.Args().First(), Namespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"),
				Terminating: c.Bool("terminating"), Deleted: c.Bool("deleted"), Output: c.String("output"),
				Selector: c.String("selector"), FieldSelector: c.String("field-selector"),
				ShowKeys: c.Bool("show-keys"), ShowEtcd: c.Bool("show-etcd"), PageSize: c.Int64("page-size"), Rev: c.Int64("rev")}
			f, err := parseFormat(o.Output, lsFormats, c.Bool("no-headers"), c.String("sort-by"))
			if err != nil {
				return err
			}
			o.Format = f
			if o.ShowKeys && (f.Kind == inspect.FormatName || f.Kind == inspect.FormatJSONPath || f.Kind == inspect.FormatCustomColumns) {
				return usagef("--show-keys adds columns to a table: -o %s shows no columns of its own (-o json and yaml hold the keys under \"etcd\")", f.Kind)
			}
			if o.ShowEtcd && !(f.Kind == inspect.FormatTable || f.Kind == inspect.FormatWide) {
				return usagef("--show-etcd adds columns to a table: -o %s shows no columns of its own (-o json and yaml hold the same under \"etcd\")", f.Kind)
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
		Terminating: o.Terminating, Deleted: o.Deleted, LabelSelector: o.Selector, FieldSelector: o.FieldSelector,
		Format: o.Format, ShowKeys: o.ShowKeys, ShowEtcd: o.ShowEtcd, PageSize: o.PageSize, Rev: o.Rev, Now: e.now()})
}

// lsFormats are ls's -o formats.
var lsFormats = []string{inspect.FormatTable, inspect.FormatWide, inspect.FormatJSON, inspect.FormatYAML,
	inspect.FormatName, inspect.FormatJSONPath, inspect.FormatCustomColumns}
