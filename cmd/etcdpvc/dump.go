package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
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
			"stream: nothing is held in memory. Without RESOURCE every key under --prefix is dumped.",
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
			if err := checkOutput(o.Output, "jsonl", "yaml"); err != nil {
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

// scopeFor resolves RESOURCE, -n and -A for ls, dump and diff
// (inspect.NewScope); an unknown resource is a usage error.
func scopeFor(s *session, res string, namespace string, all bool) (inspect.Scope, error) {
	k, err := inspect.NewScope(s.Resolver, s.g.Prefix, res, namespace, all)
	if err != nil {
		return k, &usageError{Msg: err.Error()}
	}
	return k, nil
}

func runDump(e *env, g *globalOptions, o dumpOptions) error {
	s, err := openSession(e, g)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, ok := s.Reader.(store.Archive); o.AllRevisions && !ok {
		return usagef("--all-revisions needs --db or --wal: live etcd replays a key's history only one key at a time (use `etcdpvc history`)")
	}
	scope, err := scopeFor(s, o.Resource, o.Namespace, o.AllNamespaces)
	if err != nil {
		return err
	}
	prefix := s.g.Prefix
	do := inspect.DumpOptions{
		Planner: s.Planner, Prefix: scope.Prefix, AllRevisions: o.AllRevisions, Revision: o.Rev, PageSize: o.PageSize,
		YAML: o.Output == "yaml", ShowSecrets: o.ShowSecrets,
		Match: func(key string) (resource.Resource, string, string, bool, bool) { return scope.Match(prefix, key) },
	}
	var p *progress
	if isTerminal(e.stderr) {
		p = newProgress(e.stderr, "dump")
		if o.AllRevisions {
			if info, err := s.Reader.Info(e.ctx); err == nil {
				p.total = info.Revision
			}
		}
		do.Progress = p.update
	}
	w := bufio.NewWriterSize(e.stdout, 256<<10)
	res, err := inspect.Dump(e.ctx, s.Reader, w, do)
	if p != nil {
		p.done()
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil && errors.Is(err, store.ErrCorrupt) {
		// The records written stand; the rest of the file is not readable.
		return withHint(&incompleteError{msg: fmt.Sprintf("dump stopped after %s: %v", inspect.Count(int(res.Records), "record", "records"), err)},
			"the db file is damaged: read another snapshot, or a copy from another member")
	}
	if err != nil {
		return err
	}
	if werr := walUnsettled(s); werr != nil && (o.Rev == 0 || o.AllRevisions) {
		return werr
	}
	if res.Unread.Total() > 0 {
		return withHint(&incompleteError{msg: res.Unread.Message() + "; their records say why"}, res.Unread.Hint())
	}
	return nil
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

func (p *progress) update(n, bytes, rev int64) {
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

func (p *progress) done() {
	if p.shown {
		fmt.Fprintf(p.w, "\r\x1b[K")
	}
}
