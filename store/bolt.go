package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"go.etcd.io/etcd/server/v3/storage/schema"

	"github.com/etcdpvc/etcdpvc/internal/regular"
)

// Bolt reads an etcd v3 backend file offline: a member's bbolt database
// (member/snap/db) or a file written by `etcdctl snapshot save`. It
// implements Reader, not Writer: the file is opened O_RDONLY under a shared
// flock and mapped PROT_READ, and nothing is ever written to it. Its
// methods are safe for concurrent use; each read is one bbolt read
// transaction.
//
// # File format
//
// The file is a bbolt database (one B+tree of buckets in fixed-size pages,
// usually 4 KiB). etcd keeps its keyspace in two buckets:
//
//   - "key" holds every revision etcd still has, keyed by revision and so
//     sorted by revision, not by key. A bucket key is 17 bytes: the main
//     revision as 8 bytes big-endian, '_', the sub revision (the index of the
//     change inside one transaction) as 8 bytes big-endian. A delete writes a
//     tombstone whose bucket key has an 18th byte, 't'. The value is a
//     protobuf mvccpb.KeyValue: key=1 (bytes), create_revision=2,
//     mod_revision=3, version=4 (varints), value=5 (bytes), lease=6 (varint).
//     A tombstone's KeyValue holds only the key. The same etcd key thus
//     appears once per revision, scattered through the bucket; a key's
//     current state is its newest entry, and it does not exist when that
//     entry is a tombstone. A later put is a new incarnation (version 1,
//     create_revision = that put).
//   - "meta" holds "finishedCompactRev" and "scheduledCompactRev" (a revision
//     in the 17-byte form above; the main revision is the first 8 bytes),
//     "consistent_index" and "term" (8 bytes big-endian), and since etcd 3.6
//     "storageVersion". Any of them may be missing: a file that was never
//     compacted has no compaction keys, and files older than etcd 3.5 have
//     no "term". Compaction removes every revision at or below the compaction
//     revision except each key's newest one there, and drops a tombstone at
//     or below it together with the incarnation it ended.
//
// etcd's current revision is the newest main revision in "key", or the
// compaction revision if that is larger (a compaction can remove the
// newest revisions when they were tombstones).
//
// A snapshot file is the bbolt file followed by a 32-byte trailer, the
// sha256 of everything before it; etcd recognizes it by its size, 32 bytes
// over a multiple of 512, and so does OpenBolt. bbolt itself ignores the
// trailer: pages past the last one in use are never read.
type Bolt struct {
	path string
	db   *bolt.DB
	snap SnapshotInfo
	meta BoltMeta
}

// BoltOptions tunes OpenBolt.
type BoltOptions struct {
	// LockTimeout bounds the wait for the file lock (default 2s; negative:
	// try once, do not wait). A running etcd holds an exclusive lock on
	// its db for as long as it runs, so waiting longer never helps.
	LockTimeout time.Duration
	// SkipHashCheck skips the verification of a snapshot file's sha256
	// trailer (a warning is issued instead), to read a damaged snapshot.
	SkipHashCheck bool
	// Warn receives warnings (hash check skipped, interrupted compaction).
	// It may be nil.
	Warn func(msg string)
	// HashCacheDir, when set, remembers snapshot files whose sha256 was
	// verified, with their size, mtime, ctime, inode and device: opening
	// the same unchanged file again skips hashing it (about 1 s per GB).
	// Any change to the file changes its ctime and voids the record.
	HashCacheDir string
	// Context, when not nil, ends the hash check when it is done: an
	// interrupted check fails the open.
	Context context.Context
}

