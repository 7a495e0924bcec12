package salvage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
)

// ErrNotBolt means the input holds no recognisable bbolt page: no meta
// page verifies and no page size gives consistent page headers.
var ErrNotBolt = errors.New("not a bbolt file: no meta page verifies and no page size gives consistent page headers")

// Options tunes Scan.
type Options struct {
	// Prefix is the apiserver's etcd prefix, used to group keys by
	// resource in the report (default "/registry").
	Prefix string
	// Readable checks a revision's stored value (the KeyValue's value, the
	// bytes the apiserver wrote) for key; a revision whose value fails is
	// not kept, and the key's newest revision that passes is (nil: every
	// value passes). Each key's revisions are judged newest first, and only
	// until one passes; keys are judged on several cores, so Readable must
	// be safe for concurrent use. It must not keep value, which aliases a
	// read buffer.
	Readable func(key string, value []byte) error
	// PageSize forces the page size (0: from a meta page whose checksum
	// verifies, else detected).
	PageSize int
	// HashCacheDir, for SalvageFile, is where verified sha256 trailers
	// are remembered (store.BoltOptions.HashCacheDir): the trailer of an
	// input found there, the same file unchanged since (size, mtime,
	// ctime, inode, device), is not hashed again, unless the scan finds
	// the file damaged in any way (then it is hashed after all); one the
	// scan verifies is recorded. Scan, which has no file to name, ignores
	// it.
	HashCacheDir string

	// trailerKnown, set by SalvageFile, reports whether the trailer (hex)
	// was verified earlier for the input unchanged since, and
	// trailerVerified records one the scan verified, with the whole file's
	// sha256.
	trailerKnown    func(trailer string) bool
	trailerVerified func(trailer, fileSum string)
}

// scanner is one Scan's state, in the parts of the scan: the input's
// pages, the pass that reads them in order, the tree of buckets, and the
// index of what they hold.
type scanner struct {
	ctx  context.Context
	opts Options
	rep  *Report
	input
	reading
	treeWalk
	index

	// trailer is the input's sha256 trailer (nil: none), and earlier is
	// set when an earlier verification of it is taken (Options.trailerKnown)
	// instead of hashing the file in pass1.
	trailer []byte
	earlier bool
	// compactKnown and compact are the compaction salvaged (newResult).
	compactKnown bool
	compact      int64
}

// Scan reads the bbolt file r of size bytes page by page and collects
// every item of etcd's "key", "meta", "lease" and "members" buckets that
// parses, trusting neither the meta pages nor the freelist nor branch
// pages: each is used only where what it points to checks out. It reads
// the file once in order, plus the branch pages of the tree and any freed
// pages that may fill a lost part of it, and keeps in memory only the
// index of each key's newest revisions (not their values). A damaged file
// is not an error: what could not be read is in the Report. Scan fails
// only when the input holds no bbolt page at all (ErrNotBolt), cannot be
// read, or ctx ends.
func Scan(ctx context.Context, r io.ReaderAt, size int64, opts Options) (*Result, error) {
	s, err := scanIndex(ctx, r, size, opts)
	if err != nil {
		return nil, err
	}
	res := s.newResult()
	if err := s.judge(); err != nil {
		return nil, err
	}
	if err := s.end(res); err != nil {
		return nil, err
	}
	return res, nil
}

// scanIndex is the part of Scan before the judge: it reads the file and
// indexes each key's revisions.
func scanIndex(ctx context.Context, r io.ReaderAt, size int64, opts Options) (*scanner, error) {
	if opts.Prefix == "" {
		opts.Prefix = "/registry"
	}
	s := &scanner{
		ctx: ctx, opts: opts,
		rep:      &Report{ReportFile: ReportFile{FileSize: size, Trailer: "none"}},
		input:    input{r: r, size: size},
		treeWalk: treeWalk{live: map[uint64]liveRef{}, lostPages: map[uint64]bool{}},
		index:    newIndex(),
	}
	if size%512 == sha256.Size && size > sha256.Size {
		s.trailer = make([]byte, sha256.Size)
		if _, err := r.ReadAt(s.trailer, size-sha256.Size); err != nil {
			return nil, fmt.Errorf("salvage: read trailer: %w", err)
		}
		s.size -= sha256.Size
	}
	if err := s.pageSize(); err != nil {
		return nil, err
	}
	s.npages = uint64((s.size + int64(s.ps) - 1) / int64(s.ps))
	s.readBudget = 2*s.size + 1<<20
	s.rep.Pages = int64(s.npages)
	s.badPos = make([]bool, s.npages)
	if s.size%int64(s.ps) != 0 {
		s.truncated = true
		s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf("the file ends inside page %d (its size is not a multiple of the page size)", s.npages-1))
	}

	if err := s.findTree(); err != nil {
		return nil, err
	}
	var h hash.Hash
	if s.trailer != nil {
		s.earlier = opts.trailerKnown != nil && opts.trailerKnown(hex.EncodeToString(s.trailer))
		if !s.earlier {
			h = sha256.New()
		}
	}
	if err := s.pass1(h); err != nil {
		return nil, err
	}
	if h != nil {
		s.trailerResult(h, s.trailer)
	}
	// What only the tree walk and pass1 use goes before judge, whose
	// decoding makes much garbage: each collection marks less.
	s.live, s.big = nil, nil
	if err := s.pass2(); err != nil {
		return nil, err
	}
	s.orphan = nil
	return s, nil
}

// end is the part of Scan after the judge: the trailer, when an earlier
// verification was taken, and the rest of res (finish).
func (s *scanner) end(res *Result) error {
	if s.earlier {
		// The record of an earlier verification is taken only for a file
		// the scan found whole, and still unchanged now; else the file is
		// hashed after all.
		if s.whole() && s.opts.trailerKnown(hex.EncodeToString(s.trailer)) {
			s.rep.Trailer, s.rep.TrailerVerifiedEarlier = "matches", true
		} else if err := s.hashAgain(s.trailer); err != nil {
			return err
		}
	}
	s.finish(res)
	// The index is read no more (res has what the write reads): it goes
	// before the write's buffers come.
	s.keys, s.ents, s.badRevs = nil, chunked[entry]{}, nil
	return nil
}
