package main

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/resource"
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
			"current values; the largest objects; the revision range and the compaction revision; and\n" +
			"the keys attached to a lease. With --db it also counts every revision the file holds (the\n" +
			"history weight), the deletion records (tombstones) and the keys whose newest revision is a\n" +
			"deletion, and reports the scheduled and finished compaction, the snapshot's sha256 trailer\n" +
			"and the bbolt sizes. Live etcd keeps no record of deletions it can list: those columns say\n" +
			"\"unknown\" there.",
		examples: `etcdpvc --db snapshot.db stats
etcdpvc --kubeadm stats -o json | jq '.resources[] | select(.objects > 1000)'
etcdpvc --db /var/lib/etcd/member/snap/db stats --top 50`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"},
			&cli.IntFlag{Name: "top", Value: 20, Usage: "how many of the largest objects to list"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request (live etcd)"},
		},
		action: func(c *cli.Context, e *env) error {
			if c.NArg() > 0 {
				return usagef("stats takes no arguments")
			}
			o := statsOptions{Output: c.String("output"), Top: c.Int("top"), PageSize: c.Int64("page-size")}
			if err := checkOutput(o.Output, "table", "json"); err != nil {
				return err
			}
			if o.Top < 0 || o.PageSize <= 0 {
				return usagef("--top must not be negative and --page-size must be positive")
			}
			g, err := resolveGlobals(c, e)
			if err != nil {
				return err
			}
			return runStats(e, g, o)
		},
	}
}

// resourceStats counts one resource's keys. The history columns are nil
// when unknown (live etcd).
type resourceStats struct {
	Resource   string `json:"resource"`
	Objects    int64  `json:"objects"`
	Bytes      int64  `json:"bytes"`
	Leased     int64  `json:"leased"`
	Revisions  *int64 `json:"revisions,omitempty"`
	Tombstones *int64 `json:"tombstones,omitempty"`
	Deleted    *int64 `json:"deletedKeys,omitempty"`
	// HistoryBytes is the size of every value held, all revisions.
	HistoryBytes *int64 `json:"historyBytes,omitempty"`
}

// largeObject is one of the largest current values.
type largeObject struct {
	Key         string `json:"key"`
	Bytes       int64  `json:"bytes"`
	ModRevision int64  `json:"modRevision"`
}

// statsReport is what stats prints.
type statsReport struct {
	Source                   string           `json:"source"`
	Revision                 int64            `json:"revision"`
	OldestRevision           int64            `json:"oldestRevisionHeld,omitempty"`
	CompactRevision          int64            `json:"compactRevision"`
	ScheduledCompactRevision *int64           `json:"scheduledCompactRevision,omitempty"`
	Objects                  int64            `json:"objects"`
	Bytes                    int64            `json:"bytes"`
	Leased                   int64            `json:"leasedKeys"`
	Revisions                *int64           `json:"revisions,omitempty"`
	Tombstones               *int64           `json:"tombstones,omitempty"`
	Deleted                  *int64           `json:"deletedKeys,omitempty"`
	Snapshot                 string           `json:"snapshot"`
	DB                       *dbStats         `json:"db,omitempty"`
	Resources                []*resourceStats `json:"resources"`
	Largest                  []largeObject    `json:"largest"`
	Notes                    []string         `json:"notes,omitempty"`
}

// dbStats describes a db file.
type dbStats struct {
	FileSize        int64  `json:"fileSize"`
	DataSize        int64  `json:"dataSize"`
	PageSize        int    `json:"pageSize"`
	ConsistentIndex uint64 `json:"consistentIndex"`
	Term            uint64 `json:"term"`
	StorageVersion  string `json:"storageVersion,omitempty"`
	SHA256          string `json:"sha256,omitempty"`
}

