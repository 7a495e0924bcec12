package salvage

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/etcdpvc/etcdpvc/internal/newfile"
	"github.com/etcdpvc/etcdpvc/internal/regular"
	"github.com/etcdpvc/etcdpvc/store"
)

// ErrInputChanged means a value read again to be written differs from the
// one the scan checked: the input changed between the scan and the write.
var ErrInputChanged = errors.New("the input changed since it was scanned")

// Written describes a snapshot file WriteSnapshot wrote.
type Written struct {
	// Path is the snapshot file, FileSHA256 its sha256 (hex, as sha256sum
	// prints it), TrailerSHA256 its trailer (the sha256 of all but its
	// last 32 bytes), Size its size.
	Path          string
	FileSHA256    string
	TrailerSHA256 string
	Size          int64
	// Revisions is the number of revisions written to "key" (one per
	// recovered key), Leases and Members the items of those buckets.
	Revisions, Leases, Members int
	// CompactRevision is the compaction revision written to "meta" (see
	// WriteSnapshot).
	CompactRevision int64
}

// batchBytes bounds the values one write transaction holds.
const batchBytes = 32 << 20

// WriteSnapshot writes the salvage to path, which must not exist, as an
// etcd snapshot file: a new bbolt database with etcd's buckets "key",
// "meta", "lease" and "members", followed by the sha256 trailer, ready for
// `etcdutl snapshot restore`. "key" holds each recovered key's kept
// revision under its original revision key, with its original
// mvccpb.KeyValue bytes (read again from the input and checked against
// the scan); "lease" and "members" the items found.
//
// "meta" holds finishedCompactRev and scheduledCompactRev, both the
// highest of the compaction salvaged and the highest revision the scan saw
// (Report.MaxRevisionSeen, MaxRevisionNamed): the file holds one revision
// per key, so a read at any older revision would miss the keys changed
// since, and a compaction at the newest revision makes etcd refuse such
// reads (as `etcdutl snapshot restore --mark-compacted` does); it also
// keeps etcd's revision from going below the highest one seen. raft state
// (consistent_index, term) is not written: `etcdutl snapshot restore`
// writes its own.
//
// The file is written to a temporary file in path's directory (mode
// 0600), fsynced, linked to path (never replacing a file) and the
// directory fsynced; on failure nothing is left behind.
func (res *Result) WriteSnapshot(ctx context.Context, path string) (*Written, error) {
	w := &Written{Path: path, CompactRevision: res.compact}
	snap, err := store.WriteSnapshotFile(path, func(tmp string) error { return res.writeDB(ctx, tmp, w, res.kept) })
	if err != nil {
		return nil, fmt.Errorf("salvage: write %s: %w", path, err)
	}
	w.FileSHA256, w.TrailerSHA256, w.Size = snap.FileSHA256, snap.SHA256, snap.Size
	return w, nil
}

