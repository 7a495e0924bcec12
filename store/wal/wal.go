package wal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// ErrUndetermined means the source holds the request but cannot establish
// its outcome or revision.
var ErrUndetermined = errors.New("not established by the write-ahead log")

// WALCoverage summarises what a write-ahead log holds.
type WALCoverage struct {
	// Dir is the wal directory read; Segments the segment files read, up
	// to the one a torn record ended. Commit is the last commit index the
	// log records; Tail, where a torn log stopped. Counts counts entries
	// by kind.
	Dir                                        string
	Segments                                   []string
	FirstIndex, FirstTerm, LastIndex, LastTerm uint64
	Commit                                     uint64
	Tail                                       *walfile.Tail
	Counts                                     map[string]int
	// FirstRevision and LastRevision bound the revisions derived, 0 for
	// none.
	FirstRevision, LastRevision int64
	// RevisionsStop, when not empty, says from which entry on revisions
	// are no longer derived, and why.
	RevisionsStop string
	// DB is the db the replay started from, with its consistent index and
	// revision; InDB counts the log's entries the db already holds.
	DB              string
	ConsistentIndex uint64
	DBRevision      int64
	InDB            int
	// Member and Cluster are the ids the log's metadata records.
	Member, Cluster uint64
	// PrefixRevision is the revision before the log's first entry, when
	// the entries the db holds were worked out back from it;
	// PrefixUnresolved says why they were not.
	PrefixRevision   int64
	PrefixUnresolved string
	// PrefixUnknown lists the stretches of those entries whose outcomes
	// or revisions are not established: only their own writes are
	// unknown, not the rest of the log's.
	PrefixUnknown []WALStretch
	// Unnamed lists the entries the db holds that may have deleted keys
	// no source names.
	Unnamed []UnnamedDeletion `json:",omitempty"`
	// Check says what a second, newer db of the member established.
	Check *WALCheck
}

// WAL is a member's write-ahead log read as a store: every write it holds,
// replayed in order; the applied ones serve Reader and Archive. It holds
// no value in memory: values are read again from the log.
type WAL struct {
	log      *walfile.Log
	cov      WALCoverage
	r        *replay
	keys     []string // keys with an applied write, sorted
	firstRev int64
	lastRev  int64
	// base is the db the replay started from.
	base *store.Bolt
	// prefixFloor is the revision before the log, or its highest possible
	// value: the lowest the prefix establishes reads at. prefixLowest is
	// its lowest possible value.
	prefixFloor, prefixLowest int64
	// unnamed are the entries before the db that may have deleted keys
	// the log never names.
	unnamed []unnamedDeleter
	// baseStates are base's live keys without values, in key order, as
	// the replay read them; baseDeleted, its keys whose newest revision
	// is a tombstone, with the last live revision before it.
	baseStates  []store.KeyValue
	baseDeleted []baseTombstone
	// revEntries are the entries with an established revision, in order,
	// made once by EntryOfRevision.
	revOnce    sync.Once
	revEntries []int32
}

// baseTombstone is a key of the db whose newest revision is a deletion.
type baseTombstone struct {
	kv        store.KeyValue
	deleteRev int64
}

var _ store.Archive = (*WAL)(nil)

