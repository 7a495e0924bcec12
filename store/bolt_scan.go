package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
)

// Key bucket key layout (etcd server/storage/mvcc/revision.go).
const (
	revBytesLen       = 8 + 1 + 8
	markedRevBytesLen = revBytesLen + 1
	tombstoneMark     = 't'
)

// mvccpb.KeyValue field numbers (etcd api/mvccpb/kv.proto).
const (
	kvFieldKey            protowire.Number = 1
	kvFieldCreateRevision protowire.Number = 2
	kvFieldModRevision    protowire.Number = 3
	kvFieldVersion        protowire.Number = 4
	kvFieldValue          protowire.Number = 5
	kvFieldLease          protowire.Number = 6
)

// bucketKey is a decoded key of the "key" bucket: a revision, and whether
// the entry is a tombstone.
type bucketKey struct {
	main, sub int64
	tombstone bool
}

// parseBucketKey decodes a key of the "key" bucket.
func parseBucketKey(k []byte) (bucketKey, error) {
	if (len(k) != revBytesLen && len(k) != markedRevBytesLen) || k[8] != '_' {
		return bucketKey{}, fmt.Errorf("key bucket entry %x: %w: not a revision", k, ErrCorrupt)
	}
	bk := bucketKey{
		main: int64(binary.BigEndian.Uint64(k[:8])),
		sub:  int64(binary.BigEndian.Uint64(k[9:revBytesLen])),
	}
	if len(k) == markedRevBytesLen {
		if k[revBytesLen] != tombstoneMark {
			return bucketKey{}, fmt.Errorf("key bucket entry %x: %w: unknown mark %q", k, ErrCorrupt, k[revBytesLen])
		}
		bk.tombstone = true
	}
	if bk.main < 0 || bk.sub < 0 {
		return bucketKey{}, fmt.Errorf("key bucket entry %x: %w: negative revision", k, ErrCorrupt)
	}
	return bk, nil
}

// put writes the 17-byte revision form of bk into dst[:17], and the
// tombstone mark into dst[17] if dst is longer.
func (bk bucketKey) put(dst []byte) {
	binary.BigEndian.PutUint64(dst, uint64(bk.main))
	dst[8] = '_'
	binary.BigEndian.PutUint64(dst[9:], uint64(bk.sub))
	if len(dst) > revBytesLen && bk.tombstone {
		dst[revBytesLen] = tombstoneMark
	}
}

func (bk bucketKey) String() string {
	if bk.tombstone {
		return fmt.Sprintf("revision %d.%d (tombstone)", bk.main, bk.sub)
	}
	return fmt.Sprintf("revision %d.%d", bk.main, bk.sub)
}

// event decodes the value v stored under bk into an Event, copying the
// bytes it hands out. A tombstone's ModRevision is its own revision.
func (bk bucketKey) event(v []byte) (Event, error) {
	raw, err := decodeKV(v)
	if err != nil {
		return Event{}, fmt.Errorf("%v: %w", bk, err)
	}
	if bk.tombstone {
		return Event{KV: KeyValue{Key: string(raw.key), ModRevision: bk.main}, Deleted: true}, nil
	}
	return Event{KV: *raw.keyValue(true)}, nil
}

// keyMatch selects etcd keys: every key starting with s when prefix is set
// ("" then matches all), else exactly s.
type keyMatch struct {
	s      string
	prefix bool
}

// exactKey matches key alone.
func exactKey(key string) keyMatch { return keyMatch{s: key} }

// prefixMatch applies the Reader.List rule: prefix must be "" (every key)
// or end in "/", so that "pods/default" can never match "pods/default-2".
func prefixMatch(prefix string) (keyMatch, error) {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return keyMatch{}, fmt.Errorf("prefix %q must end in \"/\" (use get for a single key)", prefix)
	}
	return keyMatch{s: prefix, prefix: true}, nil
}

func (m keyMatch) match(key []byte) bool {
	if m.prefix {
		return len(key) >= len(m.s) && string(key[:len(m.s)]) == m.s
	}
	return string(key) == m.s
}

// ctxCheckEvery is how many entries a scan reads between context checks.
const ctxCheckEvery = 4096