// writeDB writes the bbolt database to path (an empty file): res's
// leases, members and compaction, and the revisions kept, in order.
func (res *Result) writeDB(ctx context.Context, path string, w *Written, kept []keptRev) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true, InitialMmapSize: int(min(mmapHint(kept), 1<<30))})
	if err != nil {
		return fmt.Errorf("create bbolt file: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = db.Close()
		}
	}()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{bucketKey, bucketMeta, bucketLease, bucketMembers} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		mb := tx.Bucket([]byte(bucketMeta))
		if res.compact > 0 {
			rk := revKey(Revision{Main: res.compact}, false)
			if err := mb.Put([]byte(metaScheduledCompact), rk); err != nil {
				return err
			}
			if err := mb.Put([]byte(metaFinishedCompact), rk); err != nil {
				return err
			}
		}
		for _, it := range res.leases {
			if err := tx.Bucket([]byte(bucketLease)).Put(it.key, it.value); err != nil {
				return err
			}
		}
		for _, it := range res.members {
			if err := tx.Bucket([]byte(bucketMembers)).Put(it.key, it.value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.Leases, w.Members = len(res.leases), len(res.members)

	// The values of the next transaction are read (and checked) while
	// the one before is written: two arenas, each held by one batch until
	// its transaction is committed (bbolt keeps the values given to Put
	// until then).
	rctx, cancel := context.WithCancel(ctx)
	free := make(chan []byte, 2)
	free <- make([]byte, batchBytes)
	free <- make([]byte, batchBytes)
	batches := make(chan batch, 1)
	go res.readBatches(rctx, kept, free, batches)
	defer func() {
		cancel()
		for range batches {
		}
	}()
	for b := range batches {
		if err := ctx.Err(); err != nil {
			return err
		}
		if b.err != nil {
			return b.err
		}
		err := db.Update(func(tx *bolt.Tx) error {
			kb := tx.Bucket([]byte(bucketKey))
			kb.FillPercent = 0.9 // etcd's for the "key" bucket's appends
			for j, v := range b.vals {
				if err := kb.Put(revKey(kept[b.lo+j].rev, false), v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		free <- b.arena
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w.Revisions = len(kept)
	// No fsync here: the trailer's (store.WriteSnapshotFile) covers the
	// pages too, and the file gets its name only after it; one fsync of
	// the whole file, not two, and the pages are written back while the
	// trailer's hash reads them.
	closed = true
	if err := db.Close(); err != nil {
		return fmt.Errorf("close bbolt file: %w", err)
	}
	return nil
}

// batch is the revisions of one write transaction, kept[lo:lo+len(vals)],
// read and checked into vals, which alias arena; err is why the next one
// could not be (the batch is not written).
type batch struct {
	lo    int
	vals  [][]byte
	arena []byte
	err   error
}

// readBatches reads the revisions kept in order into batches for out,
// each into an arena from free, of at most batchBytes of values (a larger
// value alone in a batch of its own), and closes out when done, when a
// read fails, or when ctx ends.
func (res *Result) readBatches(ctx context.Context, kept []keptRev, free <-chan []byte, out chan<- batch) {
	defer close(out)
	wr := newWindowReader(res.r, res.size)
	wr.setPlan(func(i int) (int64, int, bool) {
		if i >= len(kept) {
			return 0, 0, false
		}
		return kept[i].off, kept[i].n, true
	})
	for i := 0; i < len(kept); {
		var b batch
		select {
		case b.arena = <-free:
		case <-ctx.Done():
			return
		}
		b.lo = i
		used := 0
	fill:
		for ; i < len(kept); i++ {
			k := kept[i]
			var buf []byte
			switch {
			case k.n > len(b.arena):
				if used > 0 {
					break fill // the next batch takes it alone
				}
				buf = make([]byte, k.n)
			case used+k.n > len(b.arena):
				break fill
			default:
				buf = b.arena[used : used+k.n : used+k.n]
			}
			used += k.n
			if err := res.readKept(wr, k, buf); err != nil {
				b.err = err
				out <- b
				return
			}
			b.vals = append(b.vals, buf)
			if k.n > len(b.arena) {
				i++
				break
			}
		}
		out <- b
	}
}

// readKept reads a kept revision's mvccpb.KeyValue from r (the input,
// through a window) into buf and checks it is the one the scan kept.
func (res *Result) readKept(r io.ReaderAt, k keptRev, buf []byte) error {
	n, err := r.ReadAt(buf, k.off)
	if n != len(buf) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("read revision %s at offset %d: %w", k.rev, k.off, err)
	}
	if crc32.Checksum(buf, castagnoli) != k.sum {
		return fmt.Errorf("revision %s at offset %d: %w", k.rev, k.off, ErrInputChanged)
	}
	// The checksum matched; the bytes are parsed again all the same, by
	// the scan's rule (parseKV, checkKV), so that what is written is the
	// mvccpb.KeyValue of that revision even if two contents collide.
	if x, ok := parseKV(buf); !ok || !checkKV(x, k.rev, false) {
		return fmt.Errorf("revision %s at offset %d: not the mvccpb.KeyValue of that revision", k.rev, k.off)
	}
	return nil
}

// SalvageFile scans the file in (opened read-only, never written) and,
// when out is not "", writes the salvage there (see WriteSnapshot); an
// existing out is refused before the scan. The file and the Report are
// those of Scan and WriteSnapshot, byte for byte; the scan's last step
// runs while the file is written (salvageTo). It returns the scan's Result
// (with its Report) even when the write fails, and nil when the scan
// fails. The input is closed when it returns: the Result is for its
// Report (its WriteSnapshot would fail).
func SalvageFile(ctx context.Context, in, out string, opts Options) (*Result, *Written, error) {
	if out != "" {
		if err := newfile.Check(out); err != nil {
			return nil, nil, fmt.Errorf("salvage: write %w", err)
		}
	}
	f, err := regular.Open(in)
	if err != nil {
		return nil, nil, fmt.Errorf("salvage: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("salvage: %w", err)
	}
	if dir := opts.HashCacheDir; dir != "" {
		opts.trailerKnown = func(trailer string) bool {
			now, err := f.Stat()
			return err == nil && store.TrailerVerifiedEarlier(dir, in, now, trailer)
		}
		opts.trailerVerified = func(trailer, fileSum string) { store.RememberTrailerVerified(dir, in, fi, trailer, fileSum) }
	}
	if out == "" {
		res, err := Scan(ctx, f, fi.Size(), opts)
		if err != nil {
			return nil, nil, fmt.Errorf("salvage %s: %w", in, err)
		}
		return res, nil, nil
	}
	res, w, err := salvageTo(ctx, f, fi.Size(), opts, out)
	if res == nil {
		return nil, nil, fmt.Errorf("salvage %s: %w", in, err)
	}
	return res, w, err
}

// salvageTo is Scan, then WriteSnapshot to out, with finish made while
// the file is written when it can be: when no value failed the judge,
// every key the judge judged keeps its newest revision, and those are
// written (planned, see judgePlanned) while finish runs. The file is then
// the one WriteSnapshot would write of Scan's Result: what finish keeps
// is compared with what was written before the file gets its name, and
// when they differ it is written again from the Result. It fails as Scan
// does (no Result), or returns the Result with WriteSnapshot's error.
func salvageTo(ctx context.Context, r io.ReaderAt, size int64, opts Options, out string) (*Result, *Written, error) {
	s, err := scanIndex(ctx, r, size, opts)
	if err != nil {
		return nil, nil, err
	}
	res := s.newResult()
	planned, err := s.judgePlanned()
	if err != nil {
		return nil, nil, err
	}
	w := &Written{Path: out, CompactRevision: res.compact}
	var scanErr error
	ended := false
	snap, err := store.WriteSnapshotFile(out, func(tmp string) error {
		ended = true
		if s.judgedBad() {
			// What is kept is known only once finish has run.
			if scanErr = s.end(res); scanErr != nil {
				return scanErr
			}
			return res.writeDB(ctx, tmp, w, res.kept)
		}
		done := make(chan error, 1)
		go func() { done <- s.end(res) }()
		werr := res.writeDB(ctx, tmp, w, planned)
		if scanErr = <-done; scanErr != nil {
			return scanErr
		}
		if slices.Equal(res.kept, planned) || ctx.Err() != nil {
			return werr
		}
		// Not what finish keeps (a key deleted at its newest revision, a
		// revision held by two keys): written again, also when writing
		// what was planned failed (on a revision finish may not keep:
		// the failure is then that of writing what it keeps, or none).
		if err := os.Truncate(tmp, 0); err != nil {
			return err
		}
		*w = Written{Path: out, CompactRevision: res.compact}
		return res.writeDB(ctx, tmp, w, res.kept)
	})
	if scanErr != nil {
		return nil, nil, scanErr
	}
	if !ended {
		// The write failed before it began (its temporary file).
		if err := s.end(res); err != nil {
			return nil, nil, err
		}
	}
	if err != nil {
		return res, nil, fmt.Errorf("salvage: write %s: %w", out, err)
	}
	w.FileSHA256, w.TrailerSHA256, w.Size = snap.FileSHA256, snap.SHA256, snap.Size
	return res, w, nil
}

// mmapHint is the size bbolt maps the new file at from the start (its
// InitialMmapSize): about what the kept values take in pages, so that it
// is not mapped again and again as the file grows. writeDB caps it at
// 1 GiB (an int on every platform; bbolt grows by 1 GiB steps past it).
func mmapHint(kept []keptRev) int64 {
	var n int64
	for _, k := range kept {
		n += int64(k.n) + 48 // the revision key and the page element
	}
	return n + n/4 + 1<<20
}
