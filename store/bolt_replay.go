package store

// What the write-ahead log's replay (package store/wal) reads of a db
// file, beside what every reader does: the db's members and leases, every
// key's newest state in one walk, values by revision, a range of
// revisions.

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// Path returns the file's path.
func (b *Bolt) Path() string { return b.path }

// CompactRevision returns the db's compaction revision: every revision
// above it is held; at or below it, only each live key's newest.
func (b *Bolt) CompactRevision() int64 { return b.compactRevision() }

// ValueCopy returns a copy of key's value put at main revision mod.
func (b *Bolt) ValueCopy(key string, mod int64) ([]byte, error) { return b.valueCopy(key, mod) }

// MemberIDs lists the member ids the file's "members" and
// "members_removed" buckets hold.
func (b *Bolt) MemberIDs() ([]uint64, error) {
	var ids []uint64
	err := b.view(func(tx *bolt.Tx, _ *viewGuard) error {
		for _, name := range []string{"members", "members_removed"} {
			mb := tx.Bucket([]byte(name))
			if mb == nil {
				continue
			}
			if err := mb.ForEach(func(k, _ []byte) error {
				if id, err := strconv.ParseUint(string(k), 16, 64); err == nil {
					ids = append(ids, id)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the db's members: %w", err)
	}
	return ids, nil
}

// LeaseIDs lists the leases the file's "lease" bucket holds.
func (b *Bolt) LeaseIDs() ([]int64, error) {
	var ids []int64
	err := b.view(func(tx *bolt.Tx, _ *viewGuard) error {
		lb := tx.Bucket(schema.Lease.Name())
		if lb == nil {
			return nil
		}
		return lb.ForEach(func(k, _ []byte) error {
			if len(k) == 8 {
				ids = append(ids, int64(binary.BigEndian.Uint64(k)))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read the db's leases: %w", err)
	}
	return ids, nil
}

// WalkLatest hands fn every key's newest state at the db's revision, in
// key order: a live key's (deleteRev 0), without its value, or a deleted
// one's last state and the revision that deleted it. count, when not nil,
// is told the number of keys first. It walks on one core: the log is read
// meanwhile on the others.
func (b *Bolt) WalkLatest(ctx context.Context, count func(n int), fn func(kv *KeyValue, deleteRev int64) error) error {
	q := latestQuery{match: keyMatch{prefix: true}, atRev: b.meta.Revision, includeDeleted: true, oneWorker: true, count: count}
	return b.scanLatest(ctx, q, fn)
}

// ValuesOf hands fn each of states (keys without values, as WalkLatest
// gave them), with its value read at its mod revision when need says so
// (nil: every one): a seek per key, not a walk of the db. kv is valid
// only during the call.
func (b *Bolt) ValuesOf(ctx context.Context, states []KeyValue, need func(key string) bool, fn func(kv *KeyValue) error) error {
	return b.view(func(tx *bolt.Tx, g *viewGuard) error {
		c := keyBucket(tx).Cursor()
		// One copy, reused: fn does not keep it.
		var kv KeyValue
		for i := range states {
			if i%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			kv = states[i]
			if need == nil || need(kv.Key) {
				v, err := valueAt(c, kv.Key, kv.ModRevision)
				if err != nil {
					return err
				}
				kv.Value = v
			}
			if err := g.call(func() error { return fn(&kv) }); err != nil {
				return err
			}
		}
		return nil
	})
}

// Revisions seeks the key bucket to lo (it is keyed by revision) and reads
// forward to hi: only the pages of that range are read. fn gets each
// revision's key, whether it is a tombstone, and its value (aliasing the
// mapped file, valid during the call).
func (b *Bolt) Revisions(ctx context.Context, lo, hi int64, fn func(main int64, key []byte, tombstone bool, value []byte) error) error {
	return b.view(func(tx *bolt.Tx, g *viewGuard) error {
		return walkRevisions(ctx, keyBucket(tx).Cursor(), revisionStart(max(lo, 0)), hi, func(bk bucketKey, _, v []byte) error {
			if len(v) == 0 {
				return nil // a revision bumped by etcdutl snapshot restore
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
			return g.call(func() error { return fn(bk.main, raw.key, bk.tombstone, val) })
		})
	})
}