// SnapshotInfo describes the sha256 trailer of an `etcdctl snapshot save`
// file.
type SnapshotInfo struct {
	// IsSnapshot is true when the file has a trailer (its size is 32 bytes
	// over a multiple of 512); false for a raw member db.
	IsSnapshot bool
	// SHA256 is the trailer in hex ("" without one): the sha256 of the
	// file without its last 32 bytes, not the file's.
	SHA256 string
	// FileSHA256 is the sha256 of the whole file in hex, as sha256sum
	// prints it, where the file was read whole: computed while the
	// trailer is verified (or by the run that verified it, see
	// VerifiedEarlier); "" without a trailer or with SkipHashCheck.
	FileSHA256 string
	// Verified is true when the trailer matched the file's contents; false
	// without a trailer or with BoltOptions.SkipHashCheck.
	Verified bool
	// VerifiedEarlier is true when Verified comes from an earlier run's
	// record (BoltOptions.HashCacheDir) of this unchanged file.
	VerifiedEarlier bool
	// Size is the size of the whole file in bytes, trailer included.
	Size int64
}

// BoltMeta holds what the "meta" bucket and the bbolt header record, for
// `stats` and `doctor`. Missing entries are zero.
type BoltMeta struct {
	// Revision is etcd's current revision (see Bolt).
	Revision int64
	// CompactRevision is the last finished compaction ("finishedCompactRev").
	CompactRevision int64
	// ScheduledCompactRevision is the last compaction started
	// ("scheduledCompactRev"). When it is above CompactRevision, a
	// compaction was interrupted: revisions up to it may be partly removed,
	// and reads below it fail with ErrCompacted, as etcd would.
	ScheduledCompactRevision int64
	// ConsistentIndex is the raft index the backend has applied.
	ConsistentIndex uint64
	// Term is the raft term (etcd 3.5 and later).
	Term uint64
	// StorageVersion is the storage schema version (etcd 3.6 and later).
	StorageVersion string
	// PageSize is the bbolt page size.
	PageSize int
	// DataSize is the size in bytes of the pages bbolt uses (without the
	// trailer and without preallocated space at the end of a member db).
	DataSize int64
}

// ErrLocked means a running etcd holds the db file's lock. The text carries
// the remedy.
var ErrLocked = errors.New("db is locked by a running etcd: copy it with `etcdctl snapshot save` or use the live endpoints")

// ErrHashMismatch means a snapshot file's sha256 trailer does not match its
// contents. The error is a *HashMismatchError.
var ErrHashMismatch = errors.New("snapshot sha256 mismatch")

// ErrCorrupt means the file is not a readable etcd backend: truncated,
// damaged, or not bbolt at all.
var ErrCorrupt = errors.New("db file is corrupt")

// HashMismatchError reports a snapshot whose trailer does not match its
// contents. It matches ErrHashMismatch.
type HashMismatchError struct {
	Path string
	// Trailer is the sha256 the file claims, Computed the one of its
	// contents (both hex).
	Trailer, Computed string
}

func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("%s: snapshot sha256 mismatch (trailer %s, contents %s): the file is damaged or incomplete; copy it again, or skip the hash check to read it anyway", e.Path, e.Trailer, e.Computed)
}

// Is reports whether target is ErrHashMismatch.
func (e *HashMismatchError) Is(target error) bool { return target == ErrHashMismatch }

// defaultBoltLockTimeout is how long opening a file waits for another
// process's lock on it.
const defaultBoltLockTimeout = 2 * time.Second

// snapshotTrailerSize is the size of the sha256 trailer of a snapshot file.
const snapshotTrailerSize = sha256.Size

// hasSnapshotTrailer reports whether a file of size n ends in a sha256
// trailer, by etcd's own rule (client/v3/snapshot.hasChecksum).
func hasSnapshotTrailer(n int64) bool { return n%512 == snapshotTrailerSize }

// OpenBolt opens the etcd backend file at path read-only and reads its meta
// bucket. A snapshot file's sha256 trailer is then verified by reading the
// whole file (a mismatch is a *HashMismatchError) unless
// opts.SkipHashCheck. If a running etcd holds the file, OpenBolt
// fails within opts.LockTimeout with an error wrapping ErrLocked. A file that
// is not an etcd backend, or is truncated, gives an error wrapping
// ErrCorrupt.
//
// On Linux the file is mapped with MAP_POPULATE: every read walks the whole
// "key" bucket anyway, and reading the file in once, sequentially, is far
// faster on a cold cache than the random page faults of a B+tree walk.
//
// Every failure but a hash mismatch is an *OpenError, which matches
// ErrUnavailable: the file cannot be read, as etcd could not be reached.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	b, err := openBoltFile(path, opts)
	if err != nil && !errors.Is(err, ErrHashMismatch) {
		return nil, &OpenError{Path: path, Err: err}
	}
	return b, err
}

