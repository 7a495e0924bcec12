package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/server/v3/lease/leasepb"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"google.golang.org/protobuf/proto"
)

// ReplayedRevision is one revision of one key a log replay adds to a db:
// the key's state after it (a deletion's KV holds the key and its
// revision alone) and its sub revision within its main revision.
type ReplayedRevision struct {
	KV      KeyValue
	Sub     int64
	Deleted bool
}

// LeaseChange is one lease change of a log entry: a grant (TTL as etcd
// stores it), a revoke, or a checkpoint of the TTL remaining.
type LeaseChange struct {
	ID         int64
	Revoke     bool
	Checkpoint bool
	// TTL is a grant's TTL, Remaining a checkpoint's, in seconds.
	TTL, Remaining int64
	// AskedTTL is the TTL a grant asked for when etcd raised it to its
	// minimum, 0 otherwise; Index is the raft entry of the change, where
	// a log tells it.
	AskedTTL int64
	Index    uint64
}

// PointInTime is what WritePointInTime adds to a db to make it the
// keyspace at a later raft index: the revisions (in revision order), the
// lease changes (in log order), the compaction and the raft position.
type PointInTime struct {
	ConsistentIndex, Term uint64
	// Revision is the keyspace's revision at ConsistentIndex.
	Revision int64
	// Compaction is the compaction revision at ConsistentIndex (0: none).
	Compaction int64
	Leases     []LeaseChange
	// Revisions calls fn with each revision to add, in revision order.
	Revisions func(ctx context.Context, fn func(ReplayedRevision) error) error
}

// PointInTimeWritten describes the snapshot WritePointInTime wrote.
type PointInTimeWritten struct {
	// Path is the file; FileSHA256 its sha256, as sha256sum prints it;
	// TrailerSHA256 its trailer, the sha256 of all but its last 32 bytes.
	Path          string `json:"path"`
	FileSHA256    string `json:"fileSHA256"`
	TrailerSHA256 string `json:"trailerSHA256"`
	Size          int64  `json:"size"`
	// Revision is the snapshot's revision; Added the revisions added to
	// the db's, Compacted those the compaction removed.
	Revision  int64 `json:"revision"`
	Added     int   `json:"revisionsAdded"`
	Compacted int   `json:"revisionsCompacted"`
	// Leases is the number of leases the snapshot holds.
	Leases int `json:"leases"`
	// CheckpointsSkipped counts lease checkpoints not stored: etcd
	// persists them only from cluster version 3.6 on.
	CheckpointsSkipped int `json:"leaseCheckpointsSkipped,omitempty"`
}

// pitBatchBytes bounds the values one write transaction of
// WritePointInTime holds.
const pitBatchBytes = 32 << 20

