package store

import (
	"context"
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// BorrowedRevision is one revision of a key as ScanRevisionsBorrowed
// reads it: Key and Value alias the mapped file, not copied.
type BorrowedRevision struct {
	Key []byte
	// Value is nil for a deletion, and for a put of an empty value.
	Value []byte
	// ModRevision is the put's, or the deletion's revision; Lease is the
	// put's (0 for a deletion).
	ModRevision, Lease int64
	Deleted            bool
}

// ScanRevisionsBorrowed is ScanRevisions without a copy of each key and
// value: fn gets every revision under prefix in revision order, its
// slices aliasing the mapped file. They stay valid until the read ends:
// when the walk ends without an error, then (nil: none) runs inside the
// same read transaction, so that it may read the values fn kept. A
// goroutine then starts reads them through Guard.
func (b *Bolt) ScanRevisionsBorrowed(ctx context.Context, prefix string, fn func(rev *BorrowedRevision) error, then func() error) error {
	m, err := prefixMatch(prefix)
	if err != nil {
		return fmt.Errorf("scan revisions: %w", err)
	}
	err = b.view(func(tx *bolt.Tx, g *viewGuard) error {
		var rev BorrowedRevision
		err := forEachRevision(ctx, keyBucket(tx), m, 0, func(bk bucketKey, _, v []byte) error {
			raw, err := decodeKV(v)
			if err != nil {
				return fmt.Errorf("%v: %w", bk, err)
			}
			rev = BorrowedRevision{Key: raw.key, Value: raw.value, ModRevision: raw.mod, Lease: raw.lease}
			if bk.tombstone {
				rev = BorrowedRevision{Key: raw.key, ModRevision: bk.main, Deleted: true}
			} else if len(rev.Value) == 0 {
				rev.Value = nil
			}
			return g.call(func() error { return fn(&rev) })
		})
		if err != nil || then == nil {
			return err
		}
		return g.call(then)
	})
	if err != nil {
		return fmt.Errorf("scan revisions %s: %w", prefix, err)
	}
	return nil
}

// Guard runs fn, a reader of values ScanRevisionsBorrowed lent, on the
// calling goroutine: a fault reading the mapped file (a page past the end
// of a truncated file) is an error wrapping ErrCorrupt, as it is in the
// walk. Any other panic propagates.
func (b *Bolt) Guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			err = fmt.Errorf("%s: %w: %v", b.path, ErrCorrupt, r)
		}
	}()
	return fn()
}
