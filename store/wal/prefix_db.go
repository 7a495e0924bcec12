package wal

import (
	"context"

	"github.com/etcdpvc/etcdpvc/store"
)

// prefixDB is what working the prefix out reads of the member's db (a
// *Bolt through boltPrefixDB; a model of etcd in the tests).
type prefixDB interface {
	// revisions calls fn for every item of the key bucket whose main
	// revision is in [lo, hi], in revision order: the etcd key, whether
	// it is a tombstone, and the value put (nil for a tombstone), valid
	// only during the call.
	revisions(ctx context.Context, lo, hi int64, fn func(main int64, key []byte, tombstone bool, value []byte) error) error
	// live calls fn for every live key, in key order, with its number
	// in names (-1: names does not hold it) and, for a key names holds
	// (every key, names nil), its value's hash (valueHash; else 0).
	// kv.Value may be nil; kv is valid only during the call.
	live(ctx context.Context, names *pxKeys, fn func(kv *store.KeyValue, id int32, hash uint64) error) error
	// leaseIDs lists the leases the db holds.
	leaseIDs() ([]int64, error)
	// compactRevision is the db's compaction revision: every revision
	// above it is held; at or below it, only each live key's newest.
	compactRevision() int64
}

// boltPrefixDB reads a db file for the prefix solver. states, when not
// nil, are the db's live keys (without values) as the replay read them
// (startFromBase): live then reads only the values it needs, each at its
// key's mod revision, rather than walk every revision of the db again.
type boltPrefixDB struct {
	b      *store.Bolt
	states []store.KeyValue
	// ids, when not nil, are the states' numbers in the log's keys (-1:
	// the log does not name it), looked up once (stateIDs).
	ids []int32
	// hashes, when not nil, are the hashes of states' values the log
	// names, read ahead (readHashes).
	hashes *liveHashes
}

func (d boltPrefixDB) leaseIDs() ([]int64, error) { return d.b.LeaseIDs() }
func (d boltPrefixDB) compactRevision() int64     { return d.b.CompactRevision() }

// stateIDs returns the number in names of each of states' keys (-1: names
// does not hold it).
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

func (d boltPrefixDB) live(ctx context.Context, names *pxKeys, fn func(kv *store.KeyValue, id int32, hash uint64) error) error {
	idOf := func(key string) int32 {
		if names == nil {
			return -1
		}
		if id, ok := names.ids[key]; ok {
			return id
		}
		return -1
	}
	withHash := func(kv *store.KeyValue) error {
		id := idOf(kv.Key)
		var h uint64
		if names == nil || id >= 0 {
			h = valueHash(kv.Value)
		}
		return fn(kv, id, h)
	}
	if d.states == nil {
		_, err := d.b.List(ctx, "", store.ListOptions{}, withHash)
		return err
	}
	ids := d.ids
	if ids == nil && names != nil {
		ids = stateIDs(d.states, names)
	}
	if d.hashes == nil {
		var stop func()
		d.hashes, stop = readHashes(ctx, d.b, d.states, ids)
		defer stop()
	}
	if err := d.hashes.wait(ctx); err != nil {
		return err
	}
	for i := range d.states {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// The states are not changed: fn gets each in place.
		kv := &d.states[i]
		id := int32(-1)
		if ids != nil {
			id = ids[i]
		}
		switch {
		case names != nil && id < 0:
			if err := fn(kv, id, 0); err != nil {
				return err
			}
		case d.hashes.read[i]:
			if err := fn(kv, id, d.hashes.of[i]); err != nil {
				return err
			}
		default:
			// Not read ahead: read now.
			if err := d.b.ValuesOf(ctx, d.states[i:i+1], nil, withHash); err != nil {
				return err
			}
		}
	}
	return nil
}

// liveHashes holds the hashes of the values of some of the db's live keys
// (boltPrefixDB.states), read in a goroutine of their own (readHashes).
type liveHashes struct {
	done chan struct{}
	err  error
	of   []uint64 // by index into the states
	read []bool   // whether of holds that state's hash
}

// readHashes starts reading, in a goroutine of its own, the value of each
// of states the log names (ids[i] >= 0), and hashing it: the solver needs
// them only once it reads the db's live keys (settler.load), and reads the
// db's last revisions meanwhile on another core. The returned stop cancels the
// read and waits for it; it must be called before b is closed.
func readHashes(ctx context.Context, b *store.Bolt, states []store.KeyValue, ids []int32) (h *liveHashes, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	h = &liveHashes{done: make(chan struct{}), of: make([]uint64, len(states)), read: make([]bool, len(states))}
	go func() {
		defer close(h.done)
		i := 0
		h.err = b.ValuesOf(ctx, states, func(string) bool { return ids[i] >= 0 }, func(kv *store.KeyValue) error {
			if ids[i] >= 0 {
				h.of[i], h.read[i] = valueHash(kv.Value), true
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

// revisions reads the db's revisions lo to hi (store.Bolt.Revisions).
func (d boltPrefixDB) revisions(ctx context.Context, lo, hi int64, fn func(main int64, key []byte, tombstone bool, value []byte) error) error {
	return d.b.Revisions(ctx, lo, hi, fn)
}
