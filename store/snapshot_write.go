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
	"os"
	"path/filepath"
	"sync"

	"github.com/etcdpvc/etcdpvc/internal/durable"
	"github.com/etcdpvc/etcdpvc/internal/newfile"
	"github.com/etcdpvc/etcdpvc/internal/regular"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"google.golang.org/protobuf/proto"
)

// SnapshotCopy is snapshot surgery: a copy of an etcd backend file (a
// snapshot or a stopped member's db) that Kubernetes objects are edited in
// offline, to be restored onto every member of a cluster with `etcdutl
// snapshot restore`. The input file is read, never written. SnapshotCopy
// implements Reader (it reads the copy, edits included) and Writer.
//
// # How an edit is stored
//
// etcd rebuilds its whole state from the "key" bucket when it opens a
// backend (mvcc.store.restore): every entry, in revision order, goes into
// the in-memory index, and the newest main revision becomes the current
// revision. An edit is therefore stored exactly as etcd stores a put: one
// new entry in "key" under the revision (main, 0), where main is one above
// the current revision (the newest revision held, or the finished or
// scheduled compaction revision when that is higher: a compaction may have
// removed the newest revisions, and etcd's current revision never goes
// below it). The value is an mvccpb.KeyValue with mod_revision = main;
// create_revision and version follow etcd's rules (an edit keeps the
// incarnation's create_revision and adds 1 to its version; a create starts
// a new incarnation at version 1, create_revision = main); the lease is the
// caller's, and must exist in the "lease" bucket, as etcd requires.
//
// Nothing else changes. "consistent_index" and "term" in "meta" are raft
// state: `etcdutl snapshot restore` overwrites them (with the index of the
// new cluster's first entries), drops the membership buckets and writes a
// new WAL, so the copy is only ever meant for that command. Copying it into
// a member's data directory instead would make the member's backend
// disagree with its WAL; OpenSnapshotCopy refuses to write into a member
// directory.
//
// The copy is opened with bbolt's NoFreelistSync, as etcd opens its
// backend on Linux. Close appends a sha256 trailer, so the result is a
// snapshot file whose integrity `etcdutl snapshot restore` verifies, even
// when the input was a member db without one.
type SnapshotCopy struct {
	*Bolt
	in string

	mu      sync.Mutex
	writes  int
	closed  bool
	partial bool
}

// MarkPartial records that the copy holds only part of a change: Close
// then leaves it without the sha256 trailer, so that etcdutl does not
// restore it as a finished snapshot.
func (c *SnapshotCopy) MarkPartial() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial = true
}

// ErrMemberDir means a snapshot copy was to be written into an etcd
// member's data directory (newfile.ErrMemberDir).
var ErrMemberDir = newfile.ErrMemberDir

// ErrOutputExists means the output file of a snapshot copy already exists
// (newfile.ErrExists).
var ErrOutputExists = newfile.ErrExists

