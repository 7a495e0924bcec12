package store

import (
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// prefixDB is what working the prefix out reads of the member's db (a
// *Bolt through boltPrefixDB; a model of etcd in the tests).
type prefixDB interface {
	// revisions calls fn for every item of the key bucket whose main
	// revision is in [lo, hi], in revision order: the etcd key, whether
	// it is a tombstone, and the value put (nil for a tombstone), valid
	// only during the call.
	revisions(ctx context.Context, lo, hi int64, fn func(main int64, key []byte, tombstone bool, value []byte) error) error
	// live calls fn for every live key, with its value where need is nil
	// or says so (else Value is nil); the value is valid only during the
	// call.
	live(ctx context.Context, need func(key string) bool, fn func(kv *KeyValue) error) error
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
	b      *Bolt
	states []KeyValue
}

func (d boltPrefixDB) leaseIDs() ([]int64, error) { return d.b.leaseIDs() }
func (d boltPrefixDB) compactRevision() int64     { return d.b.compactRevision() }

func (d boltPrefixDB) live(ctx context.Context, need func(key string) bool, fn func(kv *KeyValue) error) error {
	if d.states == nil {
		_, err := d.b.List(ctx, "", ListOptions{}, fn)
		return err
	}
	return d.b.view(func(tx *bolt.Tx, g *viewGuard) error {
		c := keyBucket(tx).Cursor()
		for i := range d.states {
			if i%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			kv := d.states[i]
			if need == nil || need(kv.Key) {
				v, err := valueAt(c, kv.Key, kv.ModRevision)
				if err != nil {
					return err
				}
				kv.Value = v
			}
			g.inCallback = true
			err := fn(&kv)
			g.inCallback = false
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// valueAt reads key's value put at main revision mod through c, a cursor
// of the key bucket (keyed by revision: a seek, then the few items of that
// revision). The value aliases the mapped file.
func valueAt(c *bolt.Cursor, key string, mod int64) ([]byte, error) {
	var start [revBytesLen]byte
	binary.BigEndian.PutUint64(start[:], uint64(mod))
	start[8] = '_'
	for k, v := c.Seek(start[:]); k != nil; k, v = c.Next() {
		bk, err := parseBucketKey(k)
		if err != nil {
			return nil, err
		}
		if bk.main != mod {
			break
		}
		if bk.tombstone || len(v) == 0 {
			continue
		}
		raw, err := decodeKV(v)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", bk, err)
		}
		if string(raw.key) == key {
			if raw.value == nil {
				return []byte{}, nil
			}
			return raw.value, nil
		}
	}
	return nil, fmt.Errorf("%s: %w: no put of it at its mod revision %d", key, ErrCorrupt, mod)
}

// revisions seeks the key bucket to lo (it is keyed by revision) and reads
// forward to hi: only the pages of that range are read.
func (d boltPrefixDB) revisions(ctx context.Context, lo, hi int64, fn func(main int64, key []byte, tombstone bool, value []byte) error) error {
	return d.b.view(func(tx *bolt.Tx, g *viewGuard) error {
		c := keyBucket(tx).Cursor()
		var start [revBytesLen]byte
		binary.BigEndian.PutUint64(start[:], uint64(max(lo, 0)))
		start[8] = '_'
		n := 0
		for k, v := c.Seek(start[:]); k != nil; k, v = c.Next() {
			if n++; n%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			bk, err := parseBucketKey(k)
			if err != nil {
				return err
			}
			if bk.main > hi {
				return nil
			}
			if len(v) == 0 {
				continue // a revision bumped by etcdutl snapshot restore
			}
			raw, err := decodeKV(v)
			if err != nil {
				return fmt.Errorf("%v: %w", bk, err)
			}
			val := raw.value
			if bk.tombstone {
				val = nil
			} else if val == nil {
				val = []byte{}
			}
			g.inCallback = true
			err = fn(bk.main, raw.key, bk.tombstone, val)
			g.inCallback = false
			if err != nil {
				return err
			}
		}
		return nil
	})
}