// forEachRevision walks the key bucket with one forward cursor, in revision
// order, and calls fn for every revision at or below atRev (0: all) whose
// etcd key matches m. To match it reads only the value's key field
// (normally its first bytes); nothing else is decoded. fn gets the bucket
// key, the etcd key and the raw value, valid only during the call.
func forEachRevision(ctx context.Context, kb *bolt.Bucket, m keyMatch, atRev int64, fn func(bk bucketKey, key, v []byte) error) error {
	return forEachRevisionCursor(ctx, kb.Cursor(), m, atRev, fn)
}

// forEachRevisionCursor is forEachRevision with the key bucket's cursor
// given (a cursor is used by one goroutine at a time).
func forEachRevisionCursor(ctx context.Context, c *bolt.Cursor, m keyMatch, atRev int64, fn func(bk bucketKey, key, v []byte) error) error {
	hi := int64(math.MaxInt64)
	if atRev > 0 {
		hi = atRev
	}
	return walkRevisions(ctx, c, nil, hi, func(bk bucketKey, _, v []byte) error {
		if len(v) == 0 {
			// `etcdutl snapshot restore --bump-revision` marks the bumped
			// revision with an empty value; etcd accepts it. It is no key.
			return nil
		}
		key, err := entryKey(bk, v)
		if err != nil {
			return err
		}
		if !m.match(key) {
			return nil
		}
		return fn(bk, key, v)
	})
}

// errStopWalk, returned by a walkRevisions callback, ends the walk
// without an error.
var errStopWalk = errors.New("stop the walk")

// walkRevisions reads the key bucket through its cursor c in revision
// order, from the bucket key from (nil: the first) to the last entry of
// main revision hi, and calls fn with each entry's bucket key, raw key
// and value, which alias the file. It checks ctx every ctxCheckEvery
// entries, the first included. Every loop over the key bucket's entries
// goes through it.
func walkRevisions(ctx context.Context, c *bolt.Cursor, from []byte, hi int64, fn func(bk bucketKey, k, v []byte) error) error {
	k, v := c.First()
	if from != nil {
		k, v = c.Seek(from)
	}
	for n := 0; k != nil; k, v = c.Next() {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n++
		bk, err := parseBucketKey(k)
		if err != nil {
			return err
		}
		if bk.main > hi {
			return nil
		}
		if err := fn(bk, k, v); err != nil {
			if err == errStopWalk {
				return nil
			}
			return err
		}
	}
	return nil
}

// revisionStart is the first bucket key of main revision main.
func revisionStart(main int64) []byte {
	start := make([]byte, revBytesLen)
	bucketKey{main: main}.put(start)
	return start
}

// entryKey returns the etcd key of bk's value v (kvKey), the error
// naming bk.
func entryKey(bk bucketKey, v []byte) ([]byte, error) {
	key, err := kvKey(v)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", bk, err)
	}
	return key, nil
}

// rawKV is a decoded mvccpb.KeyValue whose byte fields alias the encoded
// value (valid only inside the read transaction).
type rawKV struct {
	key, value                  []byte
	create, mod, version, lease int64
}

// keyValue copies r out of the transaction; the value only if withValue.
func (r rawKV) keyValue(withValue bool) *KeyValue {
	return r.keyValueNamed(string(r.key), withValue)
}

// keyValueNamed is keyValue with r's key given as a string already
// copied out (not copied again).
func (r rawKV) keyValueNamed(key string, withValue bool) *KeyValue {
	kv := &KeyValue{
		Key:            key,
		CreateRevision: r.create,
		ModRevision:    r.mod,
		Version:        r.version,
		Lease:          r.lease,
	}
	if withValue && len(r.value) > 0 {
		kv.Value = bytes.Clone(r.value)
	}
	return kv
}

// kvKey returns the key field of an encoded mvccpb.KeyValue without
// decoding the rest. etcd writes fields in number order, so the key is
// normally at the start: tag 0x0a, a length, the bytes.
func kvKey(v []byte) ([]byte, error) {
	if len(v) > 1 && v[0] == byte(kvFieldKey)<<3|byte(protowire.BytesType) {
		if n, l := protowire.ConsumeVarint(v[1:]); l > 0 && n <= uint64(len(v)-1-l) {
			return v[1+l : 1+l+int(n)], nil
		}
	}
	raw, err := decodeKV(v)
	return raw.key, err
}