// OpenSnapshotCopy opens in with OpenBolt (so a file locked by a running
// etcd fails fast with ErrLocked and a snapshot's sha256 trailer is
// verified, as opts say), copies its bbolt pages to out, a new file
// (newfile.Create: nothing may be there, nor may it be in a member's data
// directory), and opens the copy for editing. in is never written. out is
// created with mode 0600 and removed again if opening fails.
//
// Close finishes the copy: after at least one write it appends the sha256
// trailer; without any write it removes out, since an unedited copy is no
// result.
func OpenSnapshotCopy(in, out string, opts BoltOptions) (c *SnapshotCopy, err error) {
	if err := checkSnapshotOut(in, out); err != nil {
		return nil, err
	}
	src, err := OpenBolt(in, opts)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	f, err := newfile.Create(out)
	if err != nil {
		return nil, fmt.Errorf("snapshot copy: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(out)
		}
	}()
	if err := copyBoltPages(src, in, f); err != nil {
		f.Close()
		return nil, fmt.Errorf("snapshot copy %s → %s: %w", in, out, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("snapshot copy %s: %w", out, err)
	}
	fi, err := os.Stat(out)
	if err != nil {
		return nil, fmt.Errorf("snapshot copy: %w", err)
	}
	db, err := bolt.Open(out, 0o600, &bolt.Options{
		Timeout:        defaultBoltLockTimeout,
		NoFreelistSync: true,
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot copy %s: open for writing: %w: %w", out, ErrCorrupt, err)
	}
	b := &Bolt{path: out, db: db}
	if err := db.View(func(tx *bolt.Tx) error { return b.readMeta(tx, fi.Size()) }); err != nil {
		db.Close()
		return nil, err
	}
	return &SnapshotCopy{Bolt: b, in: in}, nil
}

// checkSnapshotOut refuses out as the new file of a snapshot of in
// (newfile.Check), before in is read.
func checkSnapshotOut(in, out string) error {
	if out == "" {
		return fmt.Errorf("snapshot copy of %s: no output file", in)
	}
	if err := newfile.Check(out); err != nil {
		return fmt.Errorf("snapshot copy: %w", err)
	}
	return nil
}

// copyBoltPages copies in's bbolt pages (the whole file without a
// snapshot trailer) to f and fsyncs f. When src verified a trailer, the
// bytes copied are hashed again and must match it: the input cannot have
// changed between the check and the copy.
func copyBoltPages(src *Bolt, in string, f *os.File) error {
	snap := src.Snapshot()
	n := snap.Size
	if snap.IsSnapshot {
		n -= snapshotTrailerSize
	}
	r, err := regular.Open(in)
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	copied, err := io.CopyBuffer(io.MultiWriter(f, h), io.NewSectionReader(r, 0, n), make([]byte, 1<<20))
	if err != nil {
		return err
	}
	if copied != n {
		return fmt.Errorf("copied %d bytes of %d: the input changed during the copy", copied, n)
	}
	if snap.Verified {
		if got := hex.EncodeToString(h.Sum(nil)); got != snap.SHA256 {
			return &HashMismatchError{Path: in, Trailer: snap.SHA256, Computed: got}
		}
	}
	return f.Sync()
}

// Input returns the path of the file the copy was made from.
func (c *SnapshotCopy) Input() string { return c.in }

// Path returns the path of the copy.
func (c *SnapshotCopy) Path() string { return c.path }

// Writes returns the number of writes made to the copy.
func (c *SnapshotCopy) Writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

// Written returns the file Close finished: its trailer, the file's
// sha256 and size (the zero SnapshotInfo before, or without a write).
func (c *SnapshotCopy) Written() SnapshotInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		return SnapshotInfo{}
	}
	return c.snap
}

// leaseKey is a lease's key in the "lease" bucket (schema.leaseIDToBytes).
func leaseKey(id int64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, uint64(id))
	return k
}

// CompareAndSwap stores value at key as a new revision of the copy if the
// key's newest revision in the copy is expect (0: the key must not exist,
// or its newest revision is a deletion). The put carries lease, which must
// exist in the copy's "lease" bucket (else the error wraps
// ErrLeaseNotFound). It returns the new revision, or a *ConflictError and
// writes nothing. The write is committed (fsynced) before it returns.
func (c *SnapshotCopy) CompareAndSwap(ctx context.Context, key string, expect int64, value []byte, lease int64) (int64, error) {
	return c.write(ctx, key, expect, false, value, lease)
}

// CompareAndDelete deletes key in the copy if its newest revision is
// expect (not 0): a new revision holding the key's tombstone, as etcd
// writes one (the key alone, the revision marked 't'). It returns that
// revision, or a *ConflictError and writes nothing. The write is
// committed (fsynced) before it returns.
func (c *SnapshotCopy) CompareAndDelete(ctx context.Context, key string, expect int64) (int64, error) {
	if expect == 0 {
		return 0, fmt.Errorf("delete %s in snapshot copy %s: a delete compares against the key's revision, not its absence", key, c.path)
	}
	return c.write(ctx, key, expect, true, nil, 0)
}

