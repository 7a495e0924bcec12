package wal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/etcdpvc/etcdpvc/store"
)

// A member's log almost always starts after a raft snapshot, so the log
// alone establishes no revision. The member's db holds the keyspace as of
// its consistent index: the replay starts from that state and applies
// the newer entries with revisions continuing from the db's. The joined
// source reads as one: the db's history, then the log's newer writes.

var (
	// ErrDBNewer means the db the replay starts from holds entries the
	// log does not reach.
	ErrDBNewer = errors.New("the db is newer than the write-ahead log")
	// ErrLogGap means the log does not hold the entry after the db's
	// consistent index: the entries between them are in neither.
	ErrLogGap = errors.New("the write-ahead log does not continue the db")
	// ErrOtherCluster means the db is another cluster's.
	ErrOtherCluster = errors.New("the db is not of the write-ahead log's cluster")
	// ErrCheckOrder means the db given to check the replay is older than
	// the one it starts from.
	ErrCheckOrder = errors.New("the db that checks the replay is older than the db it starts from")
)

// checkMember returns an error wrapping ErrOtherCluster when the db lists
// its cluster's members and the log's member is not among them.
func (w *WAL) checkMember(db *store.Bolt, node uint64) error {
	ids, err := db.MemberIDs()
	if err != nil || len(ids) == 0 {
		return err
	}
	for _, id := range ids {
		if id == node {
			return nil
		}
	}
	return fmt.Errorf("%w: the log is member %x's, the members of db %s are %x", ErrOtherCluster, node, db.Path(), ids)
}

// newChecker is the checker of the replay over w.base (consistent index
// ci) by check, a newer db of the same member.
func (w *WAL) newChecker(check *store.Bolt, ci uint64) (*walChecker, error) {
	if w.base == nil {
		return nil, errors.New("a db that checks the replay needs the db the replay starts from")
	}
	c := newWALChecker(check)
	if c.result.ConsistentIndex < ci {
		return nil, fmt.Errorf("%w: the db %s that checks the replay holds the entries up to raft index %d, before those of the db %s it starts from (%d): the older one is the start", ErrCheckOrder, check.Path(), c.result.ConsistentIndex, w.base.Path(), ci)
	}
	return c, nil
}

// valueFromBase marks a put that kept the value a key had in the db.
const valueFromBase = -2

// startFromBase loads w.base's state into r and returns the db's
// consistent index. Its keys are read in a goroutine of their own while
// the log is read: wait must return before r is used.
func (w *WAL) startFromBase(ctx context.Context, r *replay) (ci uint64, wait func() error, err error) {
	b := w.base
	m := b.Meta()
	if m.ConsistentIndex == 0 {
		return 0, nil, fmt.Errorf("db %s records no consistent index: it cannot tell which log entries it holds", b.Path())
	}
	r.rev = m.Revision
	r.compactRev = b.CompactRevision()
	r.baseValue = w.baseValue
	leases, err := b.LeaseIDs()
	if err != nil {
		return 0, nil, err
	}
	for _, id := range leases {
		r.leases[id] = true
	}
	w.cov.DB, w.cov.ConsistentIndex, w.cov.DBRevision = b.Path(), m.ConsistentIndex, m.Revision
	done := make(chan error, 1)
	go func() { done <- w.loadBaseKeys(ctx, r) }()
	var once sync.Once
	var loadErr error
	wait = func() error {
		once.Do(func() { loadErr = <-done })
		return loadErr
	}
	return m.ConsistentIndex, wait, nil
}

