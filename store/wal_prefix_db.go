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
	// live calls fn for every live key, with its value.
	live(ctx context.Context, fn func(kv *KeyValue) error) error
	// leaseIDs lists the leases the db holds.
	leaseIDs() ([]int64, error)
	// compactRevision is the db's compaction revision: every revision
	// above it is held; at or below it, only each live key's newest.
	compactRevision() int64
}

// boltPrefixDB reads a db file for the prefix solver.
type boltPrefixDB struct{ b *Bolt }

func (d boltPrefixDB) leaseIDs() ([]int64, error) { return d.b.leaseIDs() }
func (d boltPrefixDB) compactRevision() int64     { return d.b.compactRevision() }

func (d boltPrefixDB) live(ctx context.Context, fn func(kv *KeyValue) error) error {
	_, err := d.b.List(ctx, "", ListOptions{}, fn)
	return err
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
