package wal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// ErrBeforeBase means a point in time is before the db the log replays
// over.
var ErrBeforeBase = errors.New("the db the log replays over is newer than that point")

// ErrNoPointInTime means the revision or deletion a point in time was
// named by is not among the log's entries after the db.
var ErrNoPointInTime = errors.New("the log holds no such change after the db")

// errNoBase says a point in time needs a db.
var errNoBase = errors.New("a point in time is the log replayed over the db it continues: give the db or an older snapshot of the member (--db)")

// PointInTime is the keyspace as the log's entries up to raft index Index
// left it, replayed exactly by step over the db the log starts from: what
// an etcd snapshot taken at Index holds, as store.WritePointInTime writes.
//
// Only a replay over a db has one, and only where every entry from the
// db's consistent index to Index has an established outcome and revision:
// none missing, none past the last commit index the log records, none
// whose rules are not modelled, such as enabling authentication.
type PointInTime struct {
	// Index and Term are the raft entry the point is at.
	Index, Term uint64
	// BaseIndex and BaseRevision are the db's consistent index and
	// revision; Base its path.
	BaseIndex    uint64
	BaseRevision int64
	Base         string
	// Revision is the keyspace's revision at Index.
	Revision int64
	// Entries counts the entries replayed after BaseIndex, Changes the
	// key changes they made.
	Entries, Changes int
	// Compaction is the highest compaction revision at Index, 0 for none.
	Compaction int64
	// Leases are the lease changes of the entries, in log order; a
	// grant's AskedTTL says etcd raised the TTL it asked for.
	Leases []store.LeaseChange
	// Kept counts the entries whose changes the snapshot keeps as the db
	// holds them, by what they change: "membership", "memberAttributes"
	// (and the cluster version), "auth", "alarm".
	Kept map[string]int

	w      *WAL
	writes []int32 // the applied writes of (BaseIndex, Index], in revision order
}

// PointInTime returns the keyspace at raft index index. It wraps
// ErrBeforeBase for an index below the db's, and ErrUndetermined when an
// entry up to index is not established or the log does not reach it.
func (w *WAL) PointInTime(ctx context.Context, index uint64) (*PointInTime, error) {
	if w.base == nil {
		return nil, errNoBase
	}
	ci := w.cov.ConsistentIndex
	m := w.base.Meta()
	p := &PointInTime{Index: index, BaseIndex: ci, BaseRevision: w.cov.DBRevision, Base: w.base.Path(),
		Revision: w.cov.DBRevision, Compaction: max(m.CompactRevision, m.ScheduledCompactRevision), w: w, Term: m.Term}
	switch {
	case index < ci:
		return nil, fmt.Errorf("raft index %d: %w: %s holds the entries up to raft index %d; give an older snapshot of the cluster as --db", index, ErrBeforeBase, w.base.Path(), ci)
	case index > w.cov.LastIndex:
		return nil, fmt.Errorf("raft index %d: %w: the log ends at raft index %d", index, ErrUndetermined, w.cov.LastIndex)
	case index > w.cov.Commit:
		return nil, fmt.Errorf("raft index %d: %w: past the last commit index the log records (%d): it may never have been applied", index, ErrUndetermined, w.cov.Commit)
	case !w.r.known && w.r.stopAt <= index:
		return nil, fmt.Errorf("raft index %d: %w: %s", index, ErrUndetermined, w.r.stopWhy)
	}
	r := w.r
	p.Kept = map[string]int{}
	first, last := -1, -1
	for i := range r.entries {
		e := &r.entries[i]
		if e.index <= ci {
			continue
		}
		if e.index > index {
			break
		}
		if first < 0 {
			first = i
		}
		last = i
		we := r.entry(int32(i))
		p.Entries++
		p.Term = e.term
		if e.outcome == OutcomeUnknown {
			return nil, fmt.Errorf("raft index %d: %w: entry %d (%s): %s", index, ErrUndetermined, e.index, e.kind, we.Reason)
		}
		if e.revision != 0 {
			p.Revision = e.revision
		}
		if err := p.entry(ctx, int32(i), we); err != nil {
			return nil, err
		}
	}
	if index > ci && (first < 0 || r.entries[last].index != index) {
		return nil, fmt.Errorf("raft index %d: %w: the log holds no entry %d after the db's", index, ErrLogGap, index)
	}
	if first >= 0 {
		lo, hi := r.entries[first].index, r.entries[last].index
		for _, id := range r.applied {
			x := &r.all[id]
			if ei := r.entries[x.entry].index; ei < lo || ei > hi {
				continue
			}
			if x.mod == 0 {
				return nil, fmt.Errorf("raft index %d: %w: the revision of entry %d's write of %s", index, ErrUndetermined, r.entries[x.entry].index, r.keyNames[x.key])
			}
			p.writes = append(p.writes, id)
		}
	}
	p.Changes = len(p.writes)
	return p, nil
}