// loadBaseKeys reads w.base's live keys into r and its deleted ones into
// w.baseDeleted, in one walk.
func (w *WAL) loadBaseKeys(ctx context.Context, r *replay) error {
	b := w.base
	count := func(n int) {
		// Sized once: the db's keys may be millions.
		r.sizeKeys(n)
		w.baseStates = make([]store.KeyValue, 0, n)
	}
	err := b.WalkLatest(ctx, count, func(kv *store.KeyValue, deleteRev int64) error {
		if deleteRev != 0 {
			w.baseDeleted = append(w.baseDeleted, baseTombstone{kv: *kv, deleteRev: deleteRev})
			return nil
		}
		s := r.keyString(kv.Key)
		s.exists, s.create, s.mod, s.version, s.lease = true, kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease
		w.baseStates = append(w.baseStates, store.KeyValue{Key: r.keyNames[s.id], CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease})
		if kv.Lease != 0 {
			// A live key's lease exists: revoking it deletes the key.
			r.leases[kv.Lease] = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the db's keys: %w", err)
	}
	return nil
}

// baseValue reads key's value in the db.
func (w *WAL) baseValue(key string) ([]byte, error) {
	if s, ok := w.baseState(key); ok {
		// A seek to its revision, not a walk of every revision (Bolt.Get).
		v, err := w.base.ValueCopy(key, s.ModRevision)
		if err != nil {
			return nil, fmt.Errorf("read value of %s in the db: %w", key, err)
		}
		return v, nil
	}
	kv, err := w.base.Get(context.Background(), key, 0)
	if err != nil {
		return nil, fmt.Errorf("read value of %s in the db: %w", key, err)
	}
	return kv.Value, nil
}

// joinedGet is Get over the db and the log.
func (w *WAL) joinedGet(ctx context.Context, key string, at int64) (*store.KeyValue, error) {
	if at <= w.cov.DBRevision {
		kv, err := w.base.Get(ctx, key, at)
		switch {
		case !errors.Is(err, store.ErrCompacted) || w.base == nil || w.cov.InDB == 0 || at < w.prefixLowest:
		case w.prefixKnown(at):
			return w.prefixGet(ctx, key, at)
		case w.cov.PrefixUnresolved != "":
			return nil, fmt.Errorf("get %s at revision %d: the db compacted it, and the log's entries the db holds are not worked out (%s): %w", key, at, w.cov.PrefixUnresolved, ErrUndetermined)
		default:
			return nil, fmt.Errorf("get %s at revision %d: the db compacted it, and the revision before the log is not established (from %d to %d): %w", key, at, w.prefixLowest, w.prefixFloor, ErrUndetermined)
		}
		return kv, err
	}
	// The db holds each key as the log's entries up to it left it: only
	// the writes after it are read from the log.
	if x := w.at(key, at); x >= 0 && w.r.all[x].mod > w.cov.DBRevision {
		if w.deleted(x) {
			return nil, fmt.Errorf("get %s at revision %d: %w", key, at, store.ErrNotFound)
		}
		return w.kv(x, true)
	}
	kv, err := w.base.Get(ctx, key, 0)
	if err != nil {
		return nil, fmt.Errorf("get %s at revision %d: %w", key, at, err)
	}
	return kv, nil
}

// mergeLog walks the log's keys under prefix alongside a scan of the db's,
// both in key order: scan hands each db key with its call, and logOnly
// gets the log's keys the db does not hold.
func (w *WAL) mergeLog(prefix string, scan func(func(key string, call func() error) error) error, logOnly func(key string) error) error {
	logKeys := w.keysUnder(prefix)
	i := 0
	err := scan(func(key string, call func() error) error {
		for i < len(logKeys) && logKeys[i] < key {
			if err := logOnly(logKeys[i]); err != nil {
				return err
			}
			i++
		}
		if i < len(logKeys) && logKeys[i] == key {
			i++
		}
		return call()
	})
	if err != nil {
		return err
	}
	for ; i < len(logKeys); i++ {
		if err := logOnly(logKeys[i]); err != nil {
			return err
		}
	}
	return nil
}

// joinedList is List over the db and the log, at a revision past the db's.
func (w *WAL) joinedList(ctx context.Context, prefix string, opts store.ListOptions, at int64, fn func(*store.KeyValue) error) (int64, error) {
	fromLog := func(key string) (bool, error) {
		x := w.at(key, at)
		if x < 0 || w.r.all[x].mod <= w.cov.DBRevision {
			// Not written after the db: as the db holds it.
			return false, nil
		}
		if w.deleted(x) {
			return true, nil
		}
		kv, err := w.kv(x, !opts.KeysOnly)
		if err != nil {
			return true, err
		}
		return true, fn(kv)
	}
	err := w.mergeLog(prefix, func(each func(string, func() error) error) error {
		_, err := w.base.List(ctx, prefix, store.ListOptions{KeysOnly: opts.KeysOnly}, func(kv *store.KeyValue) error {
			return each(kv.Key, func() error {
				done, err := fromLog(kv.Key)
				if done || err != nil {
					return err
				}
				return fn(kv)
			})
		})
		return err
	}, func(key string) error {
		_, err := fromLog(key)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	return at, nil
}

// joinedState is a key's newest state over the db and the log; deleteRev
// is -1 for a deletion whose revision is not established.
type joinedState struct {
	kv        *store.KeyValue
	deleted   bool
	deleteRev int64
}

// joinedLatest is key's newest state when the log decides it; fromLog is
// false when the db's own state stands. base is key's newest live
// revision in the db, or the last before its deletion; baseHeld says the
// db holds key, live or deleted, baseLive that it holds it live.
// baseValue reads base's value, only when the answer is base. A live
// state's kv is read only when wantLive.
func (w *WAL) joinedLatest(key string, base *store.KeyValue, baseHeld, baseLive, wantLive bool, baseValue func() (*store.KeyValue, error)) (st joinedState, fromLog bool, err error) {
	x := w.latest(key)
	if x < 0 {
		return st, false, nil
	}
	if !w.deleted(x) && !baseHeld && w.r.entries[w.r.all[x].entry].index <= w.cov.ConsistentIndex {
		// Live after one of the log's entries the db holds, and the db
		// holds nothing of it: deleted after, at a revision it compacted.
		return w.deletedAfter(key, x)
	}
	if w.deleted(x) && baseLive && w.r.entries[w.r.all[x].entry].index <= w.cov.ConsistentIndex &&
		(w.r.all[x].mod == 0 || base.ModRevision > w.r.all[x].mod) {
		// A deletion among the log's entries the db holds, and the db
		// holds the key again, newer: as the db holds it.
		// PastIncarnations lists the deleted one.
		return st, false, nil
	}
	if !w.deleted(x) {
		if baseHeld && w.r.all[x].mod <= w.cov.DBRevision {
			// Last written up to the db: as the db holds it.
			return st, false, nil
		}
		if wantLive {
			st.kv, err = w.kv(x, true)
		}
		return st, true, err
	}
	st.deleted, st.deleteRev = true, w.r.all[x].mod
	if st.deleteRev == 0 {
		st.deleteRev = -1
	}
	st.kv = &store.KeyValue{Key: key}
	switch prev := w.before(key, x); {
	case prev >= 0 && !w.deleted(prev):
		st.kv, err = w.kv(prev, true)
	case prev < 0 && base != nil:
		st.kv, err = baseValue()
	}
	return st, true, err
}

// deletedAfter is the state of key, which write x left live and a later
// entry deleted at a revision not established: x's value is its last
// unless a later put of it may have applied.
func (w *WAL) deletedAfter(key string, x int32) (joinedState, bool, error) {
	st := joinedState{kv: &store.KeyValue{Key: key}, deleted: true, deleteRev: -1}
	ws := w.writesOf(key)
	for _, id := range ws[slices.Index(ws, x)+1:] {
		if o := w.r.entries[w.r.all[id].entry].outcome; !w.deleted(id) && o != OutcomeNotApplied && o != OutcomeSkipped {
			return st, true, nil
		}
	}
	kv, err := w.kv(x, true)
	if err != nil {
		return st, true, err
	}
	st.kv = kv
	return st, true, nil
}

// joinedScanLatest is ScanLatest over the db and the log.
func (w *WAL) joinedScanLatest(ctx context.Context, prefix string, includeDeleted bool, fn func(kv *store.KeyValue, deleted bool, deleteRev int64) error) error {
	err := w.mergeLog(prefix, func(each func(string, func() error) error) error {
		return w.base.ScanLatest(ctx, prefix, true, func(kv *store.KeyValue, deleted bool, deleteRev int64) error {
			return each(kv.Key, func() error {
				var base *store.KeyValue
				if kv.ModRevision != 0 {
					base = kv
				}
				st, fromLog, err := w.joinedLatest(kv.Key, base, true, base != nil && !deleted, true, func() (*store.KeyValue, error) { return base, nil })
				switch {
				case err != nil:
					return err
				case fromLog:
					if st.deleted && !includeDeleted {
						return nil
					}
					return fn(st.kv, st.deleted, st.deleteRev)
				case deleted && !includeDeleted:
					return nil
				}
				return fn(kv, deleted, deleteRev)
			})
		})
	}, func(key string) error {
		st, fromLog, err := w.joinedLatest(key, nil, false, false, true, nil)
		if err != nil || !fromLog || st.deleted && !includeDeleted {
			return err
		}
		return fn(st.kv, st.deleted, st.deleteRev)
	})
	if err != nil {
		return fmt.Errorf("scan latest %s: %w", prefix, err)
	}
	return nil
}

// joinedScanDeleted is ScanDeleted over the db and the log. It walks no
// db: the db's deleted keys were read when the log was opened, and only
// the keys the log wrote can be deleted otherwise.
func (w *WAL) joinedScanDeleted(ctx context.Context, prefix string, fn func(kv *store.KeyValue, deleteRev int64) error) error {
	logKeys := w.keysUnder(prefix)
	i, j := prefixRange(len(w.baseDeleted), func(i int) string { return w.baseDeleted[i].kv.Key }, prefix)
	dbDel := w.baseDeleted[i:j]
	for n := 0; len(logKeys) > 0 || len(dbDel) > 0; n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// The next key of either, in key order.
		var key string
		var tomb *baseTombstone
		if len(dbDel) > 0 && (len(logKeys) == 0 || dbDel[0].kv.Key <= logKeys[0]) {
			key, tomb, dbDel = dbDel[0].kv.Key, &dbDel[0], dbDel[1:]
		} else {
			key = logKeys[0]
		}
		if len(logKeys) > 0 && logKeys[0] == key {
			logKeys = logKeys[1:]
		}
		// The db's state of key: as ScanLatest's walk of it hands it.
		var base *store.KeyValue
		baseLive := false
		if tomb != nil {
			if tomb.kv.ModRevision != 0 {
				base = &tomb.kv
			}
		} else if kv, ok := w.baseState(key); ok {
			base, baseLive = &kv, true
		}
		baseValue := func() (*store.KeyValue, error) {
			v, err := w.base.ValueCopy(key, base.ModRevision)
			kv := *base
			kv.Value = v
			return &kv, err
		}
		st, fromLog, err := w.joinedLatest(key, base, tomb != nil || baseLive, baseLive, false, baseValue)
		switch {
		case err != nil:
			return fmt.Errorf("scan deleted %s: %w", prefix, err)
		case fromLog:
			if !st.deleted {
				continue
			}
		case tomb == nil:
			continue // live in the db
		default:
			st = joinedState{kv: &store.KeyValue{Key: key}, deleted: true, deleteRev: tomb.deleteRev}
			if base != nil {
				if st.kv, err = baseValue(); err != nil {
					return fmt.Errorf("scan deleted %s: %w", prefix, err)
				}
			}
		}
		if err := fn(st.kv, st.deleteRev); err != nil {
			return err
		}
	}
	return nil
}

// Unsettled lists the log's writes of key after its write at revision
// rev, 0 for all, whose outcome or revision the log does not establish.
func (w *WAL) Unsettled(key string, rev int64) []WALEntry {
	var out []WALEntry
	after := rev == 0 || (w.base != nil && rev <= w.cov.DBRevision)
	for _, id := range w.writesOf(key) {
		x := &w.r.all[id]
		e := w.r.entry(x.entry)
		if x.mod != 0 {
			after = after || x.mod >= rev
			continue
		}
		if w.isUnplaced(id) {
			continue // only its revision is not established
		}
		if rev != 0 && w.base != nil && e.Index <= w.cov.ConsistentIndex {
			// The db holds the key's revisions from rev on.
			continue
		}
		if after && (e.Outcome == OutcomeUnknown || e.Outcome == OutcomeApplied) {
			out = append(out, e)
		}
	}
	return out
}

// prefixKnown reports whether the prefix establishes reads at at.
func (w *WAL) prefixKnown(at int64) bool {
	return w.prefixResolved() && at >= w.prefixFloor
}

// Unestablished counts what the log does not establish of its writes of
// the keys under prefix.
type Unestablished struct {
	// Unknown counts the writes whose outcome is not established, Hiding
	// those of them that may hide or undo a deletion; First and
	// FirstHiding are the first ones' entries.
	Unknown, Hiding    int
	First, FirstHiding WALEntry
	// Unplaced counts the writes applied at revisions not established.
	Unplaced      int
	FirstUnplaced uint64
	// MayBeDeleted lists, in key order, the keys the db holds nothing of
	// that the log writes only with outcomes it does not establish: each
	// may have been deleted at a revision the db compacted, or never have
	// existed. A key MayDelete names is not listed again.
	MayBeDeleted []string
	// MayDelete names, sorted, the keys of the hiding writes that are
	// deletions: each may have been deleted there.
	MayDelete []string
}

// Unestablished counts the writes of keys under prefix whose outcome, or
// revision, the log does not establish.
func (w *WAL) Unestablished(prefix string) Unestablished {
	var u Unestablished
	deletedBy := map[int32]int32{} // key → its last applied delete
	open := map[int32]bool{}       // keys with an open write that may have deleted them
	for id := range w.r.all {
		x := &w.r.all[id]
		if x.deleted && w.r.entries[x.entry].outcome == OutcomeApplied {
			deletedBy[x.key] = int32(id)
		}
	}
	for id := range w.r.all {
		x := &w.r.all[id]
		if !strings.HasPrefix(w.r.keyNames[x.key], prefix) {
			continue
		}
		e := &w.r.entries[x.entry]
		if w.base != nil && x.mod == 0 && (e.outcome == OutcomeUnknown || e.outcome == OutcomeApplied && !w.isUnplaced(int32(id))) &&
			(x.deleted || e.index <= w.cov.ConsistentIndex) {
			open[x.key] = true
		}
		switch {
		case e.outcome == OutcomeUnknown:
			if u.Unknown == 0 {
				u.First = w.r.entry(x.entry)
			}
			u.Unknown++
			// A put among the log's entries the db holds hides nothing:
			// the db's state is after it, and says whether the key was
			// brought back.
			inDB := w.base != nil && e.index <= w.cov.ConsistentIndex
			if d, ok := deletedBy[x.key]; x.deleted || ok && int32(id) > d && !inDB {
				if u.Hiding == 0 {
					u.FirstHiding = w.r.entry(x.entry)
				}
				u.Hiding++
				if x.deleted {
					u.MayDelete = append(u.MayDelete, w.r.keyNames[x.key])
				}
			}
		case w.isUnplaced(int32(id)):
			if u.Unplaced == 0 {
				u.FirstUnplaced = e.index
			}
			u.Unplaced++
		}
	}
	for k := range open {
		if key := w.r.keyNames[k]; w.latest(key) < 0 && !w.baseHolds(key) {
			u.MayBeDeleted = append(u.MayBeDeleted, key)
		}
	}
	slices.Sort(u.MayDelete)
	u.MayDelete = slices.Compact(u.MayDelete)
	// A key a hiding delete names is said there once.
	u.MayBeDeleted = slices.DeleteFunc(u.MayBeDeleted, func(k string) bool {
		_, named := slices.BinarySearch(u.MayDelete, k)
		return named
	})
	slices.Sort(u.MayBeDeleted)
	return u
}

// baseHolds reports whether the db holds key, live or deleted.
func (w *WAL) baseHolds(key string) bool {
	if _, ok := w.baseState(key); ok {
		return true
	}
	_, ok := slices.BinarySearchFunc(w.baseDeleted, key, func(t baseTombstone, key string) int { return strings.Compare(t.kv.Key, key) })
	return ok
}

// prefixResolved reports whether the log's entries the db holds were
// worked out back from it.
func (w *WAL) prefixResolved() bool {
	return w.base != nil && w.cov.InDB > 0 && w.cov.PrefixUnresolved == ""
}

// isUnplaced reports whether write id applied at a revision the log does
// not establish (see replay.unplaced).
func (w *WAL) isUnplaced(id int32) bool {
	_, ok := w.r.unplaced[id]
	return ok
}

// openAfter says why key's writes after write from, -1 for all, leave
// its state at revision at not established: one applied at a revision
// that may be at or below at, or one whose outcome is not established.
func (w *WAL) openAfter(key string, from int32, at int64) string {
	for _, id := range w.writesOf(key) {
		if id <= from {
			continue
		}
		x := &w.r.all[id]
		if x.mod > at {
			break
		}
		if span, ok := w.r.unplaced[id]; ok {
			if span[0] > at {
				// Applied after at: so is every later write.
				break
			}
			return fmt.Sprintf("the log applied a write of it whose revision it does not establish, and that may be before %d", at)
		}
		if e := w.r.entry(x.entry); x.mod == 0 && (e.Outcome == OutcomeUnknown || e.Outcome == OutcomeApplied) {
			return fmt.Sprintf("entry %d wrote it with an outcome the log does not establish", e.Index)
		}
	}
	return ""
}

// latest returns key's last applied write whose value and order are
// established, -1 if none.
func (w *WAL) latest(key string) int32 { return w.before(key, math.MaxInt32) }

// before is latest before write id.
func (w *WAL) before(key string, id int32) int32 {
	ws := w.writesOf(key)
	for i := len(ws) - 1; i >= 0; i-- {
		if x := ws[i]; x < id && (w.r.all[x].mod != 0 || w.isUnplaced(x)) {
			return x
		}
	}
	return -1
}

// prefixGet is Get at a revision the db compacted, from the prefix.
func (w *WAL) prefixGet(ctx context.Context, key string, at int64) (*store.KeyValue, error) {
	x := w.at(key, at)
	if why := w.openAfter(key, x, at); why != "" {
		return nil, fmt.Errorf("get %s at revision %d: %s: %w", key, at, why, ErrUndetermined)
	}
	if x >= 0 {
		if w.deleted(x) {
			return nil, fmt.Errorf("get %s at revision %d: %w", key, at, store.ErrNotFound)
		}
		return w.kv(x, true)
	}
	kv, err := w.beforeLog(ctx, key, func(e WALEntry) bool { return e.Revision != 0 && e.Revision <= at })
	if err != nil {
		return nil, fmt.Errorf("get %s at revision %d: %w", key, at, err)
	}
	return kv, nil
}