// write is CompareAndSwap (del false) and CompareAndDelete (del true).
func (c *SnapshotCopy) write(ctx context.Context, key string, expect int64, del bool, value []byte, lease int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	verb := "write"
	if del {
		verb = "delete"
	}
	if c.closed {
		return 0, fmt.Errorf("%s %s in snapshot copy %s: closed", verb, key, c.path)
	}
	if key == "" {
		return 0, fmt.Errorf("%s in snapshot copy %s: empty key", verb, c.path)
	}
	var newRev int64
	err := c.db.Update(func(tx *bolt.Tx) error {
		kb := tx.Bucket(schema.Key.Name())
		if kb == nil {
			return fmt.Errorf("%w: no %q bucket", ErrCorrupt, schema.Key.Name())
		}
		var (
			cur     int64 // newest live mod revision, 0: absent
			curKV   *KeyValue
			created int64
			version int64
		)
		err := forEachRevision(ctx, kb, exactKey(key), 0, func(bk bucketKey, _, v []byte) error {
			if bk.tombstone {
				cur, curKV, created, version = 0, nil, 0, 0
				return nil
			}
			raw, err := decodeKV(v)
			if err != nil {
				return fmt.Errorf("%v: %w", bk, err)
			}
			cur, created, version = bk.main, raw.create, raw.version
			curKV = raw.keyValue(true)
			return nil
		})
		if err != nil {
			return err
		}
		if cur != expect {
			return &ConflictError{Key: key, Expected: expect, Current: cur, CurrentValue: curKV}
		}
		if lease != 0 {
			lb := tx.Bucket(schema.Lease.Name())
			if lb == nil || lb.Get(leaseKey(lease)) == nil {
				return fmt.Errorf("lease %x: %w", lease, ErrLeaseNotFound)
			}
		}
		rev, err := currentRevision(tx, kb)
		if err != nil {
			return err
		}
		newRev = rev + 1
		if del {
			// etcd's tombstone: the key alone, at a revision marked 't'.
			enc, err := proto.Marshal(&mvccpb.KeyValue{Key: []byte(key)})
			if err != nil {
				return fmt.Errorf("encode mvccpb.KeyValue: %w", err)
			}
			rk := make([]byte, markedRevBytesLen)
			bucketKey{main: newRev, tombstone: true}.put(rk)
			return kb.Put(rk, enc)
		}
		if cur == 0 {
			created, version = newRev, 0
		}
		enc, err := proto.Marshal(&mvccpb.KeyValue{
			Key:            []byte(key),
			CreateRevision: created,
			ModRevision:    newRev,
			Version:        version + 1,
			Value:          bytes.Clone(value),
			Lease:          lease,
		})
		if err != nil {
			return fmt.Errorf("encode mvccpb.KeyValue: %w", err)
		}
		rk := make([]byte, revBytesLen)
		bucketKey{main: newRev}.put(rk)
		return kb.Put(rk, enc)
	})
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			return 0, err
		}
		return 0, fmt.Errorf("%s %s in snapshot copy %s: %w", verb, key, c.path, err)
	}
	c.writes++
	c.meta.Revision = newRev
	return newRev, nil
}

// Close closes the copy. After at least one write it appends the sha256
// trailer of the bbolt pages (padding with zeros first, should the file
// not end on a 512-byte boundary, so that etcd recognizes the trailer),
// fsyncs the file and its directory; without any write it removes the
// copy; marked partial, it leaves it as bbolt wrote it, without trailer.
// Close is idempotent; the error is the first close's.
func (c *SnapshotCopy) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("close snapshot copy %s: %w", c.path, err)
	}
	if c.writes == 0 {
		if err := os.Remove(c.path); err != nil {
			return fmt.Errorf("remove unedited snapshot copy: %w", err)
		}
		return nil
	}
	if c.partial {
		return nil
	}
	snap, err := appendTrailer(c.path)
	if err != nil {
		return fmt.Errorf("finish snapshot copy %s: %w (the edits are in the file, but `etcdutl snapshot restore` needs --skip-hash-check to read it)", c.path, err)
	}
	c.snap = snap
	return nil
}

// appendTrailer pads path to a multiple of 512 bytes, appends the sha256
// of its contents and fsyncs it and its directory. It returns the file
// as a verified snapshot: the trailer, the whole file's sha256 (hashed
// on with the trailer, no further read) and the final size.
func appendTrailer(path string) (SnapshotInfo, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return SnapshotInfo{}, err
	}
	size := fi.Size()
	if pad := (512 - size%512) % 512; pad != 0 {
		if err := f.Truncate(size + pad); err != nil {
			return SnapshotInfo{}, err
		}
		size += pad
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, size), make([]byte, 1<<20)); err != nil {
		return SnapshotInfo{}, err
	}
	sum := h.Sum(nil)
	if _, err := f.WriteAt(sum, size); err != nil {
		return SnapshotInfo{}, err
	}
	if err := f.Sync(); err != nil {
		return SnapshotInfo{}, err
	}
	if err := durable.SyncDir(filepath.Dir(path)); err != nil {
		return SnapshotInfo{}, err
	}
	h.Write(sum)
	return SnapshotInfo{IsSnapshot: true, SHA256: hex.EncodeToString(sum), FileSHA256: hex.EncodeToString(h.Sum(nil)), Verified: true, Size: size + snapshotTrailerSize}, nil
}

// Compile-time checks.
var (
	_ Reader = (*SnapshotCopy)(nil)
	_ Writer = (*SnapshotCopy)(nil)
)
