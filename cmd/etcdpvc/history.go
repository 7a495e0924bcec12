package main

import (
	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/resource"
)

func historyCommand() command {
	return command{
		name:  "history",
		usage: "list every revision of one object that etcd still holds",
		args:  cliargs.Args{Kind: cliargs.ArgsObject},
		desc: "history shows every revision of one key still held by etcd (or by --db), deletions and\n" +
			"re-creations included: revision, TIME, version, create revision, lease, MANAGER and a one-line summary\n" +
			"of what changed. MANAGER is the field manager whose metadata.managedFields entry the revision\n" +
			"added or dated anew (kubectl, a controller, kubelet (status)); \"-\" where managedFields do not\n" +
			"tell: a deletion, a revision whose previous one is not held, a write straight to etcd, a removal\n" +
			"of fields, a manager's second change within one second (the entries' times are to the second).\n" +
			"TIME is when each write happened: an interval the times the cluster writes into its objects\n" +
			"bound (Lease renewals, managedFields; \"10:41:58 ±2s\", two times when wide, \"-\" unknown,\n" +
			"said in a # line; -o json gives both bounds), read from every entry of the log with --wal,\n" +
			"else from the revisions the db or etcd holds; a writer whose clock is off is named in a # line.\n" +
			"With --wal, ETCD USER is the etcd user the request carried, which\n" +
			"etcd records only while its authentication is enabled (\"-\" otherwise): the closest etcd comes to\n" +
			"who deleted it.\n" +
			"A history whose start was compacted away says so. Revisions are indexed by\n" +
			"mod revision: a re-created object starts again at version 1. A Secret's changed values (data,\n" +
			"stringData, the last-applied-configuration annotation) are reported by size unless\n" +
			"--show-secrets is given. A key of which no revision is held exits with status 3, saying over\n" +
			"which revisions that is known; an undecodable revision is listed and the status is 10, as it\n" +
			"is when a write of the log has an outcome the log does not establish (a row \"unknown\").\n" +
			"Where a compacted history starts, and a key of which no revision is held, the output names\n" +
			"the compaction revision and where older revisions may be: a snapshot or member db (--db), a\n" +
			"member's write-ahead log (--wal). A history that etcd's compaction cuts while it is read is\n" +
			"read again whole (three times at most, then it fails saying so): nothing is printed before.",
		examples: `etcdpvc history pvc www-web-0 -n demo
etcdpvc --db snapshot.db history cm web-config -n demo -o json`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table, json or yaml"},
			&cli.BoolFlag{Name: "show-secrets", Usage: "show the values of a Secret that changed instead of their sizes"},
		},
		action: func(c *cli.Context, e *env, in *input) error {
			output, showSecrets := c.String("output"), c.Bool("show-secrets")
			if err := cliargs.CheckOutput(output, "table", "json", "yaml"); err != nil {
				return err
			}
			return readObject(e, in, func(s *cliSession, ref resource.Ref) error {
				return s.History(e.ctx, e.stdout, ref, output, showSecrets, e.now())
			})
		},
	}
}
