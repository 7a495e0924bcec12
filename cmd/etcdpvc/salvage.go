package main

import (
	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/session"
)

func salvageCommand() command {
	return command{
		name:  "salvage",
		usage: "recover what survives of a db file bbolt refuses, into a new snapshot",
		desc: "salvage reads a damaged etcd db file (--db: a member's member/snap/db after a disk fault or a\n" +
			"power cut, which etcd panics on and `bbolt check` reports) page by page, without trusting its\n" +
			"meta pages, freelist or branch pages, and never writes it. From every leaf page that parses it\n" +
			"collects etcd's key, meta, lease and members buckets, keeps each key's newest revision whose\n" +
			"value the apiserver can read (decrypted with --encryption-config or --kubeadm; a value whose\n" +
			"readability is not known here is kept as it is; a key whose newest revision is a deletion stays\n" +
			"deleted), and writes them to --out as a new snapshot file with its sha256 trailer, which\n" +
			"`etcdutl snapshot restore` accepts. The report says what was recovered per resource, which\n" +
			"revisions were dropped and why, which pages could not be read, and which revision ranges the\n" +
			"surviving index pages name that no page holds any more. A salvage that does not establish that\n" +
			"nothing was lost exits with status 10; the snapshot is written all the same.\n" +
			"`etcdpvc --db NEW.db ls -A` (get, dump, history, stats) reads the result.",
		examples: `etcdpvc --db /var/lib/etcd/member/snap/db salvage --out /root/salvaged.db
etcdpvc --kubeadm --db /root/broken.db salvage --out /root/salvaged.db -o json`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "the new snapshot file to write (it must not exist)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text", Usage: "the report: text or json"},
		},
		args: cliargs.None,
		action: func(c *cli.Context, e *env, in *input) error {
			if err := cliargs.CheckOutput(c.String("output"), "text", "json"); err != nil {
				return err
			}
			r := flows.SalvageRequest{In: in.g.DB, Out: c.String("out"), JSON: c.String("output") == "json"}
			o := in.g.Options
			o.HashCacheDir = session.HashCacheDir(e.getenv)
			return flows.Salvage(e.ctx, o, e.stdout, e.Warn, r)
		},
	}
}