// decodeKV decodes an encoded mvccpb.KeyValue without copying. Unknown
// fields, and known fields with an unexpected wire type, are skipped as
// protobuf requires. A value without a key (or with an empty one) is an
// error: etcd never stores one.
func decodeKV(b []byte) (rawKV, error) {
	var kv rawKV
	if len(b) == 0 {
		return kv, fmt.Errorf("decode mvccpb.KeyValue: %w: empty", ErrCorrupt)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return kv, fmt.Errorf("decode mvccpb.KeyValue: %w: %w", ErrCorrupt, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && (num == kvFieldKey || num == kvFieldValue):
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			if num == kvFieldKey {
				kv.key = v
			} else {
				kv.value = v
			}
		case typ == protowire.VarintType && num >= kvFieldCreateRevision && num <= kvFieldLease && num != kvFieldValue:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			switch num {
			case kvFieldCreateRevision:
				kv.create = int64(v)
			case kvFieldModRevision:
				kv.mod = int64(v)
			case kvFieldVersion:
				kv.version = int64(v)
			case kvFieldLease:
				kv.lease = int64(v)
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return kv, fmt.Errorf("decode mvccpb.KeyValue field %d: %w: %w", num, ErrCorrupt, protowire.ParseError(n))
		}
		b = b[n:]
	}
	if len(kv.key) == 0 {
		return kv, fmt.Errorf("decode mvccpb.KeyValue: %w: no key", ErrCorrupt)
	}
	return kv, nil
}

// latestQuery parameterizes scanLatest.
type latestQuery struct {
	match          keyMatch
	atRev          int64 // ignore revisions above (0: none)
	includeDeleted bool  // report keys whose newest revision is a tombstone
	deletedOnly    bool  // report only those (with includeDeleted)
	withValues     bool  // hand out values (else KeyValue.Value is nil)
	// count, when set, is told how many keys the scan found (deleted
	// ones included) before the first is handed out.
	count func(n int)
	// oneWorker: step 1 runs on the calling goroutine alone (a caller
	// that keeps the other cores busy meanwhile).
	oneWorker bool
	// hash, when set, is also computed by step 1's pass, which then runs
	// on the calling goroutine alone (ListHashKV).
	hash *hashRequest
}

// latestEntry is scanLatest's per-key state: the key, the encoded value
// of its newest put and a tombstone revision. value aliases the mapped
// file: valid only inside the read transaction, which scanLatest holds
// throughout.
type latestEntry struct {
	key string
	// value: the encoded mvccpb.KeyValue of the key's newest put (nil:
	// none held); liveMain, liveSub are that put's revision, for errors.
	value             []byte
	liveMain, liveSub int64
	// deleted: main revision of a tombstone newer than that put (0: live).
	deleted int64
}

// latestIndex holds scanLatest's entries, one per key, and finds a key's
// entry without allocating: an open-addressing hash table (linear probing,
// at most half full) of 64-bit slots, each the upper 32 bits of the key's
// hash and the entry's number plus one (0: empty). The hash's upper bits
// also pick the slot, so growing the table needs no key. This does a third
// fewer cache misses per lookup than a map[string]int, and the table never
// rehashes a key. Entries live in fixed-size chunks that never move.
type latestIndex struct {
	seed   maphash.Seed
	slots  []uint64
	bits   uint // len(slots) == 1<<bits
	n      int
	chunks [][]latestEntry
}

const (
	latestChunkBits = 12
	latestChunk     = 1 << latestChunkBits
)

func newLatestIndex(seed maphash.Seed) *latestIndex {
	const bits = 12
	return &latestIndex{seed: seed, slots: make([]uint64, 1<<bits), bits: bits}
}

// entry returns entry i.
func (x *latestIndex) entry(i uint32) *latestEntry {
	return &x.chunks[i>>latestChunkBits][i&(latestChunk-1)]
}

// get returns key's entry, adding an empty one if it has none.
func (x *latestIndex) get(key []byte) *latestEntry {
	return x.getHashed(maphash.Bytes(x.seed, key), key)
}

// getHashed is get with the key's hash (with x.seed) given.
func (x *latestIndex) getHashed(h uint64, key []byte) *latestEntry {
	tag := h >> 32
	mask := uint64(len(x.slots) - 1)
	for p := tag >> (32 - x.bits); ; p = (p + 1) & mask {
		s := x.slots[p]
		if s == 0 {
			break
		}
		if s>>32 == tag {
			if e := x.entry(uint32(s) - 1); e.key == string(key) {
				return e
			}
		}
	}
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
	}
	i := uint32(x.n)
	x.n++
	if i&(latestChunk-1) == 0 {
		x.chunks = append(x.chunks, make([]latestEntry, latestChunk))
	}
	x.insert(tag<<32 | uint64(i+1))
	e := x.entry(i)
	e.key = string(key)
	return e
}

