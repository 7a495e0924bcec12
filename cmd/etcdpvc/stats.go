package main

import (
	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
)

// statsOptions are the flags of `etcdpvc stats`.
type statsOptions struct {
	Output   string
	Top      int
	PageSize int64
	By       inspect.GroupBy
	Since    int64
}

func statsCommand() command {
	return command{
		name:  "stats",
		usage: "count objects, bytes and revisions per resource or namespace; the largest objects, hottest keys, leases, compaction",
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
			"deletion, and reports the scheduled and finished compaction, the file's sha256 (as sha256sum\n" +
			"prints it, where the trailer's check reads the file whole), the snapshot's sha256 trailer (of\n" +
			"the file without its last 32 bytes) and the bbolt sizes. Live etcd keeps no record of\n" +
			"deletions it can list: those columns say \"unknown\" there. With --wal it counts the keyspace\n" +
			"the log's replay establishes; when the log's revisions stop before its end, stats says so and\n" +
			"exits with status 10.\n" +
			"A compaction of live etcd while stats reads does not stop it: it continues from the last key\n" +
			"read at the current revision, each object counted once, and the report (\"read at\", with\n" +
			"-o json readFromRevision and readToRevision) and a warning say which revisions it spans.\n" +
			"\n" +
			"--by namespace (or resource,namespace) counts the objects, bytes and, with --db, the history\n" +
			"bytes and revisions per namespace instead of per resource (cluster-scoped objects and keys of\n" +
			"no object under \"(no namespace)\"): what fills a db near its quota.\n" +
			"HOTTEST KEYS lists the --top keys with the most revisions: with --db every revision the file\n" +
			"holds (from --since REV on, when given), with --wal those the log establishes; live etcd keeps\n" +
			"no count, so --since REV replays etcd's watch from REV to the current revision and counts each\n" +
			"key's changes (a REV etcd has compacted is refused, naming the oldest revision it holds). Each\n" +
			"names the field manager of the key's last write: of its value's metadata.managedFields, the\n" +
			"entry with the newest time. LEASES lists the --top leases with the most keys attached (each\n" +
			"key's lease field), their TTL where known (live: etcd's lease list and time-to-live; --db: the\n" +
			"lease bucket, with the remaining TTL only when etcd checkpoints leases), and the leases held\n" +
			"without a key. Secrets are counted and named, never shown. -o json is one documented schema\n" +
			"with a schemaVersion (docs/stats-schema.md).",
		examples: `etcdpvc --db snapshot.db stats
etcdpvc --kubeadm stats -o json | jq '.resources[] | select(.objects > 1000)'
etcdpvc --db /var/lib/etcd/member/snap/db stats --top 50
etcdpvc --db snapshot.db stats --by resource,namespace
etcdpvc --kubeadm stats --since 1200000 --top 10`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"},
			&cli.IntFlag{Name: "top", Value: 20, Usage: "how many of the largest objects, hottest keys and leases to list"},
			&cli.StringFlag{Name: "by", Value: "resource", Usage: "group the counts by resource, namespace, or resource,namespace"},
			&cli.Int64Flag{Name: "since", Usage: "count the hottest keys' revisions from revision `REV` to now (live: etcd's watch replays them)"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request (live etcd)"},
		},
		args:   cliargs.None,
		values: map[string]cliargs.Offer{"by": cliargs.OfferGroupBy},
		action: func(c *cli.Context, e *env, in *input) error {
			o := statsOptions{Output: c.String("output"), Top: c.Int("top"), PageSize: c.Int64("page-size"), Since: c.Int64("since")}
			if err := cliargs.CheckOutput(o.Output, "table", "json"); err != nil {
				return err
			}
			if o.Top < 0 || o.PageSize <= 0 || o.Since < 0 {
				return usagef("--top and --since must not be negative and --page-size must be positive")
			}
			by, err := inspect.ParseGroupBy(c.String("by"))
			if err != nil {
				return usagef("%v", err)
			}
			o.By = by
			return runStats(e, in.g, o)
		},
	}
}

func runStats(e *env, g *globalOptions, o statsOptions) error {
	s, p, err := openCounting(e, g, "stats")
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Stats(e.ctx, e.stdout, flows.StatsRequest{JSON: o.Output == "json", Top: o.Top, PageSize: o.PageSize, By: o.By, Since: o.Since}, p, e.Warn)
}

// openCounting opens the session a read of every key uses (stats,
// report), with the progress of command what on a terminal.
func openCounting(e *env, g *globalOptions, what string) (*cliSession, flows.Progress, error) {
	s, err := openSession(e, g)
	if err != nil {
		return nil, nil, err
	}
	var p flows.Progress
	if e.ansiTerminal(e.rawStderr) {
		p = newProgress(e.rawStderr, what)
	}
	return s, p, nil
}