// WritePointInTime writes, to out (which must not exist), an etcd
// snapshot file holding base's keyspace carried forward by p: the keyspace
// etcd itself held at raft index p.ConsistentIndex, when p is a replay of
// the log entries after base's consistent index up to it.
//
// The file is base's bbolt pages copied (checked against base's sha256
// trailer when base is a snapshot), then, as etcd's apply loop writes
// them: every revision of p in the "key" bucket under its revision key
// (main, sub; a deletion marked 't' holding mvccpb.KeyValue{Key}), with
// the mvccpb.KeyValue etcd marshals (create and mod revision, version,
// value, lease); a compaction at p.Compaction applied as etcd's
// scheduleCompaction does (at or below it only each key's newest revision
// stays, unless it is a deletion), "scheduledCompactRev" and
// "finishedCompactRev" set to it; the lease grants, revokes and (from
// cluster version 3.6) checkpoints in "lease"; "consistent_index" and
// "term" in "meta" set to p's. The membership, cluster, alarm and auth
// buckets stay as base holds them: `etcdutl snapshot restore` writes a
// new membership. Finally the sha256 trailer `etcdctl snapshot save`
// writes, so that `etcdutl snapshot status` and `restore` accept it.
//
// It is written as a new file (WriteSnapshotFile: nothing may be at out,
// nor may it be in a member's data directory; on failure nothing is left
// behind). base is never written. With
// opts.HashCacheDir, the trailer written is remembered as verified, so
// that opening the file next does not hash it again.
func WritePointInTime(ctx context.Context, base *Bolt, out string, p PointInTime, opts BoltOptions) (*PointInTimeWritten, error) {
	in := base.Path()
	w := &PointInTimeWritten{Path: out}
	snap, err := WriteSnapshotFile(out, func(tmp string) error {
		f, err := os.OpenFile(tmp, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if err := copyBoltPages(base, in, f); err != nil {
			f.Close()
			return fmt.Errorf("copy %s: %w", in, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
		return writePointInTime(ctx, base, tmp, p, w)
	})
	if err != nil {
		return nil, fmt.Errorf("point-in-time snapshot %s: %w", out, err)
	}
	w.FileSHA256, w.TrailerSHA256, w.Size = snap.FileSHA256, snap.SHA256, snap.Size
	if opts.HashCacheDir != "" {
		rememberVerified(opts.HashCacheDir, out, snap.SHA256, snap.FileSHA256)
	}
	return w, nil
}

// writePointInTime applies p to the bbolt copy at path.
func writePointInTime(ctx context.Context, base *Bolt, path string, p PointInTime, w *PointInTimeWritten) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true, NoFreelistSync: true})
	if err != nil {
		return fmt.Errorf("open the copy: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = db.Close()
		}
	}()
	last := base.Meta().Revision
	if err := addRevisions(ctx, db, p, last, w); err != nil {
		return err
	}
	if p.Compaction > base.Meta().CompactRevision {
		n, err := compactKeyBucket(ctx, db, p.Compaction)
		if err != nil {
			return fmt.Errorf("compact at revision %d: %w", p.Compaction, err)
		}
		w.Compacted = n
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := applyLeaseChanges(tx, p.Leases, w); err != nil {
			return err
		}
		mb := tx.Bucket(schema.Meta.Name())
		if mb == nil {
			return fmt.Errorf("%w: no %q bucket", ErrCorrupt, schema.Meta.Name())
		}
		u64 := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
		if err := mb.Put(schema.MetaConsistentIndexKeyName, u64(p.ConsistentIndex)); err != nil {
			return err
		}
		if p.Term != 0 {
			if err := mb.Put(schema.MetaTermKeyName, u64(p.Term)); err != nil {
				return err
			}
		}
		if p.Compaction > 0 {
			rk := make([]byte, revBytesLen)
			bucketKey{main: p.Compaction}.put(rk)
			for _, k := range [][]byte{schema.ScheduledCompactKeyName, schema.FinishedCompactKeyName} {
				if err := mb.Put(k, rk); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.Revision = max(last, p.Revision)
	if err := db.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	closed = true
	return db.Close()
}

// addRevisions writes p's revisions into "key", in batches, checking that
// they follow base's newest revision in order.
func addRevisions(ctx context.Context, db *bolt.DB, p PointInTime, last int64, w *PointInTimeWritten) error {
	type item struct {
		k, v []byte
	}
	var batch []item
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := db.Update(func(tx *bolt.Tx) error {
			kb := tx.Bucket(schema.Key.Name())
			if kb == nil {
				return fmt.Errorf("%w: no %q bucket", ErrCorrupt, schema.Key.Name())
			}
			kb.FillPercent = 0.9 // etcd's for its appends
			for _, it := range batch {
				if err := kb.Put(it.k, it.v); err != nil {
					return err
				}
			}
			return nil
		})
		w.Added += len(batch)
		batch, size = batch[:0], 0
		return err
	}
	var prev bucketKey
	started := false
	err := p.Revisions(ctx, func(rr ReplayedRevision) error {
		bk := bucketKey{main: rr.KV.ModRevision, sub: rr.Sub, tombstone: rr.Deleted}
		if started && (bk.main < prev.main || bk.main == prev.main && bk.sub <= prev.sub) || !started && bk.main <= last {
			return fmt.Errorf("revision %d.%d of %s does not follow %d.%d (the db's revision is %d): the replay is not in revision order", bk.main, bk.sub, rr.KV.Key, prev.main, prev.sub, last)
		}
		prev, started = bk, true
		var m *mvccpb.KeyValue
		if rr.Deleted {
			// etcd's tombstone: the key alone.
			m = &mvccpb.KeyValue{Key: []byte(rr.KV.Key)}
		} else {
			m = &mvccpb.KeyValue{Key: []byte(rr.KV.Key), CreateRevision: rr.KV.CreateRevision, ModRevision: rr.KV.ModRevision,
				Version: rr.KV.Version, Value: rr.KV.Value, Lease: rr.KV.Lease}
		}
		v, err := proto.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode mvccpb.KeyValue of %s: %w", rr.KV.Key, err)
		}
		n := revBytesLen
		if rr.Deleted {
			n = markedRevBytesLen
		}
		k := make([]byte, n)
		bk.put(k)
		batch = append(batch, item{k, v})
		if size += len(v); size >= pitBatchBytes {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// compactKeyBucket removes, as etcd's compaction at revision at does
// (treeIndex.Compact, then scheduleCompaction), every revision at or
// below at except each key's newest there when that is not a deletion.
// It returns the number of revisions removed.
func compactKeyBucket(ctx context.Context, db *bolt.DB, at int64) (int, error) {
	// Pass 1: each key's newest revision at or below at.
	newest := map[string][]byte{}
	err := db.View(func(tx *bolt.Tx) error {
		return walkRevisions(ctx, tx.Bucket(schema.Key.Name()).Cursor(), nil, at, func(bk bucketKey, k, v []byte) error {
			key, err := entryKey(bk, v)
			if err != nil {
				return err
			}
			if old, ok := newest[string(key)]; ok && len(old) == len(k) {
				copy(old, k)
			} else {
				newest[string(key)] = bytes.Clone(k)
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	// Pass 2: remove the rest, in batches.
	removed := 0
	var from []byte
	for {
		var del [][]byte
		done := true
		err := db.View(func(tx *bolt.Tx) error {
			return walkRevisions(ctx, tx.Bucket(schema.Key.Name()).Cursor(), from, at, func(bk bucketKey, k, v []byte) error {
				key, err := entryKey(bk, v)
				if err != nil {
					return err
				}
				if nk := newest[string(key)]; !bytes.Equal(nk, k) || bk.tombstone {
					del = append(del, bytes.Clone(k))
					if len(del) == 100_000 {
						done = false
						from = append(bytes.Clone(k), 0)
						return errStopWalk
					}
				}
				return nil
			})
		})
		if err != nil {
			return removed, err
		}
		if len(del) > 0 {
			err := db.Update(func(tx *bolt.Tx) error {
				kb := tx.Bucket(schema.Key.Name())
				for _, k := range del {
					if err := kb.Delete(k); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return removed, err
			}
			removed += len(del)
		}
		if done {
			return removed, ctx.Err()
		}
	}
}

// applyLeaseChanges applies lease grants, revokes and checkpoints, in
// order, to the "lease" bucket, as etcd's lessor persists them.
func applyLeaseChanges(tx *bolt.Tx, changes []LeaseChange, w *PointInTimeWritten) error {
	lb, err := tx.CreateBucketIfNotExists(schema.Lease.Name())
	if err != nil {
		return err
	}
	persistCheckpoints := clusterAtLeast36(tx)
	for _, c := range changes {
		k := leaseKey(c.ID)
		switch {
		case c.Revoke:
			if err := lb.Delete(k); err != nil {
				return err
			}
		case c.Checkpoint:
			old := lb.Get(k)
			if old == nil {
				continue // etcd checkpoints only a lease it holds
			}
			if !persistCheckpoints {
				w.CheckpointsSkipped++
				continue
			}
			var l leasepb.Lease
			if err := proto.Unmarshal(old, &l); err != nil {
				return fmt.Errorf("lease %x: %w: %w", c.ID, ErrCorrupt, err)
			}
			l.RemainingTTL = c.Remaining
			v, err := proto.Marshal(&l)
			if err != nil {
				return err
			}
			if err := lb.Put(k, v); err != nil {
				return err
			}
		default:
			v, err := proto.Marshal(&leasepb.Lease{ID: c.ID, TTL: c.TTL})
			if err != nil {
				return err
			}
			if err := lb.Put(k, v); err != nil {
				return err
			}
		}
	}
	w.Leases = lb.Stats().KeyN
	return nil
}

// clusterAtLeast36 reports whether the "cluster" bucket records a cluster
// version of 3.6 or later (etcd's lessor persists checkpoints from then).
func clusterAtLeast36(tx *bolt.Tx) bool {
	cb := tx.Bucket([]byte("cluster"))
	if cb == nil {
		return false
	}
	v := string(cb.Get([]byte("clusterVersion")))
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	return err1 == nil && err2 == nil && (ma > 3 || ma == 3 && mi >= 6)
}