// free drops the entries, whose values alias the mapped file.
func (x *latestIndex) free() {
	x.slots, x.chunks = nil, nil
}

// insert puts slot s (hash tag and entry number) into the table.
func (x *latestIndex) insert(s uint64) {
	mask := uint64(len(x.slots) - 1)
	p := (s >> 32) >> (32 - x.bits)
	for x.slots[p] != 0 {
		p = (p + 1) & mask
	}
	x.slots[p] = s
}

// grow doubles the table.
func (x *latestIndex) grow() {
	old := x.slots
	x.bits++
	x.slots = make([]uint64, 1<<x.bits)
	for _, s := range old {
		if s != 0 {
			x.insert(s)
		}
	}
}

// sorted drops the hash table and returns the entries in key order.
func (x *latestIndex) sorted() []*latestEntry {
	x.slots = nil
	type item struct {
		key string
		e   *latestEntry
	}
	items := make([]item, x.n)
	for i := range items {
		e := x.entry(uint32(i))
		items[i] = item{e.key, e}
	}
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.key, b.key) })
	order := make([]*latestEntry, len(items))
	for i, it := range items {
		order[i] = it.e
	}
	return order
}

// mergeSorted merges lists of entries in key order, of disjoint keys,
// into one.
func mergeSorted(lists [][]*latestEntry) []*latestEntry {
	if len(lists) == 1 {
		return lists[0]
	}
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	out := make([]*latestEntry, 0, n)
	for {
		best := -1
		for i, l := range lists {
			if len(l) > 0 && (best < 0 || l[0].key < lists[best][0].key) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, lists[best][0])
		lists[best] = lists[best][1:]
	}
}

// scanWorkers is how many goroutines step 1 of scanLatest runs on: each
// walks the whole key bucket but indexes only the keys whose hash falls
// to it, so that the indexes are disjoint and cost no more memory than one.
// Walking the bucket is cheap next to indexing; below 64 MB, one
// goroutine does it all.
func scanWorkers(tx *bolt.Tx) int {
	if scanWorkersForTest > 0 {
		return scanWorkersForTest
	}
	if tx.Size() < 64<<20 {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), 4)
}

// scanWorkersForTest, when set, is what scanWorkers returns.
var scanWorkersForTest int

