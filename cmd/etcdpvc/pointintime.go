package main

import (
	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
)

func snapshotCommand() command {
	return command{
		name:  "snapshot",
		usage: "write the keyspace at any raft index as an etcd snapshot, from an older snapshot and the members' logs",
		desc: "snapshot is point-in-time recovery. It replays a member's write-ahead log (--wal, repeated for\n" +
			"several members' logs, merged by raft index) over an older snapshot of the cluster (--db, or\n" +
			"--wal-base with the member's current db as --db), exactly as etcd applied each entry, up to the\n" +
			"point given, and writes the keyspace as it stood there to --out: a snapshot file that\n" +
			"`etcdutl snapshot restore` accepts (its sha256 trailer written), with every revision, version,\n" +
			"create and mod revision etcd gave, the leases, the compaction, and the raft index and term of\n" +
			"the point. Membership, cluster version, users and roles stay as the older snapshot holds them\n" +
			"(restore writes a new membership). The point is one of: --index N (a raft index), --before-revision\n" +
			"R (just before the entry that made revision R), --before-delete KEY (just before the first entry\n" +
			"after the older snapshot that deletes KEY, or a key under it when KEY ends in /), --before-time TIME\n" +
			"(the last entry certainly before TIME, by the times the cluster writes into its objects: Leases'\n" +
			"renewals, managedFields; the report says the entry's interval and whether TIME falls inside the next\n" +
			"entry's, which it leaves out; TIME is RFC 3339 or HH:MM[:SS] today in the local zone).\n" +
			"It is refused when the log does not reach from the older snapshot's consistent index to the point\n" +
			"without a gap (status 10: give another member's log too), when an entry up to the point has an\n" +
			"outcome the log does not establish (status 10), when the point is before the older snapshot (5),\n" +
			"or when the logs and the snapshot are not one cluster's. The report counts, per resource, the\n" +
			"objects at the point and the changes since the older snapshot; with --wal-base it also says what\n" +
			"restoring the point would do to the current db (objects that come back, changes undone, objects\n" +
			"created since that are removed). --dry-run writes nothing. Neither input is ever written.\n" +
			"docs/runbooks/point-in-time.md: finding the point, restoring with --bump-revision and\n" +
			"--mark-compacted, and when a create-only `recover` into the live cluster is the better choice.",
		examples: `etcdpvc --db /backup/etcd-0300.db --wal /var/lib/etcd/member/wal snapshot --before-delete /registry/configmaps/prod/ --out /root/pit.db
etcdpvc --db /backup/etcd-0300.db --wal /var/lib/etcd/member/wal snapshot --before-time 10:42 --out /root/pit.db
etcdpvc --wal-base /backup/etcd-0300.db --db /var/lib/etcd/member/snap/db --wal /var/lib/etcd/member/wal snapshot --index 1834120 --dry-run
etcdpvc --db old.db --wal m1/member/wal --wal m2/member/wal snapshot --before-revision 921400 --out pit.db -o json`,
		flags: []cli.Flag{
			&cli.Uint64Flag{Name: "index", Usage: "the raft index of the point (the snapshot's consistent index)"},
			&cli.Int64Flag{Name: "before-revision", Usage: "the point just before the entry that made this revision"},
			&cli.StringFlag{Name: "before-delete", Usage: "the point just before the first entry that deletes this etcd key (a prefix when it ends in /)"},
			&cli.StringFlag{Name: "before-time", Usage: "the point at the last entry certainly before this time: RFC 3339, or HH:MM[:SS] today in the local zone"},
			&cli.StringFlag{Name: "out", Usage: "the snapshot file to write (it must not exist)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "say what the snapshot would hold; write nothing"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text", Usage: "the report: text or json"},
		},
		args: cliargs.None,
		action: func(c *cli.Context, e *env, in *input) error {
			if err := cliargs.CheckOutput(c.String("output"), "text", "json"); err != nil {
				return err
			}
			if c.Bool("dry-run") && c.String("out") != "" {
				return usagef("--dry-run writes nothing: leave out --out, or --dry-run")
			}
			before, err := clockTimeFlag("before-time", c.String("before-time"), e.now())
			if err != nil {
				return err
			}
			s, err := openSession(e, in.g)
			if err != nil {
				return err
			}
			defer s.Close()
			return s.PointInTime(e.ctx, e.stdout, flows.PointInTimeRequest{Index: c.Uint64("index"), BeforeRevision: c.Int64("before-revision"),
				BeforeDelete: c.String("before-delete"), BeforeTime: before, Out: c.String("out"), DryRun: c.Bool("dry-run"), JSON: c.String("output") == "json"})
		},
	}
}