// OpenLogChecked replays the write-ahead log l, one member's or several
// merged by walfile.OpenMerged; it never writes, locks or repairs the
// log. Only committed entries are replayed; later ones are unknown. A
// torn tail ends the log (WALCoverage.Tail).
//
// Without base, a log that starts at raft index 1 starts from an empty
// keyspace at revision 1, and one that starts after a raft snapshot
// establishes no revision: its writes are listed as unknown. With base,
// the same member's db or a snapshot of it, the entries up to its
// consistent index are in it and worked out back from it (prefix.go),
// later ones are replayed from its state, and the WAL reads as one
// source. It fails with an error wrapping ErrDBNewer when base is newer
// than the log's end, ErrLogGap when the log does not hold the entry
// after base's consistent index.
//
// check, when not nil, is a second db of the member newer than base
// (check.go): when the replay over base has applied every entry up to
// check's consistent index, its keyspace must be check's, or it fails
// with an error wrapping ErrCheckFailed.
func OpenLogChecked(ctx context.Context, l *walfile.Log, base, check *store.Bolt) (*WAL, error) {
	var err error
	w := &WAL{log: l, base: base}
	r := newReplay(w.value)
	// A value compare reads a value the replay wrote through w.
	w.r = r
	w.cov = WALCoverage{Dir: l.Dir, Counts: r.counts}
	var ci uint64
	// ready waits for the db's keys, read while the log is.
	ready := func() error { return nil }
	if base != nil {
		if ci, ready, err = w.startFromBase(ctx, r); err != nil {
			return nil, err
		}
		// Whatever ends the read first, the keys' reader is waited for.
		defer func() { _ = ready() }()
	}
	var checker *walChecker
	if check != nil {
		if checker, err = w.newChecker(check, ci); err != nil {
			return nil, err
		}
	}
	for _, s := range l.Segments {
		w.cov.Segments = append(w.cov.Segments, s.Name)
	}

	type pending struct {
		e   walfile.Entry
		pos walfile.Pos
	}
	var queue []pending
	var commit, last uint64
	// The db applied every entry up to its consistent index: committed.
	commit = ci
	if checker != nil {
		// So did the checking db, up to its own.
		commit = max(commit, checker.result.ConsistentIndex)
	}
	started := false
	flush := func() error {
		if err := ready(); err != nil {
			return err
		}
		n := 0
		for n < len(queue) && queue[n].e.Index <= commit {
			if err := checker.before(ctx, queue[n].e.Index, r); err != nil {
				return err
			}
			r.apply(queue[n].e, queue[n].pos)
			n++
		}
		queue = append(queue[:0], queue[n:]...)
		return nil
	}
	var prefix []pxEntry
	checked := false
	prefixKeys := newPxKeys()
	var firstIndex uint64
	nrec := 0
	tail, err := l.ScanDecoded(func(typ int64, data []byte, pos walfile.Pos, decoded *walfile.Entry, decErr error) error {
		if nrec++; nrec%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch typ {
		case walfile.MetadataType:
			var md pb.Metadata
			if err := proto.Unmarshal(data, &md); err != nil {
				return fmt.Errorf("%s: the member's metadata: %w", l.Segments[pos.Segment].Name, err)
			}
			w.cov.Member, w.cov.Cluster = md.GetNodeID(), md.GetClusterID()
			if base != nil && !checked {
				checked = true
				if err := w.checkMember(w.base, md.GetNodeID()); err != nil {
					return err
				}
				if check != nil {
					if err := w.checkMember(check, md.GetNodeID()); err != nil {
						return err
					}
				}
			}
		case walfile.StateType:
			hs, err := walfile.DecodeState(data)
			if err != nil {
				return fmt.Errorf("%s: %w", l.Segments[pos.Segment].Name, err)
			}
			if hs.GetCommit() > commit {
				commit = hs.GetCommit()
				if err := flush(); err != nil {
					return err
				}
			}
		case walfile.EntryType:
			if decErr != nil {
				return fmt.Errorf("%s at offset %d: %w", l.Segments[pos.Segment].Name, pos.Offset, decErr)
			}
			e := *decoded
			if base != nil {
				if !started {
					w.cov.FirstIndex, w.cov.FirstTerm = e.Index, e.Term
				}
				if e.Index <= ci {
					// Already in the db: kept to be worked out back from it.
					if !started {
						firstIndex = e.Index
						// As many as their indexes, and no more than the
						// records can hold, 16 bytes each at least.
						var size int64
						for _, sg := range l.Segments {
							size += sg.Size
						}
						prefix = make([]pxEntry, 0, min(ci-e.Index+1, uint64(size/16)))
					}
					started = true
					if e.Index <= last {
						queue = queue[:0]
						n := len(prefix)
						for n > 0 && prefix[n-1].index >= e.Index {
							n--
						}
						prefix = prefix[:n]
					}
					prefix = append(prefix, compactEntry(e, pos, prefixKeys))
					last = e.Index
					w.cov.LastIndex, w.cov.LastTerm = e.Index, e.Term
					return nil
				}
				if last < ci || !started {
					if e.Index != ci+1 {
						return fmt.Errorf("%w: the db holds the entries up to raft index %d, the log resumes at %d (entries %d to %d are in neither)", ErrLogGap, ci, e.Index, ci+1, e.Index-1)
					}
					started, last = true, ci
				}
			}
			switch {
			case !started:
				started = true
				w.cov.FirstIndex, w.cov.FirstTerm = e.Index, e.Term
				if e.Index != 1 {
					r.lose(e.Index, fmt.Sprintf("the log starts at raft index %d, after a raft snapshot: the keys' state before it is not in the log", e.Index))
				}
			case e.Index <= last:
				// A new leader replaced uncommitted entries from e.Index on.
				if e.Index <= commit {
					if err := ready(); err != nil {
						return err
					}
					r.lose(e.Index, fmt.Sprintf("entry %d rewritten after the log recorded it committed", e.Index))
				}
				n := 0
				for n < len(queue) && queue[n].e.Index < e.Index {
					n++
				}
				queue = queue[:n]
			case e.Index > last+1:
				if err := flush(); err != nil {
					return err
				}
				r.lose(e.Index, fmt.Sprintf("entries %d to %d are missing (a raft snapshot received from the leader)", last+1, e.Index-1))
			}
			last = e.Index
			w.cov.LastIndex, w.cov.LastTerm = e.Index, e.Term
			queue = append(queue, pending{e, pos})
			if e.Index <= commit {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	// The db's revisions the prefix may have made are read meanwhile.
	var xr *dbIndexRead
	if err == nil && base != nil && len(prefix) > 0 {
		// Its own context: an error return stops it.
		ictx, cancel := context.WithCancel(ctx)
		xr = readDBIndex(ictx, boltPrefixDB{b: base}, prefix, prefixKeys, w.cov.DBRevision)
		defer func() { cancel(); _, _ = xr.wait() }()
	}
	if err == nil {
		err = ready()
	}
	if err != nil {
		return nil, fmt.Errorf("read write-ahead log: %w", err)
	}
	w.cov.Tail = tail
	if checker != nil && started && w.cov.LastIndex >= checker.result.ConsistentIndex && !checker.done {
		if err := checker.check(ctx, r); err != nil {
			return nil, fmt.Errorf("read write-ahead log: %w", err)
		}
	}
	end := "the log holds no entry"
	if started {
		end = fmt.Sprintf("the log ends at raft index %d", w.cov.LastIndex)
	}
	if checker != nil && (!started || w.cov.LastIndex < checker.result.ConsistentIndex) {
		return nil, fmt.Errorf("%w: the db %s holds the entries up to raft index %d, %s", ErrDBNewer, check.Path(), checker.result.ConsistentIndex, end)
	}
	if base != nil && (!started || w.cov.LastIndex < ci) {
		return nil, fmt.Errorf("%w: the db holds the entries up to raft index %d, %s", ErrDBNewer, ci, end)
	}
	if tail != nil {
		// Segments after the torn one were not read.
		if i := slices.Index(w.cov.Segments, tail.Segment); i >= 0 {
			w.cov.Segments = w.cov.Segments[:i+1]
		}
	}
	w.cov.Commit = commit
	// Entries past the last commit index may never have been applied.
	for _, p := range queue {
		we := WALEntry{Index: p.e.Index, Term: p.e.Term, Kind: p.e.Kind, Other: p.e.Other, pos: p.pos,
			Outcome: OutcomeUnknown, Reason: fmt.Sprintf("past the last commit index the log records (%d)", commit)}
		r.counts[p.e.Kind.String()]++
		for _, o := range entryOps(p.e.Request) {
			r.attempt(int32(len(r.entries)), o)
		}
		r.push(we)
	}
	writes := len(r.all)
	if base != nil && len(prefix) > 0 {
		w.cov.InDB = len(prefix)
		w.unnamed = unnamedDeleters(prefix, prefixKeys)
		p, err := w.resolvePrefix(ctx, prefix, prefixKeys, firstIndex == 1, xr)
		if err != nil {
			return nil, fmt.Errorf("read write-ahead log: %w", err)
		}
		r.prepend(p)
		w.cov.Unnamed = w.unnamedDeletions(len(prefix))
	}
	if checker != nil {
		if err := checker.checkValues(ctx, w, int32(len(r.all)-writes)); err != nil {
			return nil, fmt.Errorf("read write-ahead log: %w", err)
		}
		w.cov.Check = &checker.result
	}
	if len(r.applied) > 0 {
		w.firstRev = r.all[r.applied[0]].mod
		w.lastRev = r.all[r.applied[len(r.applied)-1]].mod
	}
	if base != nil {
		w.lastRev = max(w.lastRev, w.cov.DBRevision)
	}
	w.cov.FirstRevision, w.cov.LastRevision = w.firstRev, w.lastRev
	if !r.known {
		w.cov.RevisionsStop = r.stopWhy
	}
	// The keys with an applied write, placed or not, found from the
	// writes rather than from every key of the db.
	listed := make([]bool, len(r.keyNames))
	for x := range r.all {
		if k := r.all[x].key; !listed[k] && (r.all[x].mod != 0 || w.isUnplaced(int32(x))) {
			listed[k] = true
			w.keys = append(w.keys, r.keyNames[k])
		}
	}
	sort.Strings(w.keys)
	return w, nil
}