// OpenError is a db file that cannot be opened: missing, unreadable, not
// a regular file, locked by a running etcd, or not an etcd backend. It
// matches ErrUnavailable and its cause (fs.ErrNotExist, fs.ErrPermission,
// ErrLocked, ErrCorrupt, ...).
type OpenError struct {
	Path string
	Err  error
}

func (e *OpenError) Error() string { return e.Err.Error() }

// Unwrap returns the cause and ErrUnavailable.
func (e *OpenError) Unwrap() []error { return []error{e.Err, ErrUnavailable} }

func openBoltFile(path string, opts BoltOptions) (b *Bolt, err error) {
	switch {
	case opts.LockTimeout == 0:
		opts.LockTimeout = defaultBoltLockTimeout
	case opts.LockTimeout < 0:
		// bbolt tries once, then gives up when the timeout has passed
		// (a zero timeout would make it wait forever).
		opts.LockTimeout = time.Nanosecond
	}
	warn := func(format string, args ...any) {
		if opts.Warn != nil {
			opts.Warn(fmt.Sprintf(format, args...))
		}
	}
	// bbolt opens path itself: a FIFO, a device or a directory is
	// refused first, without blocking.
	f, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open etcd db: %w", err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("open etcd db: %w", err)
	}
	if fi.Size() == 0 {
		// bbolt would initialize an empty file, that is, write to it.
		return nil, fmt.Errorf("open etcd db %s: %w: empty file", path, ErrCorrupt)
	}
	b = &Bolt{path: path, snap: SnapshotInfo{Size: fi.Size(), IsSnapshot: hasSnapshotTrailer(fi.Size())}}
	dataSize := fi.Size()
	if b.snap.IsSnapshot {
		dataSize -= snapshotTrailerSize
	}

	db, err := openBoltDB(path, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	b.db = db
	defer func() {
		if err != nil {
			_ = db.Close()
		}
	}()

	if err := b.view(func(tx *bolt.Tx, _ *viewGuard) error {
		return b.readMeta(tx, dataSize)
	}); err != nil {
		return nil, err
	}

	if b.snap.IsSnapshot {
		if err := b.checkTrailer(opts.Context, dataSize, opts.SkipHashCheck, opts.HashCacheDir); err != nil {
			return nil, err
		}
		if opts.SkipHashCheck {
			warn("%s: snapshot sha256 not verified (hash check skipped)", path)
		}
	}
	if !b.snap.IsSnapshot && fi.Size()%int64(b.meta.PageSize) != 0 {
		warn("%s: size %d is neither a multiple of the page size nor a snapshot's (32 bytes over a multiple of 512): the file may be cut short or have bytes appended; the sha256 trailer, if any, is not checked", path, fi.Size())
	}
	if m := b.meta; m.ScheduledCompactRevision > m.CompactRevision {
		warn("%s: compaction to revision %d was interrupted (finished: %d); revisions up to %d may be partly removed", path, m.ScheduledCompactRevision, m.CompactRevision, m.ScheduledCompactRevision)
	}
	return b, nil
}

// openBoltDB opens path with bbolt, read-only, turning a lock timeout into
// ErrLocked and a panic on a damaged file into ErrCorrupt.
func openBoltDB(path string, lockTimeout time.Duration) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("open etcd db %s: %w: %v", path, ErrCorrupt, r)
		}
	}()
	start := time.Now()
	db, err = bolt.Open(path, 0o400, &bolt.Options{
		ReadOnly:  true,
		Timeout:   lockTimeout,
		MmapFlags: boltMmapFlags,
	})
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("open etcd db %s: %w (gave up after %s)", path, ErrLocked, time.Since(start).Round(time.Millisecond))
	case errors.As(err, &pathErr), errors.As(err, new(syscall.Errno)):
		return nil, fmt.Errorf("open etcd db: %w", err)
	case err != nil:
		return nil, fmt.Errorf("open etcd db %s: %w: %w", path, ErrCorrupt, err)
	}
	return db, nil
}