// scanLatest reports each matching key's newest state at or below q.atRev,
// in key order. fn gets deleteRev 0 for a live key.
//
// The key bucket is in revision order, so the newest revision of a key can
// be anywhere in it. The algorithm:
//
//  1. One forward cursor pass (on a large file, one per core, each keeping
//     only the keys whose hash falls to it). For each entry, read only the
//     value's key field; skip it unless it matches. Keep, per key, a
//     latestEntry: a put sets the live value and clears the tombstone, a
//     tombstone sets it. A latestIndex (a hash table) finds the entry
//     without allocating on updates. The live value is kept as a slice of
//     the mapped file, not copied: bbolt's mapping of a read-only file
//     stays in place for the whole read transaction, and a read-only
//     transaction never materializes pages into the heap. Memory is thus
//     about 100 bytes plus the key length per key, whatever the history
//     depth.
//  2. Drop the hash table; sort the entries by key (each pass its own,
//     then merge).
//  3. For each entry in key order, decode its value, copy what is handed
//     out, call fn.
//
// Step 3 reads values in key order, that is, at random places of a file
// that MAP_POPULATE (or step 1) has just brought into memory; a second
// sequential pass instead would have to hold values to emit them in key
// order.
func (b *Bolt) scanLatest(ctx context.Context, q latestQuery, fn func(kv *KeyValue, deleteRev int64) error) error {
	return b.latestIndexed(ctx, q, func(g *viewGuard, order []*latestEntry) error {
		if q.count != nil {
			q.count(len(order))
		}
		for n, e := range order {
			if n%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if e.deleted != 0 && !q.includeDeleted || e.deleted == 0 && q.deletedOnly {
				continue
			}
			var kv *KeyValue
			switch {
			case e.value == nil:
				kv = &KeyValue{Key: e.key}
			default:
				raw, err := decodeKV(e.value)
				if err != nil {
					return fmt.Errorf("%v: %w", bucketKey{main: e.liveMain, sub: e.liveSub}, err)
				}
				kv = raw.keyValueNamed(e.key, q.withValues)
			}
			if err := g.call(func() error { return fn(kv, e.deleted) }); err != nil {
				return err
			}
		}
		return nil
	})
}

// latestIndexed runs scanLatest's steps 1 and 2 in a read transaction and
// then, still inside it, calls then with the entries in key order.
func (b *Bolt) latestIndexed(ctx context.Context, q latestQuery, then func(g *viewGuard, order []*latestEntry) error) error {
	return b.view(func(tx *bolt.Tx, g *viewGuard) error {
		kb := keyBucket(tx)
		seed := maphash.MakeSeed()
		parts := scanWorkers(tx)
		if q.oneWorker || q.hash != nil {
			parts = 1
		}
		sorted := make([][]*latestEntry, parts)
		errs := make([]error, parts)
		panics := make([]any, parts)
		xs := make([]*latestIndex, parts)
		for part := range xs {
			xs[part] = newLatestIndex(seed)
		}
		var merged []*latestEntry
		defer func() {
			// Nothing may point into the released entries (the address
			// range may serve the Go heap next).
			clear(merged)
			for part, x := range xs {
				clear(sorted[part])
				x.free()
			}
		}()
		index := func(part int, c *bolt.Cursor) {
			x := xs[part]
			add := func(bk bucketKey, key, v []byte) error {
				h := maphash.Bytes(seed, key)
				if parts > 1 && int(h%uint64(parts)) != part {
					return nil
				}
				e := x.getHashed(h, key)
				if bk.tombstone {
					e.deleted = bk.main
				} else {
					e.value, e.liveMain, e.liveSub, e.deleted = v, bk.main, bk.sub, 0
				}
				return nil
			}
			if q.hash != nil {
				errs[part] = q.hash.walk(ctx, tx, g, c, q.match, q.atRev, add)
			} else {
				errs[part] = forEachRevisionCursor(ctx, c, q.match, q.atRev, add)
			}
			if errs[part] == nil {
				sorted[part] = x.sorted()
			}
		}
		var wg sync.WaitGroup
		for part := 1; part < parts; part++ {
			c := kb.Cursor()
			wg.Go(func() {
				// Like view's: a fault reading the mapped file panics,
				// and the panic is raised again below (an ErrCorrupt).
				defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
				defer func() { panics[part] = recover() }()
				index(part, c)
			})
		}
		func() {
			defer func() { panics[0] = recover() }()
			index(0, kb.Cursor())
		}()
		wg.Wait()
		for _, p := range panics {
			if p != nil {
				panic(p)
			}
		}
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		merged = mergeSorted(sorted)
		return then(g, merged)
	})
}

