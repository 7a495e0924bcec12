package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/walread"
)

// ErrUndetermined means the source holds the request but cannot establish
// its outcome or revision (a write-ahead log that starts after a raft
// snapshot, an entry past the last commit index it records).
var ErrUndetermined = errors.New("not established by the write-ahead log")

// WALCoverage summarises what a write-ahead log holds.
type WALCoverage struct {
	// Dir is the wal directory read; Segments the segment files read (up
	// to the one a torn record ended).
	Dir      string
	Segments []string
	// First and last entry index and term.
	FirstIndex, FirstTerm, LastIndex, LastTerm uint64
	// Commit is the last commit index the log records.
	Commit uint64
	// Tail says where a torn log stopped (nil: it ended cleanly).
	Tail *walread.Tail
	// Counts counts entries by kind ("put", "txn", "conf-change", "other"...).
	Counts map[string]int
	// FirstRevision and LastRevision bound the revisions derived (0, 0:
	// none). Revisions are derived from an empty keyspace when the log
	// starts at raft index 1.
	FirstRevision, LastRevision int64
	// RevisionsStop, when not empty, says from which entry on revisions
	// are no longer derived, and why.
	RevisionsStop string
	// DB is the db the replay started from ("" : none), with its
	// consistent index and revision; InDB counts the log's entries at or
	// below that index (already in the db, not replayed).
	DB              string
	ConsistentIndex uint64
	DBRevision      int64
	InDB            int
	// Member and Cluster are the ids the log's metadata records.
	Member, Cluster uint64
	// PrefixRevision is the revision before the log's first entry, when
	// the entries the db holds were worked out back from it (their
	// writes then have revisions PrefixRevision+1 to DBRevision);
	// PrefixUnresolved, when not empty, says why they were not (their
	// writes are then listed with an unknown outcome).
	PrefixRevision   int64
	PrefixUnresolved string
	// PrefixUnknown lists the stretches of those entries whose revisions,
	// or outcomes, are not established (each entry's Outcome says which;
	// PrefixRevision is 0 when the first stretch starts the log): only
	// their own writes are unknown, not the rest of the log's.
	PrefixUnknown []WALStretch
	// Unnamed lists the entries the db holds that may have deleted keys
	// the log never names, and that no source names (see
	// UnnamedDeletion).
	Unnamed []UnnamedDeletion `json:",omitempty"`
	// Check, when not nil, says what a second, newer db of the member
	// established of the replay (OpenLogChecked).
	Check *WALCheck
}

// WAL is a member's write-ahead log read as a store: every write the log
// holds, replayed in order; the applied ones with their revisions serve
// Reader and Archive. Its latest revision is the last one derived. It is
// read-only and holds no value in memory: values are read again from the
// log when asked for.
type WAL struct {
	log      *walread.Log
	cov      WALCoverage
	r        *replay
	keys     []string // keys with an applied write, sorted
	firstRev int64
	lastRev  int64
	// base, when not nil, is the db the replay started from.
	base *store.Bolt
	// prefixFloor is the lowest revision the log's entries the db holds
	// establish reads at (the revision before the log, or its highest
	// possible value when that is not established).
	prefixFloor int64
	// prefixLowest is the revision before the log's lowest possible
	// value: below it, the db's compaction removed what neither holds.
	prefixLowest int64
	// unnamed are the entries before the db that may have deleted keys
	// the log never names (see unnamedOpen).
	unnamed []unnamedDeleter
	// baseStates are base's live keys (without values) in key order, as
	// the replay read them: the prefix's check against the db reads them
	// (see boltPrefixDB), and baseState looks a key up without walking the
	// db (Bolt.Get reads every revision).
	baseStates []store.KeyValue
	// baseDeleted are base's keys whose newest revision is a tombstone,
	// in key order, read in the same walk: the last live revision before
	// it (no value; only Key when the db does not hold it) and the
	// tombstone's revision.
	baseDeleted []baseTombstone
	// revEntries are the entries with an established revision, in order
	// (EntryOfRevision), made once.
	revOnce    sync.Once
	revEntries []int32
}

// baseTombstone is a key of the db whose newest revision is a deletion.
type baseTombstone struct {
	kv        store.KeyValue
	deleteRev int64
}

var _ store.Archive = (*WAL)(nil)

// OpenWAL reads the write-ahead log in dir (a wal directory, or a member's
// data directory holding member/wal) and replays it. It never writes, locks
// or repairs the log.
//
// Only committed entries (up to the last commit index a state record
// holds) are replayed; later ones are unknown. A log that starts at raft
// index 1 starts from an empty keyspace at revision 1: every outcome is
// determined and every applied write gets its revision, up to the first
// entry the model cannot decide (see WALCoverage.RevisionsStop). A log
// that starts after a raft snapshot establishes no revision: its writes
// are still listed (Entries, KeyWrites), with their values, as unknown.
// A torn tail ends the log (WALCoverage.Tail); a damaged record is an
// error wrapping walread.ErrCorrupt.
func OpenWAL(ctx context.Context, dir string) (*WAL, error) {
	return OpenWALOver(ctx, dir, nil)
}

