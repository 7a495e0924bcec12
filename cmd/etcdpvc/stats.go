package main

import (
	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
)

// statsOptions are the flags of `etcdpvc stats`.
type statsOptions struct {
	Output   string
	Top      int
	PageSize int64
}

func statsCommand() command {
	return command{
		name:  "stats",
		usage: "count objects and bytes per resource, the largest objects, revisions and compaction",
		desc: "stats reads every key once and reports, per resource, the objects and the bytes of their\n" +
			"current values; under ENCRYPTION AT REST, how many are stored under each provider and key\n" +
			"(as their k8s:enc: header names it; plain values as identity), and with --encryption-config\n" +
			"those not under the resource's write provider (the config's first) marked STALE: what a key\n" +
			"rotation still has to rewrite (docs/runbooks/encryption-rotation.md); under STORED VERSIONS,\n" +
			"the apiVersion each object's value is stored at (decrypted with --encryption-config), those at\n" +
			"a version a Kubernetes release stopped serving marked NOT SERVED from that release: rewrite\n" +
			"them before the upgrade; under UNREADABLE, the objects whose value could not be read and why\n" +
			"(a key not held or that does not decrypt it, a truncated protobuf, JSON syntax, another kind\n" +
			"under the key), and stats then exits with status 10; the largest objects;\n" +
			"the revision range and the compaction revision; and\n" +
			"the keys attached to a lease. With --db it also counts every revision the file holds (the\n" +
			"history weight), the deletion records (tombstones) and the keys whose newest revision is a\n" +
			"deletion, and reports the scheduled and finished compaction, the snapshot's sha256 trailer\n" +
			"and the bbolt sizes. Live etcd keeps no record of deletions it can list: those columns say\n" +
			"\"unknown\" there. With --wal it counts the keyspace the log's replay establishes; when the\n" +
			"log's revisions stop before its end, stats says so and exits with status 10.\n" +
			"A compaction of live etcd while stats reads does not stop it: it continues from the last key\n" +
			"read at the current revision, each object counted once, and the report (\"read at\", with\n" +
			"-o json readFromRevision and readToRevision) and a warning say which revisions it spans.",
		examples: `etcdpvc --db snapshot.db stats
etcdpvc --kubeadm stats -o json | jq '.resources[] | select(.objects > 1000)'
etcdpvc --db /var/lib/etcd/member/snap/db stats --top 50`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"},
			&cli.IntFlag{Name: "top", Value: 20, Usage: "how many of the largest objects to list"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request (live etcd)"},
		},
		args: cliargs.None,
		action: func(c *cli.Context, e *env, in *input) error {
			o := statsOptions{Output: c.String("output"), Top: c.Int("top"), PageSize: c.Int64("page-size")}
			if err := cliargs.CheckOutput(o.Output, "table", "json"); err != nil {
				return err
			}
			if o.Top < 0 || o.PageSize <= 0 {
				return usagef("--top must not be negative and --page-size must be positive")
			}
			return runStats(e, in.g, o)
		},
	}
}

func runStats(e *env, g *globalOptions, o statsOptions) error {
	s, err := openSession(e, g)
	if err != nil {
		return err
	}
	defer s.Close()
	var p flows.Progress
	if isTerminal(e.stderr) {
		p = newProgress(e.stderr, "stats")
	}
	return s.Stats(e.ctx, e.stdout, o.Output == "json", o.Top, o.PageSize, p, e.Warn)
}