// borrow decodes e's live value into kv, its byte fields aliasing the
// mapped file; kv.Value only if withValues. e.value must be set.
func (e *latestEntry) borrow(kv *KeyValue, withValues bool) error {
	raw, err := decodeKV(e.value)
	if err != nil {
		return fmt.Errorf("%v: %w", bucketKey{main: e.liveMain, sub: e.liveSub}, err)
	}
	*kv = KeyValue{Key: e.key, CreateRevision: raw.create, ModRevision: raw.mod, Version: raw.version, Lease: raw.lease}
	if withValues && len(raw.value) > 0 {
		kv.Value = raw.value
	}
	return nil
}

// parallelBatch is a run of consecutive keys (positions lo to hi in key
// order) that one worker of listParallel maps.
type parallelBatch[T any] struct {
	lo, hi int
	out    []T
	// n results are in out; err (if set) is the error of the key after
	// them, and nothing after it was mapped.
	err error
	// panicked: the worker panicked with panicVal, in mapFn if inMap.
	panicked, inMap bool
	panicVal        any
	done            chan struct{}
}

// parallelBatchLen is how many keys a worker of listParallel maps at a
// time (a variable for tests); at most parallelInflight batches per worker
// are mapped ahead of the one being emitted, which bounds the results held.
var parallelBatchLen = 256

const parallelInflight = 4

// listParallel is ListMap's body on a db file, on the query q (live keys only).
func listParallel[T any](ctx context.Context, b *Bolt, q latestQuery, workers int, mapFn func(kv *KeyValue) (T, error), emit func(T) error) error {
	workers = max(workers, 1)
	return b.latestIndexed(ctx, q, func(g *viewGuard, order []*latestEntry) error {
		// Only live keys: drop the others first, so that batches are even.
		live := order[:0]
		for _, e := range order {
			if e.deleted == 0 {
				live = append(live, e)
			}
		}
		order = live

		jobs := make(chan *parallelBatch[T], workers*parallelInflight)
		var stop atomic.Bool
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				// Like view's: a fault reading the mapped file panics.
				defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
				for bt := range jobs {
					if !stop.Load() {
						mapBatch(bt, order, q.withValues, mapFn)
					}
					close(bt.done)
				}
			})
		}
		// The workers read the mapped file: they must be done before the
		// transaction ends, whatever way this returns.
		defer func() {
			stop.Store(true)
			close(jobs)
			wg.Wait()
		}()

		var pending []*parallelBatch[T]
		var spare [][]T // emitted batches' result slices, for reuse
		next := 0
		for next < len(order) || len(pending) > 0 {
			for next < len(order) && len(pending) < workers*parallelInflight {
				bt := &parallelBatch[T]{lo: next, hi: min(next+parallelBatchLen, len(order)), done: make(chan struct{})}
				if n := len(spare); n > 0 {
					bt.out, spare = spare[n-1], spare[:n-1]
				} else {
					bt.out = make([]T, 0, parallelBatchLen)
				}
				next = bt.hi
				pending = append(pending, bt)
				jobs <- bt
			}
			bt := pending[0]
			pending = pending[1:]
			<-bt.done
			if err := ctx.Err(); err != nil {
				return err
			}
			for _, t := range bt.out {
				if err := g.call(func() error { return emit(t) }); err != nil {
					return err
				}
			}
			if bt.panicked {
				g.inCallback = bt.inMap
				panic(bt.panicVal)
			}
			if bt.err != nil {
				return bt.err
			}
			clear(bt.out)
			spare = append(spare, bt.out[:0])
		}
		return nil
	})
}

// mapBatch maps the keys of bt, recording its results, its first error or
// a panic.
func mapBatch[T any](bt *parallelBatch[T], order []*latestEntry, withValues bool, mapFn func(kv *KeyValue) (T, error)) {
	inMap := false
	defer func() {
		if r := recover(); r != nil {
			bt.panicked, bt.inMap, bt.panicVal = true, inMap, r
		}
	}()
	var kv KeyValue
	for _, e := range order[bt.lo:bt.hi] {
		if e.value == nil {
			kv = KeyValue{Key: e.key}
		} else if err := e.borrow(&kv, withValues); err != nil {
			bt.err = err
			return
		}
		inMap = true
		t, err := mapFn(&kv)
		inMap = false
		if err != nil {
			bt.err = err
			return
		}
		bt.out = append(bt.out, t)
	}
}
