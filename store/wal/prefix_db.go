package wal

import (
	"context"

	"github.com/etcdpvc/etcdpvc/store"
)

// prefixDB is what working the prefix out reads of the member's db.
type prefixDB interface {
	// revisions calls fn for every item of the key bucket whose main
	// revision is in [lo, hi], in revision order, valid during the call.
	revisions(ctx context.Context, lo, hi int64, fn func(main int64, key []byte, tombstone bool, value []byte) error) error
	// live calls fn for every live key, in key order, with its number in
	// names, -1 for none, and for a key names holds its value's hash. kv
	// is valid during the call.
	live(ctx context.Context, names *pxKeys, fn func(kv *store.KeyValue, id int32, hash uint64) error) error
	// compactRevision is the db's compaction revision.
	compactRevision() int64
}

// boltPrefixDB reads a db file for the prefix solver. states are the
// db's live keys as the replay read them: live reads only the values it
// needs, each at its key's mod revision.
type boltPrefixDB struct {
	b      *store.Bolt
	states []store.KeyValue
	// ids are the states' numbers in the log's keys, by stateIDs.
	ids []int32
	// hashes are the hashes of the states' values, read ahead.
	hashes *liveHashes
}

func (d boltPrefixDB) compactRevision() int64 { return d.b.CompactRevision() }

// stateIDs returns the number in names of each of states' keys, or -1.
func stateIDs(states []store.KeyValue, names *pxKeys) []int32 {
	ids := make([]int32, len(states))
	for i := range states {
		id, ok := names.ids[states[i].Key]
		if !ok {
			id = -1
		}
		ids[i] = id
	}
	return ids
}

func (d boltPrefixDB) live(ctx context.Context, _ *pxKeys, fn func(kv *store.KeyValue, id int32, hash uint64) error) error {
	if err := d.hashes.wait(ctx); err != nil {
		return err
	}
	for i := range d.states {
		if i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// The states are not changed: fn gets each in place.
		if err := fn(&d.states[i], d.ids[i], d.hashes.of[i]); err != nil {
			return err
		}
	}
	return nil
}

// liveHashes holds the hashes of the values of the db's live keys the log
// names, read in a goroutine of their own.
type liveHashes struct {
	done chan struct{}
	err  error
	of   []uint64 // by index into the states, 0 for a key the log never names
}

// readHashes starts reading and hashing, in a goroutine of its own, the
// value of each of states the log names, while the solver reads the db's
// last revisions. stop cancels the read and waits for it; it must be
// called before b is closed.
func readHashes(ctx context.Context, b *store.Bolt, states []store.KeyValue, ids []int32) (h *liveHashes, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	h = &liveHashes{done: make(chan struct{}), of: make([]uint64, len(states))}
	go func() {
		defer close(h.done)
		i := 0
		h.err = b.ValuesOf(ctx, states, func(string) bool { return ids[i] >= 0 }, func(kv *store.KeyValue) error {
			if ids[i] >= 0 {
				h.of[i] = valueHash(kv.Value)
			}
			i++
			return nil
		})
	}()
	return h, func() { cancel(); <-h.done }
}

// wait waits for the hashes.
func (h *liveHashes) wait(ctx context.Context) error {
	select {
	case <-h.done:
		return h.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// revisions reads the db's revisions lo to hi.
func (d boltPrefixDB) revisions(ctx context.Context, lo, hi int64, fn func(main int64, key []byte, tombstone bool, value []byte) error) error {
	return d.b.Revisions(ctx, lo, hi, fn)
}