// groupOf names the group a key is counted in: its resource, or for
// keys that name no object, "(first path segment)".
func groupOf(prefix, key string) string {
	if r, _, _, ok := resource.ParseKey(prefix, key); ok {
		return r.String()
	}
	rest := strings.TrimPrefix(key, strings.TrimSuffix(prefix, "/")+"/")
	if rest == key {
		return "(outside " + prefix + ")"
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return "(" + rest + ")"
}

// topN keeps the n largest objects (a min-heap).
type topN struct {
	n int
	h largeHeap
}

type largeHeap []largeObject

func (h largeHeap) Len() int { return len(h) }
func (h largeHeap) Less(i, j int) bool {
	if h[i].Bytes != h[j].Bytes {
		return h[i].Bytes < h[j].Bytes
	}
	return h[i].Key > h[j].Key
}
func (h largeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *largeHeap) Push(x any)   { *h = append(*h, x.(largeObject)) }
func (h *largeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (t *topN) add(o largeObject) {
	if t.n == 0 {
		return
	}
	if len(t.h) < t.n {
		heap.Push(&t.h, o)
		return
	}
	if (largeHeap{t.h[0], o}).Less(0, 1) {
		t.h[0] = o
		heap.Fix(&t.h, 0)
	}
}

func (t *topN) sorted() []largeObject {
	out := append([]largeObject{}, t.h...)
	sort.Slice(out, func(i, j int) bool { return largeHeap(out).Less(j, i) })
	return out
}

// keyState is a key's newest state during a db scan.
type keyState struct {
	group   *resourceStats
	size    int64
	modRev  int64
	leased  bool
	deleted bool
}

func runStats(e *env, g *globalOptions, o statsOptions) error {
	s, err := openSession(e, g)
	if err != nil {
		return err
	}
	defer s.Close()
	prefix := s.g.Prefix + "/"
	rep := &statsReport{Source: s.description}
	groups := map[string]*resourceStats{}
	group := func(key string) *resourceStats {
		name := groupOf(prefix, key)
		gs := groups[name]
		if gs == nil {
			gs = &resourceStats{Resource: name}
			if s.bolt != nil {
				gs.Revisions, gs.Tombstones, gs.Deleted, gs.HistoryBytes = new(int64), new(int64), new(int64), new(int64)
			}
			groups[name] = gs
		}
		return gs
	}
	top := &topN{n: o.Top}
	var prog *progress
	if isTerminal(e.stderr) {
		prog = newProgress(e.stderr, "stats")
	}

	if s.bolt != nil {
		m := s.bolt.Meta()
		snap := s.bolt.Snapshot()
		rep.Revision, rep.CompactRevision = m.Revision, m.CompactRevision
		sched := m.ScheduledCompactRevision
		rep.ScheduledCompactRevision = &sched
		rep.DB = &dbStats{FileSize: snap.Size, DataSize: m.DataSize, PageSize: m.PageSize, ConsistentIndex: m.ConsistentIndex, Term: m.Term, StorageVersion: m.StorageVersion, SHA256: snap.SHA256}
		switch {
		case !snap.IsSnapshot:
			rep.Snapshot = "no sha256 trailer (a member db, or a copy of one)"
		case snap.VerifiedEarlier:
			rep.Snapshot = "sha256 trailer verified (by an earlier run; the file has not changed since)"
		case snap.Verified:
			rep.Snapshot = "sha256 trailer verified"
		default:
			rep.Snapshot = "sha256 trailer NOT verified (--skip-hash-check)"
		}
		if sched > m.CompactRevision {
			rep.Notes = append(rep.Notes, fmt.Sprintf("compaction to revision %d was interrupted (finished: %d): etcd resumes it at start", sched, m.CompactRevision))
		}
		if prog != nil {
			prog.total = m.Revision
		}
		revs, tombs := new(int64), new(int64)
		rep.Revisions, rep.Tombstones = revs, tombs
		keys := map[string]*keyState{}
		var n int64
		err = s.bolt.ScanRevisions(e.ctx, prefix, func(ev store.Event) error {
			n++
			if rep.OldestRevision == 0 || ev.KV.ModRevision < rep.OldestRevision {
				rep.OldestRevision = ev.KV.ModRevision
			}
			ks := keys[ev.KV.Key]
			if ks == nil {
				ks = &keyState{group: group(ev.KV.Key)}
				keys[ev.KV.Key] = ks
			}
			gs := ks.group
			*gs.Revisions++
			*revs++
			if ev.Deleted {
				*gs.Tombstones++
				*tombs++
				ks.deleted, ks.size, ks.leased, ks.modRev = true, 0, false, ev.KV.ModRevision
			} else {
				sz := int64(len(ev.KV.Value))
				*gs.HistoryBytes += sz
				ks.deleted, ks.size, ks.leased, ks.modRev = false, sz, ev.KV.Lease != 0, ev.KV.ModRevision
			}
			if prog != nil {
				prog.update(n, int64(len(ev.KV.Value)), ev.KV.ModRevision)
			}
			return nil
		})
		if err != nil {
			return err
		}
		deleted := new(int64)
		rep.Deleted = deleted
		for key, ks := range keys {
			gs := ks.group
			if ks.deleted {
				*gs.Deleted++
				*deleted++
				continue
			}
			gs.Objects++
			gs.Bytes += ks.size
			if ks.leased {
				gs.Leased++
			}
			top.add(largeObject{Key: key, Bytes: ks.size, ModRevision: ks.modRev})
		}
	} else {
		info, err := s.reader.Info(e.ctx)
		if err != nil {
			return err
		}
		rep.Revision, rep.CompactRevision = info.Revision, info.CompactRevision
		rep.Snapshot = "not a file (live etcd)"
		rep.Notes = append(rep.Notes, "live etcd: deleted keys, tombstones and the revisions held are unknown (read a snapshot with --db for them)")
		var n int64
		rev, err := s.reader.List(e.ctx, prefix, store.ListOptions{PageSize: o.PageSize}, func(kv *store.KeyValue) error {
			n++
			gs := group(kv.Key)
			sz := int64(len(kv.Value))
			gs.Objects++
			gs.Bytes += sz
			if kv.Lease != 0 {
				gs.Leased++
			}
			top.add(largeObject{Key: kv.Key, Bytes: sz, ModRevision: kv.ModRevision})
			if prog != nil {
				prog.update(n, sz, kv.ModRevision)
			}
			return nil
		})
		if err != nil {
			return err
		}
		rep.Revision = max(rep.Revision, rev)
	}
	if prog != nil {
		prog.done()
	}
	for _, gs := range groups {
		rep.Objects += gs.Objects
		rep.Bytes += gs.Bytes
		rep.Leased += gs.Leased
		rep.Resources = append(rep.Resources, gs)
	}
	sort.Slice(rep.Resources, func(i, j int) bool {
		a, b := rep.Resources[i], rep.Resources[j]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Resource < b.Resource
	})
	rep.Largest = top.sorted()
	if rep.Resources == nil {
		rep.Resources = []*resourceStats{}
	}
	if o.Output == "json" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	return printStats(e, rep)
}

func printStats(e *env, rep *statsReport) error {
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
	fmt.Fprintf(w, "objects:      %d (%s bytes), %d with a lease\n", rep.Objects, humanBytes(rep.Bytes), rep.Leased)
	fmt.Fprintf(w, "deleted:      %s keys whose newest revision is a deletion, %s tombstones held\n", opt(rep.Deleted), opt(rep.Tombstones))
	if db := rep.DB; db != nil {
		fmt.Fprintf(w, "db:           %s bytes in file, %s in use, page size %d, consistent index %d, term %d", humanBytes(db.FileSize), humanBytes(db.DataSize), db.PageSize, db.ConsistentIndex, db.Term)
		if db.StorageVersion != "" {
			fmt.Fprintf(w, ", storage version %s", db.StorageVersion)
		}
		fmt.Fprintln(w)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note:         %s\n", n)
	}
	fmt.Fprintln(w)
	t := newTable(w, "RESOURCE", "OBJECTS", "BYTES", "LEASED", "REVISIONS", "TOMBSTONES", "DELETED", "HISTORY BYTES")
	for _, r := range rep.Resources {
		hist := "unknown"
		if r.HistoryBytes != nil {
			hist = humanBytes(*r.HistoryBytes)
		}
		if err := t.Row(r.Resource, strconv.FormatInt(r.Objects, 10), humanBytes(r.Bytes), strconv.FormatInt(r.Leased, 10),
			opt(r.Revisions), opt(r.Tombstones), opt(r.Deleted), hist); err != nil {
			return err
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if len(rep.Largest) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nLARGEST OBJECTS\n")
	t = newTable(w, "BYTES", "REVISION", "KEY")
	for _, l := range rep.Largest {
		if err := t.Row(humanBytes(l.Bytes), strconv.FormatInt(l.ModRevision, 10), l.Key); err != nil {
			return err
		}
	}
	return t.Flush()
}

// humanBytes prints a byte count exactly below 10 KiB, else in KiB, MiB
// or GiB with one decimal.
func humanBytes(n int64) string {
	switch {
	case n < 10<<10:
		return strconv.FormatInt(n, 10)
	case n < 10<<20:
		return fmt.Sprintf("%.1fKi", float64(n)/(1<<10))
	case n < 10<<30:
		return fmt.Sprintf("%.1fMi", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.1fGi", float64(n)/(1<<30))
	}
}