// entry takes one replayed entry's lease changes and compaction.
func (p *PointInTime) entry(ctx context.Context, i int32, we WALEntry) error {
	switch we.Other {
	case "cluster", "v2":
		p.Kept["memberAttributes"]++
	case "auth", "alarm":
		p.Kept[we.Other]++
	case "unrecognized":
		return fmt.Errorf("raft index %d: %w: entry %d holds a request this build does not know: what it changed is not known", p.Index, ErrUndetermined, we.Index)
	}
	if we.Kind == walfile.KindConfChange {
		p.Kept["membership"]++
	}
	eff := p.w.r.effects[i]
	p.Compaction = max(p.Compaction, eff.compacted)
	for _, lc := range eff.leases {
		lc.Index = we.Index
		p.Leases = append(p.Leases, lc)
	}
	return ctx.Err()
}

// request reads entry we's request again from the log, nil for none.
func (w *WAL) request(we WALEntry) (*pb.InternalRaftRequest, error) {
	rec, err := w.log.ReadRecord(we.pos)
	if err != nil {
		return nil, fmt.Errorf("read entry %d: %w", we.Index, err)
	}
	e, err := walfile.DecodeEntry(rec.GetData())
	if err != nil {
		return nil, fmt.Errorf("read entry %d: %w", we.Index, err)
	}
	if e.Index != we.Index {
		return nil, fmt.Errorf("read entry %d: the log holds another entry there now", we.Index)
	}
	return e.Request, nil
}

// Writes calls fn for each revision the entries add to the db's, in
// revision order, with the value each put wrote.
func (p *PointInTime) Writes(ctx context.Context, fn func(store.ReplayedRevision) error) error {
	var main, sub int64
	for i, id := range p.writes {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		kw, err := p.w.keyWrite(id, true)
		if err != nil {
			return err
		}
		kv := kw.Event.KV
		if kv.ModRevision == main {
			sub++
		} else {
			main, sub = kv.ModRevision, 0
		}
		if kw.Event.Deleted {
			kv = store.KeyValue{Key: kv.Key, ModRevision: kv.ModRevision}
		}
		if err := fn(store.ReplayedRevision{KV: kv, Sub: sub, Deleted: kw.Event.Deleted}); err != nil {
			return err
		}
	}
	return nil
}

// KeyChange is one key the entries changed, with its states in the db and
// at the point in time, nil where absent, without values.
type KeyChange struct {
	Key           string
	Before, After *store.KeyValue
}

// Changed lists the keys the entries changed, in key order.
func (p *PointInTime) Changed() []KeyChange {
	after := map[string]*store.KeyValue{}
	for _, id := range p.writes {
		x := &p.w.r.all[id]
		key := p.w.r.keyNames[x.key]
		if x.deleted {
			after[key] = nil
			continue
		}
		after[key] = &store.KeyValue{Key: key, CreateRevision: x.create, ModRevision: x.mod, Version: x.version, Lease: x.lease}
	}
	out := make([]KeyChange, 0, len(after))
	for _, k := range slices.Sorted(maps.Keys(after)) {
		kc := KeyChange{Key: k, After: after[k]}
		if s, ok := p.w.baseState(k); ok {
			kc.Before = &s
		}
		out = append(out, kc)
	}
	return out
}

// Live calls fn for every key live at the point in time, in key order,
// without its value.
func (p *PointInTime) Live(fn func(store.KeyValue) error) error {
	changed := p.Changed()
	base := p.w.baseStates
	i, j := 0, 0
	for i < len(base) || j < len(changed) {
		switch {
		case j == len(changed) || i < len(base) && base[i].Key < changed[j].Key:
			if err := fn(base[i]); err != nil {
				return err
			}
			i++
		default:
			if i < len(base) && base[i].Key == changed[j].Key {
				i++
			}
			if a := changed[j].After; a != nil {
				if err := fn(*a); err != nil {
					return err
				}
			}
			j++
		}
	}
	return nil
}