// currentRevision is the revision of the file tx reads, whose key bucket
// is kb: its newest in the key bucket, or the compaction revision when
// higher, for etcd starts at revision 1 and never goes below a
// compaction revision (mvcc.store.restore).
func currentRevision(tx *bolt.Tx, kb *bolt.Bucket) (int64, error) {
	rev := int64(1)
	if mb := tx.Bucket(schema.Meta.Name()); mb != nil {
		rev = max(rev, int64(metaUint(mb.Get(schema.FinishedCompactKeyName))), int64(metaUint(mb.Get(schema.ScheduledCompactKeyName))))
	}
	if k, _ := kb.Cursor().Last(); k != nil {
		bk, err := parseBucketKey(k)
		if err != nil {
			return 0, err
		}
		rev = max(rev, bk.main)
	}
	return rev, nil
}

// readMeta fills b.meta from the meta bucket and the newest revision in the
// key bucket.
func (b *Bolt) readMeta(tx *bolt.Tx, dataSize int64) error {
	if tx.Size() > dataSize {
		return fmt.Errorf("%s: %w: truncated: bbolt uses %d bytes, the file holds %d", b.path, ErrCorrupt, tx.Size(), dataSize)
	}
	b.meta.PageSize = tx.DB().Info().PageSize
	b.meta.DataSize = tx.Size()
	kb := tx.Bucket(schema.Key.Name())
	if kb == nil {
		return fmt.Errorf("%s: %w: no %q bucket: not an etcd v3 backend", b.path, ErrCorrupt, schema.Key.Name())
	}
	if mb := tx.Bucket(schema.Meta.Name()); mb != nil {
		b.meta.CompactRevision = int64(metaUint(mb.Get(schema.FinishedCompactKeyName)))
		b.meta.ScheduledCompactRevision = int64(metaUint(mb.Get(schema.ScheduledCompactKeyName)))
		b.meta.ConsistentIndex = metaUint(mb.Get(schema.MetaConsistentIndexKeyName))
		b.meta.Term = metaUint(mb.Get(schema.MetaTermKeyName))
		b.meta.StorageVersion = string(mb.Get(schema.MetaStorageVersionName))
	}
	rev, err := currentRevision(tx, kb)
	if err != nil {
		return fmt.Errorf("%s: %w", b.path, err)
	}
	b.meta.Revision = rev
	return nil
}

// metaUint reads the big-endian number at the start of a meta value: 8
// bytes for indexes, the 17-byte revision form for compaction revisions.
func metaUint(v []byte) uint64 {
	if len(v) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v[:8])
}

// checkTrailer hashes the first dataSize bytes of the file and compares
// them with the trailer that follows.
func (b *Bolt) checkTrailer(ctx context.Context, dataSize int64, skip bool, cacheDir string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	f, err := regular.Open(b.path)
	if err != nil {
		return fmt.Errorf("check snapshot sha256: %w", err)
	}
	defer f.Close()
	trailer := make([]byte, snapshotTrailerSize)
	if _, err := f.ReadAt(trailer, dataSize); err != nil {
		return fmt.Errorf("check snapshot sha256 of %s: read trailer: %w", b.path, err)
	}
	b.snap.SHA256 = hex.EncodeToString(trailer)
	if skip {
		return nil
	}
	// A record from before the file's sha256 was kept is hashed again,
	// once, for it.
	if fileSum, ok := cachedVerified(cacheDir, b.path, b.snap.SHA256); ok && fileSum != "" {
		b.snap.Verified, b.snap.VerifiedEarlier, b.snap.FileSHA256 = true, true, fileSum
		return nil
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, ctxReader{ctx, io.NewSectionReader(f, 0, dataSize)}, make([]byte, 1<<20)); err != nil {
		return fmt.Errorf("check snapshot sha256 of %s: %w", b.path, err)
	}
	sum := h.Sum(nil)
	if !bytes.Equal(sum, trailer) {
		return &HashMismatchError{Path: b.path, Trailer: b.snap.SHA256, Computed: hex.EncodeToString(sum)}
	}
	h.Write(trailer) // the whole file's sum, at no further read
	b.snap.Verified, b.snap.FileSHA256 = true, hex.EncodeToString(h.Sum(nil))
	rememberVerified(cacheDir, b.path, b.snap.SHA256, b.snap.FileSHA256)
	return nil
}

