package store

import (
	"bytes"
	"context"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/maphash"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// HashKV is etcd's hash of a member's keyspace at one revision, as
// `etcdctl endpoint hashkv` and the Maintenance.HashKV RPC report it.
type HashKV struct {
	// Hash is the crc32 (Castagnoli) etcd computes (see Bolt.HashKV).
	Hash uint32 `json:"hash"`
	// CompactRevision is the compaction revision the hash was computed
	// with. Two hashes are comparable only when both it and Revision are
	// equal: etcd's own corruption check compares them only then.
	CompactRevision int64 `json:"compactRevision"`
	// Revision is the revision hashed.
	Revision int64 `json:"hashRevision"`
}

// Comparable reports whether h and o hash the same revision with the same
// compaction revision, so that equal hashes mean equal keyspaces.
func (h HashKV) Comparable(o HashKV) bool {
	return h.CompactRevision == o.CompactRevision && h.Revision == o.Revision
}

// HashKV computes etcd's hash of the key bucket at revision rev (0: the
// file's current revision), exactly as etcd v3.5 to v3.7 does
// (server/storage/mvcc/hash.go, kvstore.go hashByRev): a crc32 with the
// Castagnoli table, seeded with the bucket's name "key", over the raw
// bucket key and the raw value of every entry of the bucket, in bucket
// (revision) order, with these rules:
//
//   - entries above rev are left out;
//   - an entry at or below the compaction revision C is hashed only if it
//     is in the keep set: the newest revision at or below rev of a key
//     that exists at rev (etcd's treeIndex.Keep(rev)); but when no key
//     exists at rev the keep set is empty, and etcd then hashes every
//     entry at or below C (but the next rule's);
//   - a tombstone at exactly C is never hashed (etcd 3.5.15 and older
//     removed it at compaction, newer ones keep it);
//   - every other entry, above C and at or below rev, is hashed.
//
// rev below C is an error wrapping ErrCompacted, above the current
// revision an error, as etcd answers. C is the finished compaction, or
// the scheduled one when a compaction was interrupted: etcd finishes it
// when it starts, and HashKV then hashes the file as that compaction
// leaves it. A file never compacted reports CompactRevision -1, as etcd
// does.
//
// A live member answers HashKV at exactly a compaction revision it ran
// itself with the hash it computed during that compaction (before it
// removed anything, with the previous compaction revision): that answer's
// CompactRevision tells it apart, and it is not comparable with this one.
//
// Memory: the keep set needs to know, for each entry at or below C,
// whether its key has a newer revision at or below rev. HashKV walks the
// bucket (keyed by revision) several times instead of indexing every key:
// once over the revisions in (C, rev] (a set of the keys written there,
// with their state at rev), once over those at or below C keeping a
// 64-bit hash of the key per entry (and per put of a key not written
// after C), to find the keys held more than once there (never after a
// finished compaction: etcd keeps one revision per key), once more over
// them, by name, only when there are such keys (or hash collisions), and
// once to hash. It holds at most 16 bytes per entry at or below C plus
// the keys written in (C, rev], never the whole keyspace; a file never
// compacted is hashed in one pass holding nothing.
func (b *Bolt) HashKV(ctx context.Context, rev int64) (HashKV, error) {
	h, _, err := b.hashKV(ctx, rev, nil)
	return h, err
}

// HashKVPrefix is HashKV restricted to the bucket entries whose
// KeyValue.key starts with prefix: the same rules (and the same keep set,
// judged on the whole keyspace), over fewer entries. It is not a hash
// etcd computes (only HashKV's whole-range hash is): it narrows down
// where two members whose whole hashes differ disagree. The HashKV
// returned is etcd's whole-range hash; the second result the prefix's.
func (b *Bolt) HashKVPrefix(ctx context.Context, rev int64, prefix string) (HashKV, uint32, error) {
	p := []byte(prefix)
	h, groups, err := b.hashKV(ctx, rev, func(key []byte) string {
		if bytes.HasPrefix(key, p) {
			return prefix
		}
		return ""
	})
	if err != nil {
		return h, 0, err
	}
	g, ok := groups[prefix]
	if !ok {
		g = hashKVSeed()
	}
	return h, g, nil
}

// HashKVGroups is HashKV with, in the same pass, one hash per group of
// keys: group names the group of an etcd key ("": in none; it must not
// keep key, which aliases the file), and each group's hash is HashKV's
// formula restricted to the bucket entries of its keys, as HashKVPrefix's.
// Only the whole-range hash is etcd's. A group with no entry hashed is
// absent from the map (its hash would be the seed's, that of "key" alone).
func (b *Bolt) HashKVGroups(ctx context.Context, rev int64, group func(key []byte) string) (HashKV, map[string]uint32, error) {
	return b.hashKV(ctx, rev, group)
}

// HashKV asks the member of e's one endpoint for its hash at revision rev
// (0: its current revision) with the Maintenance.HashKV RPC: what
// `etcdctl endpoint hashkv` prints. A store of several endpoints is
// refused: a hash is one member's. The member reads its whole key bucket
// to answer, so the call is bounded by the command timeout or
// hashKVTimeout, whichever is longer.
func (e *Etcd) HashKV(ctx context.Context, rev int64) (HashKV, error) {
	if err := e.kineRefuses("hashkv"); err != nil {
		return HashKV{}, err
	}
	if len(e.cfg.Endpoints) != 1 {
		return HashKV{}, fmt.Errorf("hashkv: %d endpoints: a hash is one member's, open one endpoint", len(e.cfg.Endpoints))
	}
	ep := e.cfg.Endpoints[0]
	ctx, cancel := context.WithTimeout(ctx, max(e.cfg.CommandTimeout, hashKVTimeout))
	defer cancel()
	resp, err := e.cli.HashKV(ctx, ep, rev)
	if err != nil {
		return HashKV{}, rpcError(fmt.Sprintf("hashkv of %s at revision %d", ep, rev), err)
	}
	h := HashKV{Hash: resp.Hash, CompactRevision: resp.CompactRevision, Revision: resp.HashRevision}
	if h.Revision == 0 && rev > 0 {
		// etcd before v3.6 does not say which revision it hashed: the one
		// asked for (asked for the current one, 0, it stays unknown, and
		// the hash comparable with none).
		h.Revision = rev
	}
	return h, nil
}

// hashKVTimeout is the least time a member is given to hash its keyspace.
const hashKVTimeout = time.Minute

// hashKVSeed is the crc32 of an empty hash: the bucket name alone.
func hashKVSeed() uint32 {
	h := newHashKVHasher()
	return h.Sum32()
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// newHashKVHasher is etcd's newKVHasher: crc32c seeded with "key".
func newHashKVHasher() hash.Hash32 {
	h := crc32.New(castagnoli)
	h.Write(schema.Key.Name())
	return h
}

// keepState is what HashKV learns of the keep set before hashing.
type keepState struct {
	// written: the keys with a revision in (C, rev], and whether their
	// newest one there is a put (the key exists at rev).
	written map[string]bool
	// dupHashes: hashes of keys held more than once at or below C
	// (collisions included); newest: for those keys, their newest entry
	// at or below C.
	seed      maphash.Seed
	dupHashes map[uint64]struct{}
	newest    map[string]bucketKey
	// empty: no key exists at rev (etcd's keep set is empty).
	empty bool
	// compact is the compaction revision C.
	compact int64
}

// newestAtOrBelowC reports whether the put bk of key is key's newest entry
// at or below C.
func (k *keepState) newestAtOrBelowC(key []byte, bk bucketKey) bool {
	if _, dup := k.dupHashes[maphash.Bytes(k.seed, key)]; !dup {
		return true
	}
	n, ok := k.newest[string(key)]
	return ok && n == bk
}

func (b *Bolt) hashKV(ctx context.Context, rev int64, group func(key []byte) string) (HashKV, map[string]uint32, error) {
	at, err := b.readRevision(rev)
	if err != nil {
		return HashKV{}, nil, fmt.Errorf("hashkv: %w", err)
	}
	var h *kvHasher
	err = b.view(func(tx *bolt.Tx, g *viewGuard) error {
		var err error
		if h, err = newKVHasher(ctx, tx, g, at, group); err != nil {
			return err
		}
		return walkRevisions(ctx, keyBucket(tx).Cursor(), nil, at, func(bk bucketKey, k, v []byte) error {
			var key []byte
			if len(v) > 0 {
				var err error
				if key, err = entryKey(bk, v); err != nil {
					return err
				}
			}
			h.add(bk, k, v, key)
			return nil
		})
	})
	if err != nil {
		return HashKV{}, nil, fmt.Errorf("hashkv at revision %d: %w", at, err)
	}
	out, sums := h.sums()
	return out, sums, nil
}

// kvHasher is HashKV's state during its hashing walk: the keep set
// learned before it, the whole hash and the groups' hashes.
type kvHasher struct {
	out         HashKV
	ks          *keepState
	interrupted bool
	whole       hash.Hash32
	group       func(key []byte) string
	groups      map[string]hash.Hash32
	g           *viewGuard
}

// newKVHasher prepares the hashing of the key bucket read by tx at
// revision at: it reads the compaction revision and, when there is one,
// learns the keep set (keepSet's passes). group is as HashKVGroups's
// (nil: the whole hash alone); g marks the calls to it.
func newKVHasher(ctx context.Context, tx *bolt.Tx, g *viewGuard, at int64, group func(key []byte) string) (*kvHasher, error) {
	h := &kvHasher{out: HashKV{Revision: at}, whole: newHashKVHasher(), group: group, g: g}
	h.out.CompactRevision, h.interrupted = hashCompactRevision(tx)
	if group != nil {
		h.groups = map[string]hash.Hash32{}
	}
	if c := h.out.CompactRevision; c > 0 {
		var err error
		if h.ks, err = keepSet(ctx, keyBucket(tx), c, at); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// add hashes the bucket entry bk (raw key k, value v) as etcd does, in
// revision order; key is its etcd key (nil for an entry without a value).
func (h *kvHasher) add(bk bucketKey, k, v, key []byte) {
	if h.ks != nil && bk.main <= h.out.CompactRevision && !h.ks.hashed(bk, key, h.interrupted) {
		return
	}
	h.whole.Write(k)
	h.whole.Write(v)
	if h.group == nil || key == nil {
		return
	}
	h.g.inCallback = true
	name := h.group(key)
	h.g.inCallback = false
	if name == "" {
		return
	}
	gh := h.groups[name]
	if gh == nil {
		gh = newHashKVHasher()
		h.groups[name] = gh
	}
	gh.Write(k)
	gh.Write(v)
}

// sums returns the hash of every entry added, and each group's (nil
// without groups).
func (h *kvHasher) sums() (HashKV, map[string]uint32) {
	out := h.out
	out.Hash = h.whole.Sum32()
	if h.group == nil {
		return out, nil
	}
	sums := make(map[string]uint32, len(h.groups))
	for name, gh := range h.groups {
		sums[name] = gh.Sum32()
	}
	return out, sums
}

// hashCompactRevision is the compaction revision etcd hashes with once it
// has started on the file (mvcc.store.restore): -1 when the file records
// none, else the finished compaction, or the scheduled one when it is
// newer (interrupted is then true: etcd finishes that compaction first).
func hashCompactRevision(tx *bolt.Tx) (compact int64, interrupted bool) {
	compact = -1
	mb := tx.Bucket(schema.Meta.Name())
	if mb == nil {
		return compact, false
	}
	if v := mb.Get(schema.FinishedCompactKeyName); len(v) >= 8 {
		compact = int64(metaUint(v))
	}
	if v := mb.Get(schema.ScheduledCompactKeyName); len(v) >= 8 {
		if s := int64(metaUint(v)); s > compact {
			return s, true
		}
	}
	return compact, false
}

// hashed reports whether etcd hashes the entry bk (of etcd key key; nil
// for an entry without a value) at or below the compaction revision C.
// interrupted: C is a scheduled compaction etcd has not finished, and
// finishes before it hashes: only what it keeps counts.
func (k *keepState) hashed(bk bucketKey, key []byte, interrupted bool) bool {
	if bk.tombstone && bk.main == k.compact {
		return false
	}
	put := key != nil && !bk.tombstone
	if !k.empty {
		// In etcd's keep set: the key's newest revision at or below rev,
		// and the key exists at rev.
		if !put {
			return false
		}
		if _, later := k.written[string(key)]; later {
			return false
		}
		return k.newestAtOrBelowC(key, bk)
	}
	if !interrupted {
		return true
	}
	// What the compaction at C keeps: each existing key's newest revision
	// (a tombstone at C too, never hashed).
	return put && k.newestAtOrBelowC(key, bk)
}

// keepSet learns, in read-only passes over the key bucket kb, what
// HashKV needs of etcd's keep set at revision at with compaction revision
// compact (> 0).
func keepSet(ctx context.Context, kb *bolt.Bucket, compact, at int64) (*keepState, error) {
	ks := &keepState{written: map[string]bool{}, seed: maphash.MakeSeed(), compact: compact}
	// The revisions above C: which keys they write, and whether each
	// exists at rev.
	err := walkRevisions(ctx, kb.Cursor(), revisionStart(compact+1), at, func(bk bucketKey, _, v []byte) error {
		if len(v) == 0 {
			return nil
		}
		key, err := entryKey(bk, v)
		if err != nil {
			return err
		}
		ks.written[string(key)] = !bk.tombstone
		return nil
	})
	if err != nil {
		return nil, err
	}
	exists := false
	for _, live := range ks.written {
		if live {
			exists = true
			break
		}
	}
	// The entries at or below C: a hash of each key, to find the keys held
	// more than once; the puts of keys not written after C, candidates
	// for a key existing at rev.
	var all, candidates []uint64
	if err := forEachRevision(ctx, kb, keyMatch{prefix: true}, compact, func(bk bucketKey, key, _ []byte) error {
		h := maphash.Bytes(ks.seed, key)
		all = append(all, h)
		if _, later := ks.written[string(key)]; !later && !bk.tombstone {
			candidates = append(candidates, h)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			if ks.dupHashes == nil {
				ks.dupHashes = map[uint64]struct{}{}
			}
			ks.dupHashes[all[i]] = struct{}{}
		}
	}
	all = nil
	for _, h := range candidates {
		if _, dup := ks.dupHashes[h]; !dup {
			exists = true // the key's one entry at or below C is a put
			break
		}
	}
	candidates = nil
	if len(ks.dupHashes) > 0 {
		// Keys held more than once (or sharing a hash): their newest
		// entry at or below C, by name.
		ks.newest = map[string]bucketKey{}
		if err := forEachRevision(ctx, kb, keyMatch{prefix: true}, compact, func(bk bucketKey, key, _ []byte) error {
			if _, dup := ks.dupHashes[maphash.Bytes(ks.seed, key)]; dup {
				ks.newest[string(key)] = bk
			}
			return nil
		}); err != nil {
			return nil, err
		}
		for key, bk := range ks.newest {
			if _, later := ks.written[key]; !later && !bk.tombstone {
				exists = true
				break
			}
		}
	}
	ks.empty = !exists
	return ks, nil
}
