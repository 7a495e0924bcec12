package wal

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/store"
)

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
	// Event is the key's state after the write when it applied at an
	// established revision; otherwise Event.KV holds only Key.
	Event store.Event
}

// KeyWrites calls fn for every write of key the log holds, in log order,
// whatever its outcome; withValues reads the value each put carried.
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

// keyWrite is write id as a KeyWrite.
func (w *WAL) keyWrite(id int32, withValue bool) (KeyWrite, error) {
	kv, err := w.kv(id, withValue)
	if err != nil {
		return KeyWrite{}, err
	}
	return KeyWrite{Entry: w.r.entry(w.r.all[id].entry), Event: store.Event{Deleted: w.deleted(id), KV: *kv}}, nil
}

// GetAtIndex returns key as the log's entries up to raft index index left
// it, with the entry of its last write. It wraps ErrNotFound when the key
// did not exist then, ErrUndetermined when the log does not establish it.
func (w *WAL) GetAtIndex(ctx context.Context, key string, index uint64) (*store.KeyValue, WALEntry, error) {
	if index > w.cov.LastIndex {
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
	if found < 0 {
		var kv *store.KeyValue
		var err error
		switch {
		case w.base != nil && index < w.cov.ConsistentIndex:
			// Before the key's first write in the log.
			kv, err = w.beforeLog(ctx, key, func(e WALEntry) bool { return e.Index <= index })
		case w.base != nil:
			kv, err = w.base.Get(ctx, key, 0)
		default:
			if err = w.startKnown(); err == nil {
				err = store.ErrNotFound
			}
		}
		if err != nil {
			return nil, WALEntry{}, fmt.Errorf("%s at raft index %d: %w", key, index, err)
		}
		return kv, WALEntry{}, nil
	}
	e := w.r.entry(w.r.all[found].entry)
	if w.r.all[found].deleted {
		return nil, e, fmt.Errorf("%s at raft index %d (deleted at entry %d): %w", key, index, e.Index, store.ErrNotFound)
	}
	kv, err := w.kv(found, true)
	return kv, e, err
}

// startKnown returns nil when a key the log never wrote did not exist,
// ErrUndetermined otherwise.
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
	req, err := w.request(w.r.entry(x.entry))
	if err != nil {
		return nil, fmt.Errorf("read value of %s: %w", key, err)
	}
	put := putAt(req, w.r.pathOf(id))
	if put == nil || string(put.Key) != key {
		return nil, fmt.Errorf("read value of %s: entry %d holds no put of it", key, e.index)
	}
	return put.Value, nil
}

// putAt is the put at path in req: a transaction's op path (see op), or
// none for a put request.
func putAt(req *pb.InternalRaftRequest, path []int32) *pb.PutRequest {
	for _, o := range entryOps(req) {
		if o.put != nil && slices.Equal(o.path, path) {
			return o.put
		}
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
// when the log establishes it.
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
		if at <= w.cov.DBRevision {
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

// prefixRange returns the run [i, j) of n sorted keys that start with
// prefix.
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
	info := store.HistoryInfo{Revision: w.lastRev}
	writes := w.writesOf(key)
	if w.base != nil {
		// The db's history with the revisions the prefix gives back, then
		// the log's newer writes.
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

// heldAs reports whether one of the db's events held is write x, applied
// at a revision within span: the same value at a revision it may have.
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
		// The db's revisions, with those it compacted that the prefix
		// gives back: the compaction kept each key's newest live one.
		compact := w.base.CompactRevision()
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

// emit calls fn with write x as an event; what names the read.
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

// logScanLatest is ScanLatest over the log alone, of its live keys when
// live and its deleted ones when deleted.
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

// baseState is key's state in the db, without its value.
func (w *WAL) baseState(key string) (store.KeyValue, bool) {
	i := sort.Search(len(w.baseStates), func(i int) bool { return w.baseStates[i].Key >= key })
	if i < len(w.baseStates) && w.baseStates[i].Key == key {
		return w.baseStates[i], true
	}
	return store.KeyValue{}, false
}

// ctxCheckEvery is how many items a loop handles between looks at ctx.
const ctxCheckEvery = 4096

// User returns the etcd user entry e's request carried: the name etcd
// authenticated it as, which it records only while authentication is
// enabled; "" otherwise, and for an entry that is not a request.
func (w *WAL) User(e WALEntry) (string, error) {
	req, err := w.request(e)
	return req.GetHeader().GetUsername(), err
}