// ctxReader reads r until ctx is done: a long read stops at once.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Snapshot describes the file's snapshot trailer.
func (b *Bolt) Snapshot() SnapshotInfo { return b.snap }

// Meta returns what the file's meta bucket records, read at open.
func (b *Bolt) Meta() BoltMeta { return b.meta }

// Info describes the file: its path, current revision and last finished
// compaction.
func (b *Bolt) Info(ctx context.Context) (Info, error) {
	return Info{Description: b.path, Revision: b.meta.Revision, CompactRevision: b.meta.CompactRevision}, nil
}

// Close unmaps and closes the file. It waits for running reads.
func (b *Bolt) Close() error {
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("close etcd db %s: %w", b.path, err)
	}
	return nil
}

// compactRevision is the revision below which reads fail with
// ErrCompacted: the scheduled compaction when one was interrupted, since
// it may have removed revisions already (etcd does the same).
func (b *Bolt) compactRevision() int64 {
	return max(b.meta.CompactRevision, b.meta.ScheduledCompactRevision)
}

// readRevision checks a requested revision (0: current) and returns the
// revision to read at.
func (b *Bolt) readRevision(rev int64) (int64, error) {
	switch {
	case rev == 0:
		return b.meta.Revision, nil
	case rev < 0:
		return 0, fmt.Errorf("revision %d: must not be negative", rev)
	case rev < b.compactRevision():
		return 0, fmt.Errorf("revision %d (compacted at %d): %w", rev, b.compactRevision(), ErrCompacted)
	case rev > b.meta.Revision:
		return 0, fmt.Errorf("revision %d is in the future (current revision %d)", rev, b.meta.Revision)
	}
	return rev, nil
}

// viewGuard tells view's recover whether a panic came from a caller's
// callback (to be re-raised) or from reading the file (an ErrCorrupt).
type viewGuard struct{ inCallback bool }

// call runs a caller's callback fn, marked as such. It resets the mark
// without a defer: a panic in fn must leave it set for view's recover.
func (g *viewGuard) call(fn func() error) error {
	g.inCallback = true
	err := fn()
	g.inCallback = false
	return err
}

// view runs fn in a read transaction. A panic while reading the file (bbolt
// asserts on damaged pages; a page past the end of a truncated file faults)
// becomes an error wrapping ErrCorrupt; a panic in a caller's callback
// (marked by g.inCallback) propagates.
func (b *Bolt) view(fn func(tx *bolt.Tx, g *viewGuard) error) (err error) {
	g := &viewGuard{}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if g.inCallback {
				panic(r)
			}
			err = fmt.Errorf("%s: %w: %v", b.path, ErrCorrupt, r)
		}
	}()
	return b.db.View(func(tx *bolt.Tx) error { return fn(tx, g) })
}

// keyBucket returns the "key" bucket (checked at open).
func keyBucket(tx *bolt.Tx) *bolt.Bucket { return tx.Bucket(schema.Key.Name()) }