// IndexBeforeRevision is the raft index just before the entry that made
// revision rev. It wraps ErrBeforeBase for a revision the db holds, and
// ErrNoPointInTime when no entry after the db's made it.
func (w *WAL) IndexBeforeRevision(rev int64) (uint64, error) {
	if w.base == nil {
		return 0, errNoBase
	}
	ci := w.cov.ConsistentIndex
	if rev <= w.cov.DBRevision {
		return 0, fmt.Errorf("revision %d: %w: %s is at revision %d; give an older snapshot of the cluster as --db", rev, ErrBeforeBase, w.base.Path(), w.cov.DBRevision)
	}
	prev := ci
	for i := range w.r.entries {
		e := &w.r.entries[i]
		if e.index <= ci {
			continue
		}
		if e.revision >= rev {
			if e.revision != rev {
				break
			}
			return prev, nil
		}
		prev = e.index
	}
	if !w.r.known {
		return 0, fmt.Errorf("revision %d: %w: %s", rev, ErrUndetermined, w.r.stopWhy)
	}
	return 0, fmt.Errorf("revision %d: %w: the entries after the db's (consistent index %d, revision %d) made revisions up to %d", rev, ErrNoPointInTime, ci, w.cov.DBRevision, w.lastRev)
}

// IndexBeforeDelete is the raft index just before the first entry after
// the db's that deletes key, or a key under it when it ends in "/", with
// that entry. It wraps ErrNoPointInTime when none does, ErrUndetermined
// when an entry before one that does is not established.
func (w *WAL) IndexBeforeDelete(key string) (uint64, WALEntry, error) {
	if w.base == nil {
		return 0, WALEntry{}, errNoBase
	}
	match := func(k string) bool {
		if strings.HasSuffix(key, "/") {
			return strings.HasPrefix(k, key)
		}
		return k == key
	}
	ci := w.cov.ConsistentIndex
	best := int32(-1)
	for _, id := range w.r.applied {
		x := &w.r.all[id]
		if !x.deleted || w.r.entries[x.entry].index <= ci || !match(w.r.keyNames[x.key]) {
			continue
		}
		if best < 0 || x.entry < best {
			best = x.entry
		}
	}
	// An entry whose outcome is not established (past the last commit
	// the log records) that would delete it: the point before it is
	// before the deletion too.
	for i := range w.r.entries {
		e := &w.r.entries[i]
		if best >= 0 && int32(i) >= best {
			break
		}
		if e.index <= ci || e.outcome != OutcomeUnknown || e.kind != walfile.KindDeleteRange && e.kind != walfile.KindTxn {
			continue
		}
		req, err := w.request(w.r.entry(int32(i)))
		if err != nil {
			return 0, WALEntry{}, err
		}
		if requestDeletes(req, key) {
			best = int32(i)
			break
		}
	}
	if best < 0 {
		if !w.r.known {
			return 0, WALEntry{}, fmt.Errorf("a deletion of %s: %w: %s", key, ErrUndetermined, w.r.stopWhy)
		}
		return 0, WALEntry{}, fmt.Errorf("a deletion of %s: %w: no entry after the db's consistent index %d deletes it", key, ErrNoPointInTime, ci)
	}
	prev := ci
	for i := int32(0); i < best; i++ {
		if e := w.r.entries[i]; e.index > ci {
			prev = e.index
		}
	}
	return prev, w.r.entry(best), nil
}

// requestDeletes reports whether req holds a delete, in any branch, of
// key or, when key ends in "/", of a key under it.
func requestDeletes(req *pb.InternalRaftRequest, key string) bool {
	// The keys meant: [lo, hi), "/" + 1 being "0".
	lo, hi := key, key+"\x00"
	if strings.HasSuffix(key, "/") {
		hi = strings.TrimSuffix(key, "/") + "0"
	}
	for _, o := range entryOps(req) {
		if o.del == nil {
			continue
		}
		k, e := string(o.del.Key), string(o.del.RangeEnd)
		if e == "" {
			e = k + "\x00"
		}
		if k < hi && (e == "\x00" || e > lo) {
			return true
		}
	}
	return false
}

// Snapshot is p as store.WritePointInTime takes it.
func (p *PointInTime) Snapshot() store.PointInTime {
	return store.PointInTime{ConsistentIndex: p.Index, Term: p.Term, Revision: p.Revision, Compaction: p.Compaction, Leases: p.Leases, Revisions: p.Writes}
}
