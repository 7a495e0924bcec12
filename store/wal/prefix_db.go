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
	// live calls fn for every live key, with its value where need is nil
	// or says so (else Value is nil); the value is valid only during the
	// call.
	live(ctx context.Context, need func(key string) bool, fn func(kv *store.KeyValue) error) error
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
}

func (d boltPrefixDB) leaseIDs() ([]int64, error) { return d.b.LeaseIDs() }
func (d boltPrefixDB) compactRevision() int64     { return d.b.CompactRevision() }

func (d boltPrefixDB) live(ctx context.Context, need func(key string) bool, fn func(kv *store.KeyValue) error) error {
	if d.states == nil {
		_, err := d.b.List(ctx, "", store.ListOptions{}, fn)
		return err
	}
	return d.b.ValuesOf(ctx, d.states, need, fn)
}

// revisions reads the db's revisions lo to hi (store.Bolt.Revisions).
func (d boltPrefixDB) revisions(ctx context.Context, lo, hi int64, fn func(main int64, key []byte, tombstone bool, value []byte) error) error {
	return d.b.Revisions(ctx, lo, hi, fn)
}
