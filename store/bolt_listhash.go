package store

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// ListHashKV is List and HashKVGroups at one revision in one read of the
// file: the pass over the key bucket that indexes the keys under prefix
// hashes every entry as it goes, where the two calls would walk the
// bucket once each (List once per core). hashed gets what HashKVGroups
// returns (with its errors), once, before fn gets the first key, or
// before ListHashKV returns when there is none; what fn gets, and the
// error and revision returned, are List's, but kv and kv.Value are valid
// only during the call to fn (they alias the file), which must neither
// keep nor modify them. The pass runs on the calling goroutine alone:
// run one call per file at once to use several cores.
//
// Memory is List's index plus what HashKV holds of the keep set (nothing
// for a file never compacted), held at once.
func (b *Bolt) ListHashKV(ctx context.Context, prefix string, opts ListOptions, group func(key []byte) string, hashed func(HashKV, map[string]uint32, error), fn func(*KeyValue) error) (int64, error) {
	q, at, err := b.listQuery(prefix, opts)
	if err != nil {
		hashed(b.hashKV(ctx, opts.Revision, group))
		return 0, err
	}
	r := &hashRequest{group: group}
	q.hash = r
	told := false
	tell := func(scanErr error) {
		if told {
			return
		}
		told = true
		switch {
		case !r.done:
			hashed(HashKV{}, nil, fmt.Errorf("hashkv at revision %d: %w", at, scanErr))
		case r.err != nil:
			hashed(HashKV{}, nil, fmt.Errorf("hashkv at revision %d: %w", at, r.err))
		default:
			hashed(r.out, r.sums, nil)
		}
	}
	err = b.latestIndexed(ctx, q, func(g *viewGuard, order []*latestEntry) error {
		tell(nil)
		var kv KeyValue
		for n, e := range order {
			if n%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			switch {
			case e.deleted != 0:
				continue
			case e.value == nil:
				kv = KeyValue{Key: e.key}
			default:
				if err := e.borrow(&kv, true); err != nil {
					return err
				}
			}
			if err := g.call(func() error { return fn(&kv) }); err != nil {
				return err
			}
		}
		return nil
	})
	tell(err)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	return at, nil
}

// hashRequest is the hash ListHashKV asks scanLatest's pass for, and its
// outcome: done once the pass has ended well (out and sums are then the
// hashes), or once the keep set could not be learned (err; the pass then
// indexes the keys alone).
type hashRequest struct {
	group func(key []byte) string
	out   HashKV
	sums  map[string]uint32
	err   error
	done  bool
}

// walk is forEachRevisionCursor over the revisions up to at (> 0) that
// also hashes every entry, matching or not, as HashKV does.
func (r *hashRequest) walk(ctx context.Context, tx *bolt.Tx, g *viewGuard, c *bolt.Cursor, m keyMatch, at int64, fn func(bk bucketKey, key, v []byte) error) error {
	h, err := newKVHasher(ctx, tx, g, at, r.group)
	if err != nil {
		r.err, r.done = err, true
	}
	err = walkRevisions(ctx, c, nil, at, func(bk bucketKey, k, v []byte) error {
		if len(v) == 0 {
			// Not a key (forEachRevisionCursor), but hashed.
			if h != nil {
				h.add(bk, k, v, nil)
			}
			return nil
		}
		key, err := entryKey(bk, v)
		if err != nil {
			return err
		}
		if h != nil {
			h.add(bk, k, v, key)
		}
		if !m.match(key) {
			return nil
		}
		return fn(bk, key, v)
	})
	if err == nil && h != nil {
		r.out, r.sums = h.sums()
		r.done = true
	}
	return err
}
