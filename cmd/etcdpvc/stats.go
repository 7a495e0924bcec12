package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/store"
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
			"rotation still has to rewrite (docs/runbooks/encryption-rotation.md); the largest objects;\n" +
			"the revision range and the compaction revision; and\n" +
			"the keys attached to a lease. With --db it also counts every revision the file holds (the\n" +
			"history weight), the deletion records (tombstones) and the keys whose newest revision is a\n" +
			"deletion, and reports the scheduled and finished compaction, the snapshot's sha256 trailer\n" +
			"and the bbolt sizes. Live etcd keeps no record of deletions it can list: those columns say\n" +
			"\"unknown\" there. With --wal it counts the keyspace the log's replay establishes; when the\n" +
			"log's revisions stop before its end, stats says so and exits with status 10.",
		examples: `etcdpvc --db snapshot.db stats
etcdpvc --kubeadm stats -o json | jq '.resources[] | select(.objects > 1000)'
etcdpvc --db /var/lib/etcd/member/snap/db stats --top 50`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"},
			&cli.IntFlag{Name: "top", Value: 20, Usage: "how many of the largest objects to list"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request (live etcd)"},
		},
		args: none,
		action: func(c *cli.Context, e *env, in *input) error {
			o := statsOptions{Output: c.String("output"), Top: c.Int("top"), PageSize: c.Int64("page-size")}
			if err := checkOutput(o.Output, "table", "json"); err != nil {
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
	prefix := s.g.Prefix + "/"
	var prog *progress
	var update inspect.Progress
	if isTerminal(e.stderr) {
		prog = newProgress(e.stderr, "stats")
		update = prog.update
	}
	var write inspect.WriteProviderFunc
	if s.Enc != nil {
		write = func(gr schema.GroupResource) string { return s.Enc.Providers(gr)[0] }
	}
	var rep *inspect.StatsReport
	if b, ok := s.Reader.(*store.Bolt); ok {
		if prog != nil {
			prog.total = b.Meta().Revision
		}
		rep, err = inspect.BoltStats(e.ctx, b, prefix, o.Top, update, write)
	} else {
		rep, err = inspect.LiveStats(e.ctx, s.Reader, prefix, o.Top, o.PageSize, update, write)
	}
	if prog != nil {
		prog.done()
	}
	if rep == nil {
		return err
	}
	rep.Source = s.Description
	if s.WAL != nil {
		inspect.FromWAL(rep, s.WAL.Coverage())
	}
	if o.Output == "json" {
		b, jerr := json.MarshalIndent(rep, "", "  ")
		if jerr != nil {
			return jerr
		}
		if _, werr := fmt.Fprintf(e.stdout, "%s\n", b); werr != nil {
			return werr
		}
	} else if perr := printStats(e, rep); perr != nil {
		return perr
	}
	if rep.Incomplete != "" {
		// The counts above cover what was read: before the damaged page,
		// or up to the last revision the log establishes.
		hint := "the db file is damaged: read another snapshot, or a copy from another member"
		if s.WAL != nil {
			hint = undeterminedHint
		}
		return withHint(&incompleteError{msg: "stats incomplete: " + rep.Incomplete}, hint)
	}
	return err
}

func printStats(e *env, rep *inspect.StatsReport) error {
	w := e.stdout
	opt := func(p *int64) string {
		if p == nil {
			return "unknown"
		}
		return strconv.FormatInt(*p, 10)
	}
	fmt.Fprintf(w, "source:       %s\n", rep.Source)
	fmt.Fprintf(w, "snapshot:     %s\n", rep.Snapshot)
	if rep.OldestRevision != 0 {
		fmt.Fprintf(w, "revisions:    %d to %d (%s held)\n", rep.OldestRevision, rep.Revision, opt(rep.Revisions))
	} else {
		fmt.Fprintf(w, "revision:     %d\n", rep.Revision)
	}
	if rep.ScheduledCompactRevision != nil {
		fmt.Fprintf(w, "compaction:   finished %d, scheduled %d\n", rep.CompactRevision, *rep.ScheduledCompactRevision)
	} else {
		fmt.Fprintf(w, "compaction:   %d\n", rep.CompactRevision)
	}
	fmt.Fprintf(w, "objects:      %d (%s bytes), %d with a lease\n", rep.Objects, inspect.HumanBytes(rep.Bytes), rep.Leased)
	fmt.Fprintf(w, "deleted:      %s keys whose newest revision is a deletion, %s tombstones held\n", opt(rep.Deleted), opt(rep.Tombstones))
	if db := rep.DB; db != nil {
		fmt.Fprintf(w, "db:           %s bytes in file, %s in use, page size %d, consistent index %d, term %d", inspect.HumanBytes(db.FileSize), inspect.HumanBytes(db.DataSize), db.PageSize, db.ConsistentIndex, db.Term)
		if db.StorageVersion != "" {
			fmt.Fprintf(w, ", storage version %s", db.StorageVersion)
		}
		fmt.Fprintln(w)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note:         %s\n", n)
	}
	if rep.Incomplete != "" {
		fmt.Fprintf(w, "INCOMPLETE:   %s; the counts below cover only what was read\n", rep.Incomplete)
	}
	fmt.Fprintln(w)
	t := newTable(w, "RESOURCE", "OBJECTS", "BYTES", "LEASED", "REVISIONS", "TOMBSTONES", "DELETED", "HISTORY BYTES")
	for _, r := range rep.Resources {
		hist := "unknown"
		if r.HistoryBytes != nil {
			hist = inspect.HumanBytes(*r.HistoryBytes)
		}
		if err := t.Row(r.Resource, strconv.FormatInt(r.Objects, 10), inspect.HumanBytes(r.Bytes), strconv.FormatInt(r.Leased, 10),
			opt(r.Revisions), opt(r.Tombstones), opt(r.Deleted), hist); err != nil {
			return err
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if err := printStorage(w, rep); err != nil {
		return err
	}
	if len(rep.Largest) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nLARGEST OBJECTS\n")
	t = newTable(w, "BYTES", "REVISION", "KEY")
	for _, l := range rep.Largest {
		if err := t.Row(inspect.HumanBytes(l.Bytes), strconv.FormatInt(l.ModRevision, 10), l.Key); err != nil {
			return err
		}
	}
	return t.Flush()
}

// printStorage prints the encryption audit: per resource, the objects
// stored under each provider and key, those not under the write provider
// marked stale.
func printStorage(w io.Writer, rep *inspect.StatsReport) error {
	known := false
	var stale int64
	for _, r := range rep.Resources {
		if r.Stale != nil {
			known = true
			stale += *r.Stale
		}
	}
	fmt.Fprintf(w, "\nENCRYPTION AT REST\n")
	switch {
	case !known:
		fmt.Fprintf(w, "no --encryption-config: providers are read from each value's k8s:enc: header; which are stale (not under a resource's write provider) is unknown\n")
	case stale == 0:
		fmt.Fprintf(w, "every object is stored under its resource's write provider (the config's first)\n")
	default:
		fmt.Fprintf(w, "%s not under the resource's write provider (STALE): rewrite them through the API (see docs/runbooks/encryption-rotation.md)\n",
			inspect.Count(int(stale), "object is", "objects are"))
	}
	t := newTable(w, "RESOURCE", "STORED UNDER", "OBJECTS", "STATUS")
	for _, r := range rep.Resources {
		for _, c := range r.Storage {
			status := "-"
			switch {
			case r.WriteProvider == "":
			case c.Stale:
				status = "STALE: writes use " + r.WriteProvider
			default:
				status = "current"
			}
			if err := t.Row(r.Resource, c.Provider, strconv.FormatInt(c.Objects, 10), status); err != nil {
				return err
			}
		}
	}
	return t.Flush()
}