// OpenWALOver is OpenWAL started from base's state when base is not nil:
// base is the same member's db, or a snapshot taken from it (see
// base.go). Entries at or below its consistent index are already in
// it and are not replayed; later ones are, with revisions continuing from
// its revision. The WAL then reads as one source: base's history followed
// by the log's newer writes. It fails with an error wrapping ErrDBNewer
// when base is newer than the log's end, ErrLogGap when the log does not
// hold the entry after base's consistent index.
func OpenWALOver(ctx context.Context, dir string, base *store.Bolt) (*WAL, error) {
	l, err := walread.Open(dir)
	if err != nil {
		return nil, err
	}
	return OpenLogOver(ctx, l, base)
}

// OpenLogOver is OpenWALOver of a log already opened (one member's, or
// several members' merged by raft index: walread.OpenMerged).
func OpenLogOver(ctx context.Context, l *walread.Log, base *store.Bolt) (*WAL, error) {
	return OpenLogChecked(ctx, l, base, nil)
}

// OpenLogChecked is OpenLogOver with a second db of the same member, check,
// newer than base (see check.go): when the replay over base has
// applied every entry up to check's consistent index, its keyspace must be
// check's, or it fails with an error wrapping ErrCheckFailed.
// WALCoverage.Check says what the check established. check nil is
// OpenLogOver.
func OpenLogChecked(ctx context.Context, l *walread.Log, base, check *store.Bolt) (*WAL, error) {
	var err error
	w := &WAL{log: l, base: base}
	r := newReplay(w.value)
	// A value compare reads a value the replay wrote, through w, before
	// the replay has finished.
	w.r = r
	w.cov = WALCoverage{Dir: l.Dir, Counts: r.counts}
	var ci uint64
	// ready waits for the db's keys (read while the log is): r is not
	// touched before.
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
		e   walread.Entry
		pos walread.Pos
	}
	var queue []pending
	var commit, last uint64
	// The db applied every entry up to its consistent index: they were
	// committed, whatever state record the log kept.
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
	tail, err := scanPipelined(l, func(typ int64, data []byte, pos walread.Pos, decoded *walread.Entry, decErr error) error {
		if nrec++; nrec%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch typ {
		case walread.MetadataType:
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
		case walread.StateType:
			hs, err := walread.DecodeState(data)
			if err != nil {
				return fmt.Errorf("%s: %w", l.Segments[pos.Segment].Name, err)
			}
			if hs.GetCommit() > commit {
				commit = hs.GetCommit()
				if err := flush(); err != nil {
					return err
				}
			}
		case walread.EntryType:
			if decErr != nil {
				return fmt.Errorf("%s at offset %d: %w", l.Segments[pos.Segment].Name, pos.Offset, decErr)
			}
			e := *decoded
			if base != nil {
				if !started {
					w.cov.FirstIndex, w.cov.FirstTerm = e.Index, e.Term
				}
				if e.Index <= ci {
					// Already in the db: kept (values hashed) to be worked
					// out backwards from the db (prefix.go).
					if !started {
						firstIndex = e.Index
						// The entries up to the db's: as many as their
						// indexes (a new leader's rewrites aside), and no
						// more than the log's records can hold (a record
						// takes 16 bytes at least).
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
	// The db's revisions the entries in it may have made are read while
	// the db's keys are.
	var xr *dbIndexRead
	if err == nil && base != nil && len(prefix) > 0 {
		// Its own context: an error return stops it, not waiting for it
		// to read every revision.
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
	if checker != nil && (!started || w.cov.LastIndex < checker.result.ConsistentIndex) {
		end := "the log holds no entry"
		if started {
			end = fmt.Sprintf("the log ends at raft index %d", w.cov.LastIndex)
		}
		return nil, fmt.Errorf("%w: the db %s holds the entries up to raft index %d, %s", ErrDBNewer, check.Path(), checker.result.ConsistentIndex, end)
	}
	if base != nil && (!started || w.cov.LastIndex < ci) {
		end := "the log holds no entry"
		if started {
			end = fmt.Sprintf("the log ends at raft index %d", w.cov.LastIndex)
		}
		return nil, fmt.Errorf("%w: the db holds the entries up to raft index %d, %s", ErrDBNewer, ci, end)
	}
	if tail != nil {
		// Segments after the torn one were not read.
		for i, name := range w.cov.Segments {
			if name == tail.Segment {
				w.cov.Segments = w.cov.Segments[:i+1]
				break
			}
		}
	}
	w.cov.Commit = commit
	// Entries past the last commit index the log records may or may not
	// have been committed and applied.
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
		w.unnamed = unnamedDeleters(prefix)
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
	// The keys with an applied write: at its revision, or at one not
	// established (a key whose only applied write is such a deletion is
	// listed deleted, not left out).
	// Found from the writes, not by walking every key of the db.
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

// errStopped stops a scan whose consumer failed.
var errStopped = errors.New("stopped")

// scanPipelined runs l.Scan (reading records, checking their CRCs and
// decoding the entries: walread.DecodeEntry) in a goroutine of its own
// and fn (replaying them) in the caller's, so that the two use two cores.
// Records go in batches; fn gets them in log order, an entry record with
// its entry decoded (or why it does not decode), others with e nil.
func scanPipelined(l *walread.Log, fn func(typ int64, data []byte, pos walread.Pos, e *walread.Entry, decErr error) error) (*walread.Tail, error) {
	type rawRecord struct {
		typ    int64
		data   []byte
		pos    walread.Pos
		entry  walread.Entry
		decErr error
	}
	const batch = 256
	ch := make(chan []rawRecord, 8)
	stop := make(chan struct{})
	var tail *walread.Tail
	var scanErr error
	go func() {
		defer close(ch)
		buf := make([]rawRecord, 0, batch)
		tail, scanErr = l.Scan(func(rec *walpb.Record, pos walread.Pos) error {
			// The decoder gives every record a new Data slice: no copy.
			x := rawRecord{typ: rec.GetType(), data: rec.GetData(), pos: pos}
			if x.typ == walread.EntryType {
				x.entry, x.decErr = walread.DecodeEntry(x.data)
			}
			buf = append(buf, x)
			if len(buf) < batch {
				return nil
			}
			select {
			case ch <- buf:
			case <-stop:
				return errStopped
			}
			buf = make([]rawRecord, 0, batch)
			return nil
		})
		if scanErr == nil && len(buf) > 0 {
			select {
			case ch <- buf:
			case <-stop:
			}
		}
	}()
	var err error
	for b := range ch {
		if err != nil {
			continue
		}
		for i := range b {
			x := &b[i]
			var e *walread.Entry
			if x.typ == walread.EntryType {
				e = &x.entry
			}
			if err = fn(x.typ, x.data, x.pos, e, x.decErr); err != nil {
				close(stop)
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return tail, scanErr
}

// Coverage summarises the log.
func (w *WAL) Coverage() WALCoverage { return w.cov }

// Entries calls fn for every entry of the log in order.
func (w *WAL) Entries(fn func(WALEntry) error) error {
	for i := range w.r.entries {
		if err := fn(w.r.entry(int32(i))); err != nil {
			return err
		}
	}
	return nil
}

// KeyWrite is one write of a key the log holds, with its entry: applied
// (with its revision), not applied, or unknown.
type KeyWrite struct {
	Entry WALEntry
	// Event is the key's state after the write when Entry.Outcome is
	// OutcomeApplied and the revision is established (Event.KV.ModRevision
	// != 0); otherwise Event.KV holds only Key and Event.Deleted says
	// whether the write was a delete. Values are read only when withValues.
	Event store.Event
}

// KeyWrites calls fn for every write of key the log holds, in log order,
// whatever its outcome. With values, the value each put carried is read
// (for a write not applied too: Event.KV.Value is what it would have
// written).
func (w *WAL) KeyWrites(ctx context.Context, key string, withValues bool, fn func(KeyWrite) error) error {
	for _, id := range w.writesOf(key) {
		if err := ctx.Err(); err != nil {
			return err
		}
		kw, err := w.keyWrite(id, withValues)
		if err != nil {
			return err
		}
		if err := fn(kw); err != nil {
			return err
		}
	}
	return nil
}

// keyWrite is write id as a KeyWrite, with the value its put carried when
// withValue.
func (w *WAL) keyWrite(id int32, withValue bool) (KeyWrite, error) {
	x := &w.r.all[id]
	kw := KeyWrite{Entry: w.r.entry(x.entry), Event: store.Event{Deleted: x.deleted, KV: store.KeyValue{Key: w.r.keyNames[x.key],
		ModRevision: x.mod, CreateRevision: x.create, Version: x.version, Lease: x.lease}}}
	if withValue && !x.deleted {
		v, err := w.value(id)
		if err != nil {
			return kw, err
		}
		kw.Event.KV.Value = v
	}
	return kw, nil
}

// GetAtIndex returns key as it was after the log's entries up to raft index
// index were applied, with the entry of its last write. It wraps
// ErrNotFound when the key did not exist then, ErrUndetermined when the
// log does not establish it.
func (w *WAL) GetAtIndex(ctx context.Context, key string, index uint64) (*store.KeyValue, WALEntry, error) {
	if index > w.cov.LastIndex {
		// Entries after the log's end may exist (in another member's
		// log, or written since the copy): the key then is not known.
		return nil, WALEntry{}, fmt.Errorf("%s at raft index %d: past the log's end (raft index %d): the log does not tell what the entries after it wrote: %w", key, index, w.cov.LastIndex, ErrUndetermined)
	}
	if w.base != nil && index < w.cov.ConsistentIndex && (!w.prefixResolved() || index < w.cov.FirstIndex) {
		return nil, WALEntry{}, fmt.Errorf("%s at raft index %d: the db holds the keyspace as of raft index %d only (read its revisions with --rev): %w", key, index, w.cov.ConsistentIndex, ErrUndetermined)
	}
	found := int32(-1)
	for _, id := range w.writesOf(key) {
		x := &w.r.all[id]
		e := w.r.entry(x.entry)
		if e.Index > index {
			break
		}
		if e.Outcome == OutcomeApplied && (x.mod != 0 || w.isUnplaced(id)) {
			// Its value is established (its revision perhaps not).
			found = id
			continue
		}
		if e.Outcome == OutcomeUnknown || e.Outcome == OutcomeApplied {
			return nil, e, fmt.Errorf("%s at raft index %d: entry %d wrote it with an outcome or revision the log does not establish: %w", key, index, e.Index, ErrUndetermined)
		}
	}
	if found < 0 && w.base != nil && index < w.cov.ConsistentIndex {
		// Before the key's first write in the log.
		kv, err := w.beforeLog(ctx, key, func(e WALEntry) bool { return e.Index <= index })
		if err != nil {
			return nil, WALEntry{}, fmt.Errorf("%s at raft index %d: %w", key, index, err)
		}
		return kv, WALEntry{}, nil
	}
	if found < 0 && w.base != nil {
		kv, err := w.base.Get(ctx, key, 0)
		if err != nil {
			return nil, WALEntry{}, fmt.Errorf("%s at raft index %d: %w", key, index, err)
		}
		return kv, WALEntry{}, nil
	}
	if found < 0 {
		if err := w.startKnown(); err != nil {
			return nil, WALEntry{}, fmt.Errorf("%s at raft index %d: %w", key, index, err)
		}
		return nil, WALEntry{}, fmt.Errorf("%s at raft index %d: %w", key, index, store.ErrNotFound)
	}
	e := w.r.entry(w.r.all[found].entry)
	if w.r.all[found].deleted {
		return nil, e, fmt.Errorf("%s at raft index %d (deleted at entry %d): %w", key, index, e.Index, store.ErrNotFound)
	}
	kv, err := w.kv(found, true)
	return kv, e, err
}

// startKnown returns nil when the log starts from an empty keyspace (so a
// key it never wrote did not exist), ErrUndetermined otherwise.
func (w *WAL) startKnown() error {
	if w.cov.FirstIndex == 1 || w.base != nil {
		return nil
	}
	return fmt.Errorf("the log starts at raft index %d, after a raft snapshot: %w", w.cov.FirstIndex, ErrUndetermined)
}

// writesOf returns the writes of key, in log order.
func (w *WAL) writesOf(key string) []int32 {
	if ks := w.r.keys[key]; ks != nil {
		return ks.writes
	}
	return nil
}

// value reads the value write id put, from the log.
func (w *WAL) value(id int32) ([]byte, error) {
	switch from := w.r.all[id].valueFrom; {
	case from == valueFromBase:
		return w.baseValue(w.r.keyNames[w.r.all[id].key])
	case from >= 0:
		id = from
	}
	x := &w.r.all[id]
	key := w.r.keyNames[x.key]
	e := w.r.entries[x.entry]
	rec, err := w.log.ReadRecord(e.pos)
	if err != nil {
		return nil, fmt.Errorf("read value of %s (entry %d): %w", key, e.index, err)
	}
	ent, err := walread.DecodeEntry(rec.GetData())
	if err != nil {
		return nil, fmt.Errorf("read value of %s: %w", key, err)
	}
	if ent.Index != e.index || ent.Request == nil {
		return nil, fmt.Errorf("read value of %s: entry %d moved in the log", key, e.index)
	}
	put := ent.Request.Put
	if ent.Request.Txn != nil {
		put = findPut(ent.Request.Txn, w.r.pathOf(id))
	}
	if put == nil || string(put.Key) != key {
		return nil, fmt.Errorf("read value of %s: entry %d holds no put of it", key, e.index)
	}
	return put.Value, nil
}

func findPut(t *pb.TxnRequest, path []int32) *pb.PutRequest {
	for len(path) > 0 {
		branch, i := t.Success, int(path[0])
		if i < 0 {
			branch, i = t.Failure, -i-1
		}
		if i >= len(branch) {
			return nil
		}
		u := branch[i]
		if len(path) == 1 {
			return u.GetRequestPut()
		}
		if t = u.GetRequestTxn(); t == nil {
			return nil
		}
		path = path[1:]
	}
	return nil
}

func (w *WAL) kv(id int32, withValue bool) (*store.KeyValue, error) {
	x := &w.r.all[id]
	kv := &store.KeyValue{Key: w.r.keyNames[x.key], CreateRevision: x.create, ModRevision: x.mod, Version: x.version, Lease: x.lease}
	if withValue && !x.deleted {
		v, err := w.value(id)
		if err != nil {
			return nil, err
		}
		kv.Value = v
	}
	return kv, nil
}

// readRevision resolves rev (0: the last revision derived).
func (w *WAL) readRevision(rev int64) (int64, error) {
	if w.lastRev == 0 {
		if err := w.startKnown(); err != nil {
			return 0, fmt.Errorf("no revision derived: %w", err)
		}
		if w.cov.RevisionsStop != "" {
			return 0, fmt.Errorf("no revision derived (%s): %w", w.cov.RevisionsStop, ErrUndetermined)
		}
		return 1, nil // an empty keyspace: nothing was written
	}
	switch {
	case rev == 0:
		return w.lastRev, nil
	case rev < 0:
		return 0, fmt.Errorf("revision %d: must not be negative", rev)
	case rev > w.lastRev:
		return 0, fmt.Errorf("revision %d is past the last revision the log establishes (%d): %w", rev, w.lastRev, ErrUndetermined)
	}
	return rev, nil
}

// at returns key's last applied write at or below rev (-1: none).
func (w *WAL) at(key string, rev int64) int32 {
	found := int32(-1)
	for _, id := range w.writesOf(key) {
		m := w.r.all[id].mod
		if m == 0 {
			continue
		}
		if m > rev {
			break
		}
		found = id
	}
	return found
}

// EntryOfRevision returns the entry of the log that made revision rev,
// when the log establishes it (a revision the db holds, made by one of
// the log's entries it holds: a revoke's deletions, say).
func (w *WAL) EntryOfRevision(rev int64) (WALEntry, bool) {
	w.revOnce.Do(func() {
		for i := range w.r.entries {
			if w.r.entries[i].revision != 0 {
				w.revEntries = append(w.revEntries, int32(i))
			}
		}
	})
	// Established revisions grow with the log's order.
	i := sort.Search(len(w.revEntries), func(i int) bool { return w.r.entries[w.revEntries[i]].revision >= rev })
	if i == len(w.revEntries) || w.r.entries[w.revEntries[i]].revision != rev {
		return WALEntry{}, false
	}
	return w.r.entry(w.revEntries[i]), true
}

// deleted reports whether write id is a deletion.
func (w *WAL) deleted(id int32) bool { return w.r.all[id].deleted }

// Get returns key at revision rev (0: the last revision derived).
func (w *WAL) Get(ctx context.Context, key string, rev int64) (*store.KeyValue, error) {
	at, err := w.readRevision(rev)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	if w.base != nil {
		return w.joinedGet(ctx, key, at)
	}
	x := w.at(key, at)
	if x < 0 || w.deleted(x) {
		return nil, fmt.Errorf("get %s at revision %d: %w", key, at, store.ErrNotFound)
	}
	return w.kv(x, true)
}

// List calls fn for every key under prefix that exists at the revision, in
// key order.
func (w *WAL) List(ctx context.Context, prefix string, opts store.ListOptions, fn func(*store.KeyValue) error) (int64, error) {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return 0, fmt.Errorf("list: prefix %q must end in \"/\" (use get for a single key)", prefix)
	}
	at, err := w.readRevision(opts.Revision)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	if w.base != nil {
		if at <= w.dbRev() {
			return w.base.List(ctx, prefix, store.ListOptions{Revision: at, KeysOnly: opts.KeysOnly}, fn)
		}
		return w.joinedList(ctx, prefix, opts, at, fn)
	}
	for _, k := range w.keysUnder(prefix) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		x := w.at(k, at)
		if x < 0 || w.deleted(x) {
			continue
		}
		kv, err := w.kv(x, !opts.KeysOnly)
		if err != nil {
			return 0, err
		}
		if err := fn(kv); err != nil {
			return 0, err
		}
	}
	return at, nil
}

func (w *WAL) keysUnder(prefix string) []string {
	i, j := prefixRange(len(w.keys), func(i int) string { return w.keys[i] }, prefix)
	return w.keys[i:j]
}

// prefixRange returns the run [i, j) of the n keys (in key order, the
// i-th given by key) that start with prefix.
func prefixRange(n int, key func(i int) string, prefix string) (i, j int) {
	i = sort.Search(n, func(i int) bool { return key(i) >= prefix })
	j = i
	for j < n && strings.HasPrefix(key(j), prefix) {
		j++
	}
	return i, j
}

// History calls fn for every applied revision of key the log establishes,
// oldest first. KeyWrites gives the entries too, with writes not applied.
func (w *WAL) History(ctx context.Context, key string, fn func(store.Event) error) (store.HistoryInfo, error) {
	// Revisions are derived only from a log that starts with the
	// keyspace: nothing before it is missing.
	info := store.HistoryInfo{Revision: w.lastRev}
	writes := w.writesOf(key)
	if w.base != nil {
		// The db's history, with the revisions it compacted that the
		// log's entries before it give back, then the log's newer writes.
		var held []store.Event
		bi, err := w.base.History(ctx, key, func(ev store.Event) error {
			held = append(held, ev)
			return nil
		})
		if err != nil {
			return info, err
		}
		info.CompactRevision = bi.CompactRevision
		if w.prefixResolved() && w.cov.PrefixRevision != 0 && w.cov.PrefixRevision < bi.CompactRevision {
			info.LogStart = w.cov.PrefixRevision
		}
		inDB := map[int64]bool{}
		for _, ev := range held {
			inDB[ev.KV.ModRevision] = true
		}
		i := 0
		// placed is the revision of the last write passed with one: a
		// write applied at a revision not established comes after it.
		var placed int64
		emitLog := func(upTo int64) error {
			for ; i < len(writes); i++ {
				x := writes[i]
				m := w.r.all[x].mod
				if span, ok := w.r.unplaced[x]; ok {
					if max(span[0], placed+1) > upTo {
						return nil
					}
					if dup, err := w.heldAs(x, span, held); err != nil || dup {
						if err != nil {
							return err
						}
						continue
					}
					if err := w.emit(x, "history "+key, fn); err != nil {
						return err
					}
					continue
				}
				if m == 0 {
					continue
				}
				if m > upTo {
					return nil
				}
				placed = m
				if inDB[m] {
					continue
				}
				if err := w.emit(x, "history "+key, fn); err != nil {
					return err
				}
			}
			return nil
		}
		for _, ev := range held {
			if err := emitLog(ev.KV.ModRevision); err != nil {
				return info, err
			}
			if err := fn(ev); err != nil {
				return info, err
			}
		}
		return info, emitLog(math.MaxInt64)
	}
	for _, x := range writes {
		if w.r.all[x].mod == 0 {
			continue
		}
		if err := w.emit(x, "history "+key, fn); err != nil {
			return info, err
		}
	}
	return info, nil
}

// heldAs reports whether one of the db's events of the key (held) is write
// x, applied at a revision not established (within span): the same value
// at a revision it may have.
func (w *WAL) heldAs(x int32, span [2]int64, held []store.Event) (bool, error) {
	if w.deleted(x) {
		for _, ev := range held {
			if ev.Deleted && ev.KV.ModRevision >= span[0] && ev.KV.ModRevision <= span[1] {
				return true, nil
			}
		}
		return false, nil
	}
	var v []byte
	for _, ev := range held {
		if ev.Deleted || ev.KV.ModRevision < span[0] || ev.KV.ModRevision > span[1] {
			continue
		}
		if v == nil {
			var err error
			if v, err = w.value(x); err != nil {
				return false, err
			}
		}
		if bytes.Equal(v, ev.KV.Value) {
			return true, nil
		}
	}
	return false, nil
}

// Info describes the log as a store.
func (w *WAL) Info(ctx context.Context) (store.Info, error) {
	if w.base != nil {
		return store.Info{Description: "write-ahead log " + w.cov.Dir + " over db " + w.cov.DB, Revision: w.lastRev, CompactRevision: w.base.CompactRevision()}, nil
	}
	return store.Info{Description: "write-ahead log " + w.cov.Dir, Revision: w.lastRev}, nil
}

// Close closes the log's segment files that reading values again opened.
func (w *WAL) Close() error { return w.log.Close() }

// ScanRevisions calls fn for every applied revision under prefix, in
// revision order.
func (w *WAL) ScanRevisions(ctx context.Context, prefix string, fn func(store.Event) error) error {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("scan revisions: prefix %q must end in \"/\"", prefix)
	}
	applied := w.r.applied
	if w.base != nil {
		// The db's revisions, with those it compacted that the log's
		// entries before it give back (a write the db compacted is one
		// that is not the newest revision of a key it holds).
		compact := w.base.CompactRevision()
		// The compaction kept each key's newest revision at or below it
		// (unless a deletion): the db holds those.
		kept := map[int32]int32{}
		for _, x := range applied {
			wr := &w.r.all[x]
			if wr.mod > compact {
				break
			}
			kept[wr.key] = x
		}
		i := 0
		emitLog := func(upTo int64) error {
			for ; i < len(applied); i++ {
				x := applied[i]
				wr := &w.r.all[x]
				if wr.mod > upTo || wr.mod > compact {
					return nil
				}
				if !strings.HasPrefix(w.r.keyNames[wr.key], prefix) || kept[wr.key] == x && !wr.deleted {
					continue
				}
				if err := w.emit(x, "scan revisions "+prefix, fn); err != nil {
					return err
				}
			}
			return nil
		}
		err := w.base.ScanRevisions(ctx, prefix, func(ev store.Event) error {
			if err := emitLog(ev.KV.ModRevision); err != nil {
				return err
			}
			return fn(ev)
		})
		if err == nil {
			err = emitLog(compact)
		}
		if err != nil {
			return err
		}
		// Then the log's writes after the db.
		n := sort.Search(len(applied), func(j int) bool { return w.r.all[applied[j]].mod > w.cov.DBRevision })
		applied = applied[n:]
	}
	for i, x := range applied {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !strings.HasPrefix(w.r.keyNames[w.r.all[x].key], prefix) {
			continue
		}
		if err := w.emit(x, "scan revisions "+prefix, fn); err != nil {
			return err
		}
	}
	return nil
}

// emit calls fn with write x as an event (what names the read in an
// error reading its value).
func (w *WAL) emit(x int32, what string, fn func(store.Event) error) error {
	kv, err := w.kv(x, true)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fn(store.Event{KV: *kv, Deleted: w.deleted(x)})
}

// ScanLatest calls fn once per key under prefix, in key order, with its
// newest state the log establishes (see Archive).
func (w *WAL) ScanLatest(ctx context.Context, prefix string, includeDeleted bool, fn func(kv *store.KeyValue, deleted bool, deleteRev int64) error) error {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("scan latest: prefix %q must end in \"/\"", prefix)
	}
	if w.base != nil {
		return w.joinedScanLatest(ctx, prefix, includeDeleted, fn)
	}
	return w.logScanLatest(ctx, prefix, true, includeDeleted, fn)
}

// logScanLatest is ScanLatest over the log alone: the keys it wrote,
// live ones (with their values) only when live, deleted ones only when
// deleted.
func (w *WAL) logScanLatest(ctx context.Context, prefix string, live, deleted bool, fn func(kv *store.KeyValue, deleted bool, deleteRev int64) error) error {
	if w.lastRev == 0 {
		if err := w.startKnown(); err != nil {
			return fmt.Errorf("scan latest %s: no revision derived: %w", prefix, err)
		}
	}
	for _, k := range w.keysUnder(prefix) {
		if err := ctx.Err(); err != nil {
			return err
		}
		x := w.at(k, w.lastRev)
		if x < 0 || w.deleted(x) && !deleted || !w.deleted(x) && !live {
			continue
		}
		if !w.deleted(x) {
			kv, err := w.kv(x, true)
			if err != nil {
				return err
			}
			if err := fn(kv, false, 0); err != nil {
				return err
			}
			continue
		}
		kv := &store.KeyValue{Key: k}
		delRev := w.r.all[x].mod
		if prev := w.at(k, delRev-1); prev >= 0 && !w.deleted(prev) {
			var err error
			if kv, err = w.kv(prev, true); err != nil {
				return err
			}
		}
		if err := fn(kv, true, delRev); err != nil {
			return err
		}
	}
	return nil
}

// ScanDeleted calls fn for the keys ScanLatest with includeDeleted reports
// deleted, in key order (see Archive). Over a db it walks no db.
func (w *WAL) ScanDeleted(ctx context.Context, prefix string, fn func(kv *store.KeyValue, deleteRev int64) error) error {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("scan deleted: prefix %q must end in \"/\"", prefix)
	}
	if w.base != nil {
		return w.joinedScanDeleted(ctx, prefix, fn)
	}
	// Without a db the log's keys are all there is.
	return w.logScanLatest(ctx, prefix, false, true, func(kv *store.KeyValue, _ bool, deleteRev int64) error { return fn(kv, deleteRev) })
}

// PastIncarnation is an incarnation of a key that a deletion ended and
// that another followed: the key was created again after it (for an
// apiserver's object, another object under the same name, with a new
// uid). ScanLatest gives a key's newest state only, where such a key is
// live (or deleted again, as its newest incarnation).
type PastIncarnation struct {
	// KV is its last live state the source establishes, with its value;
	// a KeyValue with only Key set when that is not held.
	KV store.KeyValue
	// DeleteRevision is the revision of the deletion that ended it (-1:
	// applied at a revision the log does not establish); DeleteIndex is
	// the raft entry that deleted it.
	DeleteRevision int64
	DeleteIndex    uint64
	// RecreateRevision is the create revision of the incarnation that
	// followed it (-1: not established). RecreateIndex is the raft entry
	// that created it, 0 when no write of the log establishes it (the db
	// the log was replayed over holds the key again, newer than the
	// deletion).
	RecreateRevision int64
	RecreateIndex    uint64
}

// Incarnations is what a source that tells a key's incarnations apart can
// do beyond Archive: a write-ahead log (*WAL). Callers test for it with a
// type assertion.
type Incarnations interface {
	// PastIncarnations calls fn for every past incarnation (see
	// PastIncarnation) of the keys under prefix, in key order and, for
	// one key, oldest first.
	PastIncarnations(ctx context.Context, prefix string, fn func(PastIncarnation) error) error
}

var _ Incarnations = (*WAL)(nil)

// PastIncarnations calls fn for every incarnation of a key under prefix
// that a deletion the log establishes ended and that another followed: a
// write the log applied after the deletion (etcd creates a key a put
// finds absent: create revision and version start again), or, for a
// deletion among the log's entries the db holds, the db's live key, newer
// than the deletion. Writes whose outcome is not established end or start
// no incarnation.
func (w *WAL) PastIncarnations(ctx context.Context, prefix string, fn func(PastIncarnation) error) error {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("past incarnations: prefix %q must end in \"/\"", prefix)
	}
	for _, k := range w.keysUnder(prefix) {
		if err := ctx.Err(); err != nil {
			return err
		}
		// The incarnation a deletion ended is read (endedBy: a read of
		// the db for a key the log first writes with its deletion) only
		// when a new one follows it.
		live, del, delLive := int32(-1), int32(-1), int32(-1)
		for _, id := range w.writesOf(k) {
			x := &w.r.all[id]
			if x.mod == 0 && !w.isUnplaced(id) {
				continue // not applied, or not established
			}
			index := w.r.entries[x.entry].index
			if x.deleted {
				del, delLive, live = id, live, -1
				continue
			}
			if del >= 0 {
				ended, err := w.endedBy(ctx, k, del, delLive)
				if err != nil {
					return err
				}
				ended.RecreateRevision, ended.RecreateIndex = -1, index
				if x.mod != 0 && x.create != 0 {
					ended.RecreateRevision = x.create
				}
				if err := fn(*ended); err != nil {
					return err
				}
				del = -1
			}
			live = id
		}
		if del < 0 || w.base == nil || w.r.entries[w.r.all[del].entry].index > w.cov.ConsistentIndex {
			continue
		}
		// A deletion among the entries the db holds: the db's state is
		// after it; a live key there was created again.
		cur, ok := w.baseState(k)
		delRev := w.r.all[del].mod
		switch {
		case !ok:
			continue
		case delRev > 0 && cur.ModRevision <= delRev:
			continue
		}
		ended, err := w.endedBy(ctx, k, del, delLive)
		if err != nil {
			return err
		}
		ended.RecreateRevision = -1
		if cur.CreateRevision > ended.DeleteRevision && ended.DeleteRevision > 0 {
			ended.RecreateRevision = cur.CreateRevision
		}
		if err := fn(*ended); err != nil {
			return err
		}
	}
	return nil
}

// endedBy is the incarnation of key that deletion del ended; live is the
// key's last live write before it in the log (-1: none in this
// incarnation).
func (w *WAL) endedBy(ctx context.Context, key string, del, live int32) (*PastIncarnation, error) {
	x := &w.r.all[del]
	p := &PastIncarnation{KV: store.KeyValue{Key: key}, DeleteRevision: x.mod, DeleteIndex: w.r.entries[x.entry].index}
	if x.mod == 0 {
		p.DeleteRevision = -1
	}
	switch {
	case live >= 0:
		kv, err := w.kv(live, true)
		if err != nil {
			return nil, err
		}
		p.KV = *kv
	case w.base != nil && x.mod > 0 && w.before(key, del) < 0:
		// Its state before the log's first write of it: as the db and
		// the log's entries it holds establish it.
		kv, err := w.Get(ctx, key, x.mod-1)
		switch {
		case err == nil:
			p.KV = *kv
		case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrCompacted) && !errors.Is(err, ErrUndetermined):
			return nil, err
		}
	}
	return p, nil
}

// WritesInOrder calls fn for every write the log holds, in log order (or
// the reverse), whatever its outcome, with the value each put carried
// (read from the log when fn is called).
func (w *WAL) WritesInOrder(ctx context.Context, reverse bool, fn func(KeyWrite) error) error {
	n := len(w.r.all)
	for i := range n {
		id := int32(i)
		if reverse {
			id = int32(n - 1 - i)
		}
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		kw, err := w.keyWrite(id, true)
		if err != nil {
			return err
		}
		if err := fn(kw); err != nil {
			return err
		}
	}
	return nil
}

// baseState is key's state in the db the replay started from (no value),
// found among the states it read; false when the db does not hold it.
func (w *WAL) baseState(key string) (store.KeyValue, bool) {
	i := sort.Search(len(w.baseStates), func(i int) bool { return w.baseStates[i].Key >= key })
	if i < len(w.baseStates) && w.baseStates[i].Key == key {
		return w.baseStates[i], true
	}
	return store.KeyValue{}, false
}

// ctxCheckEvery is how many items a loop handles between two looks at its
// context.
const ctxCheckEvery = 4096

// User returns the etcd user entry e's request carried: the name etcd
// authenticated it as (a password user, or the client certificate's common
// name), which etcd puts in the request's header only while its
// authentication is enabled (`etcdctl auth enable`); "" otherwise, and for
// an entry that is not a request.
func (w *WAL) User(e WALEntry) (string, error) {
	rec, err := w.log.ReadRecord(e.pos)
	if err != nil {
		return "", fmt.Errorf("read entry %d: %w", e.Index, err)
	}
	ent, err := walread.DecodeEntry(rec.GetData())
	if err != nil {
		return "", fmt.Errorf("read entry %d: %w", e.Index, err)
	}
	if ent.Index != e.Index {
		return "", fmt.Errorf("read entry %d: it moved in the log", e.Index)
	}
	if ent.Request == nil || ent.Request.Header == nil {
		return "", nil
	}
	return ent.Request.Header.Username, nil
}
