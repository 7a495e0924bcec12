package main

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
)

// dumpOptions are the flags of `etcdpvc dump`.
type dumpOptions struct {
	Resource      string
	Namespace     string
	AllNamespaces bool
	AllRevisions  bool
	Output        string
	ShowSecrets   bool
	PageSize      int64
	Rev           int64
}

func dumpCommand() command {
	return command{
		name:      "dump",
		usage:     "stream every stored object (or every revision) as JSON Lines or YAML",
		argsUsage: "[RESOURCE]",
		desc: "dump writes one record per object to stdout: its key, modRevision, createRevision, version,\n" +
			"lease and the decoded object (decrypted with --encryption-config). A value that cannot be\n" +
			"decoded or decrypted is reported in its record (\"error\", \"encrypted\"), the dump goes on,\n" +
			"and it then exits with status 10.\n" +
			"--all-revisions (with --db) writes every revision the file holds, in revision order, deletions\n" +
			"as records with \"deleted\": true. Secret values are redacted unless --show-secrets. Records\n" +
			"stream: nothing is held in memory. Without RESOURCE every key under --prefix is dumped.\n" +
			"A compaction of etcd that passes the revision of a live dump while it runs does not stop it:\n" +
			"it continues from the last key read at the current revision, each object written once, and\n" +
			"warns that the dump spans revisions R1–R2 (each record's modRevision is its own). With --rev N\n" +
			"it does not mix revisions: a compaction past N stops the dump after the records written, with\n" +
			"status 10 and where else to read revision N (--db, --wal).",
		examples: `etcdpvc --db snapshot.db dump > objects.jsonl
etcdpvc --db snapshot.db dump --all-revisions pvc -A | jq -c 'select(.name=="www-web-0")'
etcdpvc dump configmaps -n demo -o yaml
etcdpvc --db snapshot.db --encryption-config enc.yaml dump secrets -A --show-secrets > secrets.jsonl`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "dump this namespace only"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "dump every namespace"},
			&cli.BoolFlag{Name: "all-revisions", Usage: "every revision held, deletions included (--db)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "jsonl", Usage: "jsonl (one JSON object a line) or yaml (documents separated by ---)"},
			&cli.BoolFlag{Name: "show-secrets", Usage: "print Secret values instead of their sizes"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request (live etcd)"},
			&cli.Int64Flag{Name: "rev", Usage: "dump as of this revision (0: the latest)"},
		},
		args: cliargs.Optional("RESOURCE", cliargs.OfferResources),
		action: func(c *cli.Context, e *env, in *input) error {
			o := dumpOptions{Resource: c.Args().First(), Namespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"),
				AllRevisions: c.Bool("all-revisions"), Output: c.String("output"), ShowSecrets: c.Bool("show-secrets"),
				PageSize: c.Int64("page-size"), Rev: c.Int64("rev")}
			if err := cliargs.CheckOutput(o.Output, "jsonl", "yaml"); err != nil {
				return err
			}
			if o.PageSize <= 0 {
				return usagef("--page-size must be positive")
			}
			if o.AllRevisions && o.Rev != 0 {
				return usagef("--all-revisions and --rev do not go together")
			}
			if o.Namespace != "" && o.AllNamespaces {
				return usagef("give -n NAMESPACE or -A, not both")
			}
			return runDump(e, in.g, o)
		},
	}
}

func runDump(e *env, g *globalOptions, o dumpOptions) error {
	s, err := openSession(e, g)
	if err != nil {
		return err
	}
	defer s.Close()
	r := flows.DumpRequest{Resource: o.Resource, Namespace: o.Namespace, AllNamespaces: o.AllNamespaces, AllRevisions: o.AllRevisions,
		Rev: o.Rev, PageSize: o.PageSize, YAML: o.Output == "yaml", ShowSecrets: o.ShowSecrets, Warn: e.Warn}
	if e.ansiTerminal(e.rawStderr) {
		r.Progress = newProgress(e.rawStderr, "dump")
	}
	return s.Dump(e.ctx, e.stdout, r)
}

// progress draws a one-line progress report on a terminal.
type progress struct {
	w      io.Writer
	what   string
	start  time.Time
	last   time.Time
	total  int64 // revisions in the file (0: unknown)
	n      int64
	bytes  int64
	shown  bool
	nowFor func() time.Time
}

func newProgress(w io.Writer, what string) *progress {
	now := time.Now()
	return &progress{w: w, what: what, start: now, last: now, nowFor: time.Now}
}

// Start, Update and Done make it a flows.Progress.
func (p *progress) Start(total int64) { p.total = total }

func (p *progress) Update(n, bytes, rev int64) {
	p.n = n
	p.bytes += bytes
	now := p.nowFor()
	if now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	line := fmt.Sprintf("%s: %d records, %.1f MB", p.what, p.n, float64(p.bytes)/1e6)
	if p.total > 0 {
		line += fmt.Sprintf(", revision %d of %d (%d%%)", rev, p.total, rev*100/p.total)
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	p.shown = true
}

func (p *progress) Done() {
	if p.shown {
		fmt.Fprintf(p.w, "\r\x1b[K")
	}
}