// Get returns key at revision rev (0: the newest). It finds the key's
// newest revision at or below rev in one pass over the key bucket, comparing
// only each value's key field, and decodes that one value at the end.
func (b *Bolt) Get(ctx context.Context, key string, rev int64) (*KeyValue, error) {
	at, err := b.readRevision(rev)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	var kv *KeyValue
	err = b.view(func(tx *bolt.Tx, g *viewGuard) error {
		kb := keyBucket(tx)
		var last bucketKey // newest revision so far; a tombstone ends the key
		err := forEachRevision(ctx, kb, exactKey(key), at, func(bk bucketKey, _, _ []byte) error {
			last = bk
			return nil
		})
		if err != nil {
			return err
		}
		if last.main == 0 || last.tombstone {
			return nil
		}
		var rk [revBytesLen]byte
		last.put(rk[:])
		v := kb.Get(rk[:])
		if v == nil {
			return fmt.Errorf("%v: %w: vanished during the read", last, ErrCorrupt)
		}
		raw, err := decodeKV(v)
		if err != nil {
			return fmt.Errorf("%v: %w", last, err)
		}
		kv = raw.keyValue(true)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	if kv == nil {
		return nil, fmt.Errorf("get %s at revision %d: %w", key, at, ErrNotFound)
	}
	return kv, nil
}

// List calls fn for every live key under prefix as of opts.Revision (0: the
// newest), in key order, with each key's newest value at or below that
// revision, and returns that revision. prefix must end in "/" (or be "",
// every key), so that "pods/default" can never match "pods/default-2"; any
// other prefix is rejected, as the live backend does: read a single key
// with Get. opts.PageSize is ignored: the file is read in one transaction.
//
// The algorithm is ScanLatest's, bounded to the revision: one forward pass
// over the key bucket builds a small index of each key's newest revision;
// the index is sorted by key and each value is then fetched by revision.
func (b *Bolt) List(ctx context.Context, prefix string, opts ListOptions, fn func(*KeyValue) error) (int64, error) {
	q, at, err := b.listQuery(prefix, opts)
	if err != nil {
		return 0, err
	}
	if err := b.scanLatest(ctx, q, func(kv *KeyValue, _ int64) error { return fn(kv) }); err != nil {
		return 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	return at, nil
}

// listQuery is the scanLatest query of List(prefix, opts), and the
// revision it reads at.
func (b *Bolt) listQuery(prefix string, opts ListOptions) (latestQuery, int64, error) {
	m, err := prefixMatch(prefix)
	if err != nil {
		return latestQuery{}, 0, fmt.Errorf("list: %w", err)
	}
	at, err := b.readRevision(opts.Revision)
	if err != nil {
		return latestQuery{}, 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	return latestQuery{match: m, atRev: at, withValues: !opts.KeysOnly}, at, nil
}

// ListMap is the listing call of a reader that makes something of each
// key: it calls mapFn for every key r.List would hand its callback, and
// emit with each result, in key order, from the calling goroutine, and
// returns the revision read at. mapFn may run on up to workers goroutines
// at once (0: one per core), so it must touch nothing shared; kv and
// kv.Value are valid only during the call to mapFn, which must neither
// keep nor modify them (copy what it keeps).
//
// On a db file (*Bolt) values are read in place, not copied, and mapped on
// several cores, in one read transaction; other readers map each key in
// List's callback. If mapFn fails for a key, emit gets the results of the
// keys before it and ListMap returns that error; if emit fails, ListMap
// returns its error. A panic in mapFn or emit is re-raised in the calling
// goroutine. Results wait for their turn in batches: memory holds at most
// a few hundred per worker.
func ListMap[T any](ctx context.Context, r Reader, prefix string, opts ListOptions, workers int, mapFn func(kv *KeyValue) (T, error), emit func(T) error) (int64, error) {
	b, ok := r.(*Bolt)
	if !ok {
		return r.List(ctx, prefix, opts, func(kv *KeyValue) error {
			t, err := mapFn(kv)
			if err != nil {
				return err
			}
			return emit(t)
		})
	}
	q, at, err := b.listQuery(prefix, opts)
	if err != nil {
		return 0, err
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if err := listParallel(ctx, b, q, workers, mapFn, emit); err != nil {
		return 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	return at, nil
}

// History calls fn for every revision of key the file holds, oldest first,
// tombstones included (Event.Deleted, KV.ModRevision the delete's
// revision). A re-created key shows each incarnation, the delete between
// them. A key the file holds no revision of gives no call and no error.
func (b *Bolt) History(ctx context.Context, key string, fn func(Event) error) (HistoryInfo, error) {
	info := HistoryInfo{CompactRevision: b.compactRevision(), Revision: b.meta.Revision}
	if err := b.events(ctx, exactKey(key), fn); err != nil {
		return info, fmt.Errorf("history %s: %w", key, err)
	}
	return info, nil
}

// ScanRevisions calls fn for every revision the file holds of every key
// under prefix (which must end in "/", or be "", as for List), in revision order,
// tombstones as Deleted events. It streams: nothing is kept between calls.
func (b *Bolt) ScanRevisions(ctx context.Context, prefix string, fn func(Event) error) error {
	m, err := prefixMatch(prefix)
	if err != nil {
		return fmt.Errorf("scan revisions: %w", err)
	}
	if err := b.events(ctx, m, fn); err != nil {
		return fmt.Errorf("scan revisions %s: %w", prefix, err)
	}
	return nil
}

// events calls fn with an Event for every revision of the keys m matches,
// in revision order: History's and ScanRevisions' walk.
func (b *Bolt) events(ctx context.Context, m keyMatch, fn func(Event) error) error {
	return b.view(func(tx *bolt.Tx, g *viewGuard) error {
		return forEachRevision(ctx, keyBucket(tx), m, 0, func(bk bucketKey, _, v []byte) error {
			ev, err := bk.event(v)
			if err != nil {
				return err
			}
			return g.call(func() error { return fn(ev) })
		})
	})
}

// ScanLatest calls fn once per key under prefix (which must end in "/", or
// be "", as for List), in key order, with the key's newest state in the
// file.
//
// For a live key, kv is its newest revision, deleted is false and
// deleteRev 0. A key whose newest revision is a tombstone is reported only
// when includeDeleted: deleted is true, deleteRev is the revision of the
// delete, and kv is the last live revision before it (its own ModRevision,
// CreateRevision, Version, Lease and Value), or, if the file no longer
// holds that revision, a KeyValue with only Key set. A key deleted and
// created again is live: kv is the new incarnation.
func (b *Bolt) ScanLatest(ctx context.Context, prefix string, includeDeleted bool, fn func(kv *KeyValue, deleted bool, deleteRev int64) error) error {
	q := latestQuery{includeDeleted: includeDeleted, withValues: true}
	return b.scanNewest(ctx, "scan latest", prefix, q, func(kv *KeyValue, deleteRev int64) error { return fn(kv, deleteRev != 0, deleteRev) })
}

// scanNewest is scanLatest of q under prefix at the file's revision, its
// errors named by what.
func (b *Bolt) scanNewest(ctx context.Context, what, prefix string, q latestQuery, fn func(kv *KeyValue, deleteRev int64) error) error {
	m, err := prefixMatch(prefix)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	q.match, q.atRev = m, b.meta.Revision
	if err := b.scanLatest(ctx, q, fn); err != nil {
		return fmt.Errorf("%s %s: %w", what, prefix, err)
	}
	return nil
}

// ScanDeleted calls fn once per key under prefix whose newest revision in
// the file is a tombstone, in key order, as ScanLatest with includeDeleted
// does; the live keys' values are not read.
func (b *Bolt) ScanDeleted(ctx context.Context, prefix string, fn func(kv *KeyValue, deleteRev int64) error) error {
	return b.scanNewest(ctx, "scan deleted", prefix, latestQuery{includeDeleted: true, deletedOnly: true, withValues: true}, fn)
}

// valueCopy reads key's value put at main revision mod (a revision the
// file named as the key's), copied out of the file (nil when empty).
func (b *Bolt) valueCopy(key string, mod int64) ([]byte, error) {
	var out []byte
	err := b.view(func(tx *bolt.Tx, _ *viewGuard) error {
		v, err := valueAt(keyBucket(tx).Cursor(), key, mod)
		if len(v) > 0 {
			out = bytes.Clone(v)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get %s at revision %d: %w", key, mod, err)
	}
	return out, nil
}

// Compile-time check: *Bolt is a Reader and nothing more.
var _ Reader = (*Bolt)(nil)

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
