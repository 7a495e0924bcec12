package salvage

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/etcdpvc/etcdpvc/resource"
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

// Result is a finished scan: its Report, and the index of the revisions a
// snapshot of the salvage would hold (WriteSnapshot). It reads its values
// again from the input, which must stay open and unchanged until then.
type Result struct {
	// Report is what the scan found.
	Report *Report

	r       io.ReaderAt
	size    int64
	kept    []keptRev
	leases  []rawItem
	members []rawItem
	compact int64
}

// keptRev is one revision to write: where its mvccpb.KeyValue is in the
// input, and a checksum of it to verify the second read.
type keptRev struct {
	rev Revision
	off int64
	n   int
	sum uint32
}

// rawItem is a copied item of a small bucket.
type rawItem struct{ key, value []byte }

// liveRef is a page of the tree of buckets: its bucket and, for the "key"
// bucket, the range of revision keys its parent assigns it.
type liveRef struct {
	bucket string
	branch bool
	lo, hi []byte
	parent uint64
}

// orphan is a "key" bucket leaf page outside the tree, with the revisions
// its valid items span.
type orphan struct {
	id       uint64
	min, max Revision
}

// entry is the index of one etcd key: its newest readable put, its newest
// deletion and the unreadable puts newer than the readable one.
//
// The index holds no pointers (entries in one chunked list, their older
// revisions in another), so that the collector, run again and again
// while the judge decodes, has next to nothing of it to mark.
type entry struct {
	hasKeep    bool
	keep       keptRev
	keepOrphan bool
	keepLease  int64
	hasTomb    bool
	tomb       Revision
	// older is, with Options.Readable, the first of the revisions older
	// than keep (1-based in scanner.older; 0: none), which judge falls
	// back to when keep's value does not pass.
	older int32
}

// olderRev is one of an entry's older revisions, and the next one (as
// entry.older).
type olderRev struct {
	c    candidate
	next int32
}

// candidate is a revision of a key not yet judged (Options.Readable).
type candidate struct {
	rev    keptRev
	orphan bool
	lease  int64
}

type badRev struct {
	rev Revision
	err string
}

// keyRange is a lost range of revision keys; nil bounds are open.
type keyRange struct{ lo, hi []byte }

func (k keyRange) contains(rk []byte) bool {
	return (k.lo == nil || bytes.Compare(rk, k.lo) >= 0) && (k.hi == nil || bytes.Compare(rk, k.hi) < 0)
}

// mergeRanges returns rs sorted and merged into disjoint ranges.
func mergeRanges(rs []keyRange) []keyRange {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b keyRange) int { return bytes.Compare(a.lo, b.lo) }) // nil sorts first
	var out []keyRange
	for _, r := range rs {
		if n := len(out); n > 0 && (out[n-1].hi == nil || bytes.Compare(r.lo, out[n-1].hi) <= 0) {
			if out[n-1].hi != nil && (r.hi == nil || bytes.Compare(r.hi, out[n-1].hi) > 0) {
				out[n-1].hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// findRange reports whether [lo, hi] meets one of the disjoint sorted
// ranges rs: only the last range starting at or before hi can.
func findRange(rs []keyRange, lo, hi []byte) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].lo != nil && bytes.Compare(rs[i].lo, hi) > 0 })
	if i == 0 {
		return false
	}
	r := rs[i-1]
	return r.hi == nil || bytes.Compare(lo, r.hi) < 0
}

// shapeBranch is a branch page of revision keys found without a tree.
type shapeBranch struct {
	id    uint64
	elems []branchElem
}

// scanner is one Scan's state.
type scanner struct {
	ctx    context.Context
	r      io.ReaderAt
	size   int64 // bytes holding pages (trailer excluded)
	ps     int
	npages uint64
	opts   Options
	rep    *Report

	live map[uint64]liveRef
	tree bool
	// fillAll is set when the tree came from a meta page that is not
	// known to be the newest (the other one is damaged): pages outside
	// the tree may then hold the last transaction's writes.
	fillAll bool
	lost    []keyRange
	// lostPages are the pages the tree names that did not check out.
	lostPages map[uint64]bool
	// badPos marks unreadable page positions.
	badPos []bool
	// shapeBranches are the "key" bucket branch pages found without a
	// tree, and truncated is set when a verified meta page names pages
	// beyond the end of the file.
	shapeBranches []shapeBranch
	truncated     bool
	orphan        []orphan

	// keys indexes ents by key; older holds the entries' older revisions
	// (entry.older); badRevs, made by judge, the revisions of each entry
	// that did not pass Options.Readable.
	keys      map[string]int32
	ents      chunked[entry]
	older     chunked[olderRev]
	badRevs   [][]badRev
	metaItems map[string][]byte
	metaCI    uint64 // consistent_index of the meta items chosen (shape mode)
	leases    map[string][]byte
	members   map[string][]byte
	others    map[string]bool

	maxSeen, maxNamed int64
	walked            int
	// readBudget bounds what readPage reads (and allocates) in all, big
	// the buffer pass1 reads a page larger than its chunk into.
	readBudget int64
	big        []byte
	itemBuf    []keyItem
	// pre is what the reader parsed ahead of the page pass1 is at (see
	// preParse), nil elsewhere.
	pre *prePage

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
		ctx: ctx, r: r, size: size, opts: opts,
		rep:       &Report{FileSize: size, Trailer: "none"},
		live:      map[uint64]liveRef{},
		lostPages: map[uint64]bool{},
		keys:      map[string]int32{},
		metaItems: map[string][]byte{},
		leases:    map[string][]byte{},
		members:   map[string][]byte{},
		others:    map[string]bool{},
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

// trailerResult sets the report's Trailer from h, the sha256 of the
// file's pages, and records a match (Options.trailerVerified).
func (s *scanner) trailerResult(h hash.Hash, trailer []byte) {
	s.rep.Trailer = "mismatch"
	if bytes.Equal(h.Sum(nil), trailer) {
		s.rep.Trailer = "matches"
		if s.opts.trailerVerified != nil {
			h.Write(trailer)
			s.opts.trailerVerified(hex.EncodeToString(trailer), hex.EncodeToString(h.Sum(nil)))
		}
	}
}

// hashAgain hashes the file's pages, which pass1 did not (a trailer
// verified earlier, Options.HashCacheDir), and sets the report's Trailer.
// A read that fails leaves the trailer unverified: "mismatch", as a short
// read in pass1 would.
func (s *scanner) hashAgain(trailer []byte) error {
	h := sha256.New()
	buf := make([]byte, min(chunkBytes, s.size))
	for off := int64(0); off < s.size; {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		n, err := s.r.ReadAt(buf[:min(int64(len(buf)), s.size-off)], off)
		h.Write(buf[:n])
		off += int64(n)
		if err != nil && off < s.size {
			s.rep.Trailer = "mismatch"
			return nil
		}
	}
	s.trailerResult(h, trailer)
	return nil
}

// whole reports whether the scan found nothing wrong with the file: the
// tree of the newer meta page, every page of it read, every item valid,
// every value kept readable.
func (s *scanner) whole() bool {
	if !s.tree || s.fillAll || s.truncated || len(s.lost) > 0 || len(s.rep.OtherLost) > 0 || s.rep.PagesUnreadable > 0 || s.rep.InvalidItems > 0 {
		return false
	}
	return !s.judgedBad()
}

// pageSize sets s.ps: opts, a verified meta page, or detection.
func (s *scanner) pageSize() error {
	if s.opts.PageSize != 0 {
		if !powerOfTwo(s.opts.PageSize) || s.opts.PageSize < minPageSize || s.opts.PageSize > maxPageSize {
			return fmt.Errorf("salvage: page size %d: must be a power of two from %d to %d", s.opts.PageSize, minPageSize, maxPageSize)
		}
		s.ps, s.rep.PageSize, s.rep.PageSizeSource = s.opts.PageSize, s.opts.PageSize, "given"
		return nil
	}
	head := make([]byte, pageHeaderSize+metaSize)
	if n, _ := s.r.ReadAt(head, 0); n == len(head) {
		if m, ok := parseMeta(head); ok && powerOfTwo(int(m.pageSize)) && m.pageSize >= minPageSize && m.pageSize <= maxPageSize {
			s.ps, s.rep.PageSize, s.rep.PageSizeSource = int(m.pageSize), int(m.pageSize), "meta page 0"
			return nil
		}
	}
	cands := []int{4096, 1024, 2048, 8192, 16384, 32768, 65536}
	for _, ps := range cands {
		if n, _ := s.r.ReadAt(head, int64(ps)); n == len(head) {
			if m, ok := parseMeta(head); ok && int(m.pageSize) == ps {
				s.ps, s.rep.PageSize, s.rep.PageSizeSource = ps, ps, "meta page 1"
				return nil
			}
		}
	}
	best, bestScore := 0, 0
	hdr := make([]byte, pageHeaderSize)
	for _, ps := range cands {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		n := uint64(s.size / int64(ps))
		if n == 0 {
			continue
		}
		score := 0
		const samples = 512
		step := max(1, n/samples)
		for i := uint64(0); i < n && i/step < samples; i += step {
			if m, _ := s.r.ReadAt(hdr, int64(i)*int64(ps)); m != len(hdr) {
				break
			}
			h := parseHeader(hdr)
			if h.id == i && validFlags(h.flags) {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = ps, score
		}
	}
	if bestScore < 2 {
		return fmt.Errorf("salvage: %w", ErrNotBolt)
	}
	s.ps, s.rep.PageSize, s.rep.PageSizeSource = best, best, "detected from page headers"
	return nil
}

func powerOfTwo(n int) bool { return n > 0 && n&(n-1) == 0 }

// readPage reads page id with its overflow, bounded by the file. It
// returns nil when the position does not hold a valid page header for id.
func (s *scanner) readPage(id uint64) ([]byte, pageHeader) {
	if id >= s.npages {
		return nil, pageHeader{}
	}
	off := int64(id) * int64(s.ps)
	hdr := make([]byte, pageHeaderSize)
	if n, _ := s.r.ReadAt(hdr, off); n != len(hdr) {
		return nil, pageHeader{}
	}
	h := parseHeader(hdr)
	if h.id != id || !validFlags(h.flags) {
		return nil, h
	}
	span := s.span(off, h)
	if span > s.readBudget {
		// The pages read one by one already add up to the file twice
		// over: overflow counts that claim more than the file holds.
		return nil, h
	}
	s.readBudget -= span
	buf := make([]byte, span)
	n, _ := s.r.ReadAt(buf, off)
	return buf[:n], h
}

// span is the length of the page at off with header h: its overflow
// pages included, cut at the end of the file.
func (s *scanner) span(off int64, h pageHeader) int64 {
	span := (int64(h.overflow) + 1) * int64(s.ps)
	return min(span, s.size-off)
}

// findTree follows the tree of buckets from the newest meta page whose
// checksum verifies and whose root checks out, else the other one.
func (s *scanner) findTree() error {
	type cand struct {
		m  meta
		at int
	}
	var metas []cand
	for i := range 2 {
		buf := make([]byte, pageHeaderSize+metaSize)
		if n, _ := s.r.ReadAt(buf, int64(i)*int64(s.ps)); n != len(buf) {
			continue
		}
		h := parseHeader(buf)
		if h.id != uint64(i) || h.flags != flagMeta {
			continue
		}
		if m, ok := parseMeta(buf); ok && int(m.pageSize) == s.ps {
			metas = append(metas, cand{m, i})
			if m.pgid > s.npages {
				s.truncated = true
			}
		}
	}
	sort.Slice(metas, func(a, b int) bool { return metas[a].m.txid > metas[b].m.txid })
	for _, c := range metas {
		s.reset()
		found, err := s.walk(c.m.root, "", nil, nil, 0, 0)
		if err != nil {
			return err
		}
		if found {
			s.tree = true
			s.fillAll = len(metas) < 2 || c != metas[0]
			s.rep.Tree = fmt.Sprintf("meta page %d (txid %d)", c.at, c.m.txid)
			return nil
		}
	}
	s.reset()
	return nil
}

// reset forgets what a walk of a tree that did not check out found.
func (s *scanner) reset() {
	s.live, s.lost, s.others, s.lostPages = map[uint64]liveRef{}, nil, map[string]bool{}, map[uint64]bool{}
	s.rep.LostRanges, s.rep.OtherLost = nil, nil
	s.keys, s.ents, s.older, s.badRevs = map[string]int32{}, chunked[entry]{}, chunked[olderRev]{}, nil
	s.metaItems, s.leases, s.members = map[string][]byte{}, map[string][]byte{}, map[string][]byte{}
	s.rep.RevisionsRead, s.rep.InvalidItems, s.rep.Markers, s.maxSeen, s.maxNamed, s.metaCI = 0, 0, 0, 0, 0, 0
}

// maxDepth bounds the tree walk: a bbolt tree of the largest file has
// far fewer levels.
const maxDepth = 32

// walk follows page id of bucket ("" for the root bucket) whose keys lie
// in [lo, hi). It marks the pages it finds as live and records what is
// lost. For the root bucket it reports whether it held a "key" bucket.
func (s *scanner) walk(id uint64, bucket string, lo, hi []byte, depth int, parent uint64) (bool, error) {
	s.walked++
	if s.walked%1024 == 0 {
		if err := s.ctx.Err(); err != nil {
			return false, err
		}
	}
	fail := func(problem string) (bool, error) {
		if bucket != "" {
			s.lose(bucket, lo, hi, id, parent, problem)
		}
		return false, nil
	}
	switch {
	case depth > maxDepth:
		return fail(fmt.Sprintf("the tree is more than %d levels deep", maxDepth))
	case id < 2 || id >= s.npages:
		return fail("its page id is beyond the end of the file")
	}
	if _, dup := s.live[id]; dup {
		return fail("the page is named twice in the tree")
	}
	buf, h := s.readPage(id)
	if buf == nil {
		return fail(fmt.Sprintf("not a page (header id %d, flags %#x)", h.id, h.flags))
	}
	switch h.flags {
	case flagBranch:
		elems, bad := branchElems(buf, int(h.count))
		s.live[id] = liveRef{bucket: bucket, branch: true, parent: parent}
		sorted := slices.IsSortedFunc(elems, func(a, b branchElem) int { return bytes.Compare(a.key, b.key) })
		if bad > 0 || len(elems) == 0 || !sorted {
			s.lose(bucket, lo, hi, id, parent, fmt.Sprintf("branch page damaged (%d of %d elements unreadable or out of order)", bad, h.count))
		}
		// bbolt's tree is balanced: the children of a branch page are all
		// leaves or all branches. Leaves of a bucket other than the root
		// are not read here but in pass1's sequential read, which checks
		// their headers.
		leaves := bucket != "" && s.childrenAreLeaves(elems)
		found := false
		for i, e := range elems {
			if bucket == bucketKey {
				if rev, _, ok := parseRevKey(e.key); ok {
					s.maxNamed = max(s.maxNamed, rev.Main)
				}
			}
			// The bounds alias the page's buffer (readPage's own, which
			// nothing writes): one object a branch page for the collector
			// to mark while s.live lives, not two a child.
			clo, chi := e.key, hi
			if i == 0 {
				clo = lo
			}
			if i+1 < len(elems) {
				chi = elems[i+1].key
			}
			if leaves {
				switch _, dup := s.live[e.child]; {
				case e.child < 2 || e.child >= s.npages:
					s.lose(bucket, clo, chi, e.child, id, "its page id is beyond the end of the file")
				case dup:
					s.lose(bucket, clo, chi, e.child, id, "the page is named twice in the tree")
				default:
					s.live[e.child] = liveRef{bucket: bucket, lo: clo, hi: chi, parent: id}
				}
				continue
			}
			f, err := s.walk(e.child, bucket, clo, chi, depth+1, id)
			if err != nil {
				return false, err
			}
			found = found || f
		}
		return found, nil
	case flagLeaf:
		s.live[id] = liveRef{bucket: bucket, lo: lo, hi: hi, parent: parent}
		if bucket != "" {
			return false, nil
		}
		return s.rootLeaf(id, buf, h, depth)
	}
	return fail(fmt.Sprintf("a %s page where a branch or leaf page belongs", kindName(h.flags)))
}

// childrenAreLeaves reports whether the children of a branch page are
// leaf pages, by the header of the first child that has a valid one.
func (s *scanner) childrenAreLeaves(elems []branchElem) bool {
	hdr := make([]byte, pageHeaderSize)
	for _, e := range elems {
		if e.child >= s.npages {
			continue
		}
		if n, _ := s.r.ReadAt(hdr, int64(e.child)*int64(s.ps)); n != len(hdr) {
			continue
		}
		if h := parseHeader(hdr); h.id == e.child && (h.flags == flagLeaf || h.flags == flagBranch) {
			return h.flags == flagLeaf
		}
	}
	return false
}

// rootLeaf follows the buckets named in a leaf page of the root bucket.
func (s *scanner) rootLeaf(id uint64, buf []byte, h pageHeader, depth int) (bool, error) {
	type sub struct {
		name   string
		root   uint64
		inline []byte
		off    int
	}
	var subs []sub
	forLeafItems(buf, int(h.count), func(it leafItem) {
		if it.flags&bucketLeafFlag == 0 {
			return
		}
		root, inline, ok := bucketValue(it.value)
		if !ok {
			return
		}
		subs = append(subs, sub{string(it.key), root, inline, it.off + bucketHdrSize})
	})
	found := false
	base := int64(id) * int64(s.ps)
	for _, b := range subs {
		switch b.name {
		case bucketKey, bucketMeta, bucketLease, bucketMembers:
		default:
			if isEtcdBucket([]byte(b.name)) && (b.inline == nil || parseHeader(b.inline).count > 0) {
				s.others[b.name] = true
			}
			continue
		}
		if b.name == bucketKey {
			found = true
		}
		if b.inline != nil {
			s.leafItems(b.name, b.inline, int(parseHeader(b.inline).count), base+int64(b.off), false, nil)
			continue
		}
		if _, err := s.walk(b.root, b.name, nil, nil, depth+1, id); err != nil {
			return false, err
		}
	}
	return found, nil
}

// lose records a lost page of bucket.
func (s *scanner) lose(bucket string, lo, hi []byte, id, parent uint64, problem string) {
	s.lostPages[id] = true
	if bucket != bucketKey {
		if len(s.rep.OtherLost) < MaxListed {
			s.rep.OtherLost = append(s.rep.OtherLost, PageProblem{ID: id, Seemed: "page of bucket " + bucket, Problem: problem})
		}
		return
	}
	s.lost = append(s.lost, keyRange{lo: lo, hi: hi})
	var from, to Revision
	if r, _, ok := parseRevKey(lo); ok {
		from = r
	}
	if r, _, ok := parseRevKey(hi); ok {
		to = r
	}
	if len(s.rep.LostRanges) < MaxListed {
		s.rep.LostRanges = append(s.rep.LostRanges, LostRange{From: from, To: to, Page: id, Parent: parent, Problem: problem})
	}
}

// chunkPages is how many pages pass1 reads at once (about 8 MiB).
const chunkBytes = 8 << 20

// pass1 reads every page in order, classifies it, and reads the items
// of the tree's leaf pages (and, without a tree, of every leaf page).
func (s *scanner) pass1(h hash.Hash) error {
	per := int(min(uint64(max(1, chunkBytes/s.ps)), s.npages))
	// Two buffers: the next chunk is read (and hashed) on another core
	// while this one is parsed.
	free := make(chan []byte, 2)
	free <- make([]byte, per*s.ps)
	free <- make([]byte, per*s.ps)
	chunks := make(chan readChunk, 1)
	rctx, cancel := context.WithCancel(s.ctx)
	go s.readChunks(rctx, per, h, free, chunks)
	defer func() {
		cancel()
		for range chunks {
		}
	}()
	var overflowEnd uint64 // positions below it continue an earlier page
	for c := range chunks {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		if c.err != nil {
			return c.err
		}
		start, chunk := c.start, c.data
		for i := uint64(0); i < uint64(per) && start+i < s.npages; i++ {
			pos := start + i
			pstart := int(i) * s.ps
			if pstart+pageHeaderSize > len(chunk) {
				s.bad(pos, "partial page", "the file ends inside it")
				continue
			}
			hd := parseHeader(chunk[pstart:])
			if ref, ok := s.live[pos]; ok && !ref.branch && (hd.id != pos || hd.flags != flagLeaf) {
				// A leaf page the tree names, not checked by the walk.
				s.lose(ref.bucket, ref.lo, ref.hi, pos, ref.parent, fmt.Sprintf("not a leaf page (header names page %d, flags %#x)", hd.id, hd.flags))
				delete(s.live, pos)
				if hd.id != pos || !validFlags(hd.flags) {
					s.bad(pos, "leaf page of bucket "+ref.bucket, fmt.Sprintf("header names page %d, flags %#x", hd.id, hd.flags))
					continue
				}
			}
			if hd.id != pos || !validFlags(hd.flags) {
				switch {
				case pos < overflowEnd:
					s.rep.PagesOverflow++
				case isZero(chunk[pstart:min(pstart+s.ps, len(chunk))]):
					s.rep.PagesEmpty++
				case s.tree && !s.fillAll && !s.lostPages[pos]:
					// Not named by the tree of the newest transaction: a
					// free page, overwritten in part (the rest of a freed
					// overflow run).
					s.rep.PagesFree++
				default:
					seemed := "not a page header"
					if s.lostPages[pos] {
						seemed = "a page the tree names"
					}
					s.bad(pos, seemed, fmt.Sprintf("header names page %d, flags %#x", hd.id, hd.flags))
				}
				continue
			}
			s.rep.PagesRead++
			if hd.overflow > 0 {
				overflowEnd = max(overflowEnd, pos+1+uint64(hd.overflow))
			}
			var page []byte
			span := s.span(int64(pos)*int64(s.ps), hd)
			if int64(pstart)+span <= int64(len(chunk)) {
				page = chunk[pstart : int64(pstart)+span]
			} else {
				if span > s.readBudget {
					// Overflow counts claiming more than the file holds,
					// page after page: read no more than the chunk has.
					span = int64(len(chunk) - pstart)
				}
				s.readBudget -= span
				// Reused: nothing keeps a page's bytes past s.page.
				if int64(cap(s.big)) < span {
					s.big = make([]byte, span)
				}
				page = s.big[:span]
				m, _ := s.r.ReadAt(page, int64(pos)*int64(s.ps))
				page = page[:m]
			}
			s.pre = c.pre[pos]
			err := s.page(pos, hd, page)
			s.pre = nil
			if err != nil {
				return err
			}
		}
		free <- c.buf
	}
	// The reader stops early only when the context ends.
	return s.ctx.Err()
}

// readChunk is a chunk of pages pass1 reads: data, the bytes read from
// page start on, in buf; err is why it could not be read.
type readChunk struct {
	start     uint64
	buf, data []byte
	err       error
	// pre holds, by page position in the chunk, what keyPageItems makes
	// of each page that looks like a leaf page and lies whole in it
	// (parsed on the reader's core: most pages are the "key" bucket's).
	pre map[uint64]*prePage
}

// prePage is a leaf page's "key" bucket items, worked out ahead
// (keyPageItems) on the reader's core, with the checksum of each value;
// used only for the same bytes (page) and count.
type prePage struct {
	page   []byte
	count  int
	items  []keyItem
	n, bad int
}

// preParse returns keyPageItems's answer, and the values' checksums, for
// each page of chunk (pages start on, from start) whose header names a
// leaf page at its own position and whose span lies whole in chunk. It
// reads only chunk: what pass1 does with a page (which bucket it is of,
// whether the tree names it) is still decided there, which uses this only
// for those very bytes.
func (s *scanner) preParse(chunk []byte, start uint64, per int) map[uint64]*prePage {
	pre := map[uint64]*prePage{}
	for i := 0; i < per && (i+1)*s.ps <= len(chunk); i++ {
		pos := start + uint64(i)
		pstart := i * s.ps
		hd := parseHeader(chunk[pstart:])
		if hd.id != pos || hd.flags != flagLeaf {
			continue
		}
		span := s.span(int64(pos)*int64(s.ps), hd)
		if int64(pstart)+span > int64(len(chunk)) {
			continue
		}
		page := chunk[pstart : int64(pstart)+span]
		items, n, bad := parseKeyPage(nil, page, int(hd.count))
		if n == 0 || bad == n {
			continue // not a "key" bucket page (or nothing of it parses)
		}
		for j := range items {
			if !items[j].marker {
				items[j].sum, items[j].summed = crc32.Checksum(items[j].enc, castagnoli), true
			}
		}
		pre[pos] = &prePage{page: page, count: int(hd.count), items: items, n: n, bad: bad}
	}
	return pre
}

// readChunks reads the file's pages in order, per pages at a time, into
// buffers from free, for out; with h, it hashes them in order; and it
// parses ahead what looks like "key" bucket leaf pages (preParse). It
// closes out when done, when a read fails, or when ctx ends.
func (s *scanner) readChunks(ctx context.Context, per int, h hash.Hash, free <-chan []byte, out chan<- readChunk) {
	defer close(out)
	for start := uint64(0); start < s.npages; start += uint64(per) {
		var buf []byte
		select {
		case buf = <-free:
		case <-ctx.Done():
			return
		}
		off := int64(start) * int64(s.ps)
		n, err := s.r.ReadAt(buf[:min(int64(len(buf)), s.size-off)], off)
		if n == 0 && err != nil && err != io.EOF {
			out <- readChunk{err: fmt.Errorf("salvage: read at %d: %w", off, err)}
			return
		}
		if h != nil {
			h.Write(buf[:n])
		}
		out <- readChunk{start: start, buf: buf, data: buf[:n], pre: s.preParse(buf[:n], start, per)}
	}
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// bad records an unreadable page position.
func (s *scanner) bad(pos uint64, seemed, problem string) {
	s.badPos[pos] = true
	s.rep.PagesUnreadable++
	if len(s.rep.Unreadable) < MaxListed {
		s.rep.Unreadable = append(s.rep.Unreadable, PageProblem{ID: pos, Seemed: seemed, Problem: problem})
	}
}

// page handles one page with a valid header in pass1.
func (s *scanner) page(pos uint64, hd pageHeader, page []byte) error {
	switch hd.flags {
	case flagMeta:
		if pos >= 2 {
			s.rep.PagesStale++
			return nil
		}
		if m, ok := parseMeta(page); !ok || int(m.pageSize) != s.ps {
			s.bad(pos, "meta page", "its checksum, magic, version or page size does not verify")
			s.rep.PagesRead--
		}
		return nil
	case flagFreelist:
		return nil
	case flagBranch:
		if !s.tree {
			s.shapeBranch(pos, page, int(hd.count))
			return nil
		}
		if _, ok := s.live[pos]; !ok {
			s.rep.PagesStale++
		}
		return nil
	}
	base := int64(pos) * int64(s.ps)
	ref, isLive := s.live[pos]
	if isLive {
		valid, invalid := s.leafItems(ref.bucket, page, int(hd.count), base, false, nil)
		if ref.bucket == bucketKey && invalid == 0 {
			// A page bbolt reused since the meta page was written holds
			// other revisions than its parent says: its own are elsewhere.
			r := keyRange{lo: ref.lo, hi: ref.hi}
			outside := 0
			forLeafItems(page, int(hd.count), func(it leafItem) {
				if !r.contains(it.key) {
					outside++
				}
			})
			if outside > 0 {
				s.lose(bucketKey, ref.lo, ref.hi, pos, ref.parent, fmt.Sprintf("leaf page holds %d revisions outside the range its parent names: reused since", outside))
			}
		}
		if invalid > 0 && ref.bucket == bucketKey {
			s.lose(bucketKey, ref.lo, ref.hi, pos, ref.parent, fmt.Sprintf("leaf page damaged (%d of %d items unreadable)", invalid, valid+invalid))
			if len(s.rep.Unreadable) < MaxListed {
				s.rep.Unreadable = append(s.rep.Unreadable, PageProblem{ID: pos, Seemed: "leaf of bucket key", Problem: fmt.Sprintf("%d of %d items unreadable", invalid, valid+invalid)})
			}
		}
		return nil
	}
	if s.tree {
		// A freed page: note what it holds, in case a lost range needs it.
		s.rep.PagesStale++
		var o orphan
		n := 0
		forLeafItems(page, int(hd.count), func(it leafItem) {
			rev, tomb, ok := parseRevKey(it.key)
			if !ok || it.flags != 0 || len(it.value) > 0 && !validKV(it.value, rev, tomb) {
				return
			}
			if n == 0 || rev.less(o.min) {
				o.min = rev
			}
			if n == 0 || o.max.less(rev) {
				o.max = rev
			}
			n++
		})
		if n > 0 {
			o.id = pos
			s.orphan = append(s.orphan, o)
		}
		return nil
	}
	s.shapeLeaf(page, int(hd.count), base)
	return nil
}

// shapeBranch keeps a branch page whose keys are all revision keys: a
// branch page of the "key" bucket (or a freed copy of one), which names
// the revisions of its children.
func (s *scanner) shapeBranch(pos uint64, page []byte, count int) {
	elems, bad := branchElems(page, count)
	if bad > 0 || len(elems) == 0 {
		return
	}
	for i := range elems {
		rev, _, ok := parseRevKey(elems[i].key)
		if !ok {
			return
		}
		s.maxNamed = max(s.maxNamed, rev.Main)
		elems[i].key = bytes.Clone(elems[i].key)
	}
	s.shapeBranches = append(s.shapeBranches, shapeBranch{id: pos, elems: elems})
}

func validKV(v []byte, rev Revision, tomb bool) bool {
	x, ok := parseKV(v)
	return ok && checkKV(x, rev, tomb)
}

// shapeLeaf reads a leaf page without a tree: its items go to the bucket
// their shape says, root bucket items' inline buckets included.
func (s *scanner) shapeLeaf(page []byte, count int, base int64) {
	var keyish, metaish, leaseish, memberish int
	var inl []leafItem
	forLeafItems(page, count, func(it leafItem) {
		if it.flags&bucketLeafFlag != 0 {
			if isEtcdBucket(it.key) {
				inl = append(inl, it)
			}
			return
		}
		if rev, tomb, ok := parseRevKey(it.key); ok && (len(it.value) == 0 || validKV(it.value, rev, tomb)) {
			keyish++
		} else if isMetaKey(it.key) {
			metaish++
		} else if leaseItem(it.key, it.value) {
			leaseish++
		} else if memberItem(it.key, it.value) {
			memberish++
		}
	})
	for _, it := range inl {
		name := string(it.key)
		switch name {
		case bucketKey, bucketMeta, bucketLease, bucketMembers:
		default:
			if root, inline, ok := bucketValue(it.value); ok && (root != 0 || parseHeader(inline).count > 0) {
				s.others[name] = true
			}
			continue
		}
		if root, inline, ok := bucketValue(it.value); ok && root == 0 {
			s.leafItems(name, inline, int(parseHeader(inline).count), base+int64(it.off+bucketHdrSize), true, nil)
		}
	}
	switch {
	case keyish > 0 && keyish >= metaish+leaseish+memberish:
		s.rep.OrphanPagesUsed++
		s.leafItems(bucketKey, page, count, base, true, nil)
	case metaish > 0:
		s.leafItems(bucketMeta, page, count, base, true, nil)
	case leaseish > 0:
		s.leafItems(bucketLease, page, count, base, true, nil)
	case memberish > 0:
		s.leafItems(bucketMembers, page, count, base, true, nil)
	}
}

// leafItems takes the items of a leaf page (or inline page) of bucket
// into the index. base is the page buffer's offset in the file; orphan
// marks a page outside the tree; in, when set, limits the revisions
// taken. It returns how many items were valid and how many not.
func (s *scanner) leafItems(bucket string, page []byte, count int, base int64, orphan bool, in func([]byte) bool) (valid, invalid int) {
	if bucket == bucketMeta && orphan {
		// Without a tree, several copies of "meta" may be found: keep the
		// one with the highest consistent index, the newest.
		items := map[string][]byte{}
		var ci uint64
		forLeafItems(page, count, func(it leafItem) {
			if isMetaKey(it.key) {
				items[string(it.key)] = bytes.Clone(it.value)
				if string(it.key) == metaConsistentIndex && len(it.value) == 8 {
					ci = binary.BigEndian.Uint64(it.value)
				}
			}
		})
		if ci >= s.metaCI && len(items) > 0 {
			s.metaCI, s.metaItems = ci, items
		}
		return len(items), 0
	}
	if bucket == bucketKey {
		// bbolt keeps no checksum of a page: an item of a damaged page
		// may parse and still hold damaged bytes (a value's payload). So
		// a page with any invalid or misordered item is not used at all.
		items, n, bad := s.keyPageItems(page, count)
		if bad > 0 {
			s.rep.InvalidItems += int64(bad)
			s.rep.SuspectRevisions += int64(n - bad)
			return n - bad, bad
		}
		for _, it := range items {
			if in != nil && !in(it.rk) {
				continue
			}
			if it.marker {
				s.rep.Markers++
				s.maxSeen = max(s.maxSeen, it.rev.Main)
				continue
			}
			sum := it.sum
			if !it.summed && !it.tomb {
				sum = crc32.Checksum(it.enc, castagnoli)
			}
			s.add(it.rev, it.tomb, it.x, it.enc, sum, base+int64(it.off), orphan)
		}
		return n, 0
	}
	bad := forLeafItems(page, count, func(it leafItem) {
		switch bucket {
		case bucketMeta:
			valid++
			s.metaItems[string(it.key)] = bytes.Clone(it.value)
		case bucketLease:
			if !leaseItem(it.key, it.value) {
				invalid++
				return
			}
			valid++
			s.leases[string(it.key)] = bytes.Clone(it.value)
		case bucketMembers:
			if it.flags != 0 {
				invalid++
				return
			}
			valid++
			s.members[string(it.key)] = bytes.Clone(it.value)
		}
	})
	return valid, invalid + bad
}

// keyItem is a parsed item of a "key" bucket leaf page; rk and enc
// alias the page.
type keyItem struct {
	rk, enc []byte
	rev     Revision
	tomb    bool
	marker  bool // an empty value: etcdutl's --bump-revision mark
	x       kv
	off     int
	sum     uint32 // enc's checksum (castagnoli), when worked out ahead
	summed  bool
}

// keyPageItems parses every item of a "key" bucket leaf page into a
// buffer the scanner reuses: it returns them, their number, and how many
// are out of bounds, not a revision key with a consistent mvccpb.KeyValue
// (or an empty marker), or out of order.
func (s *scanner) keyPageItems(page []byte, count int) (items []keyItem, n, bad int) {
	if p := s.pre; p != nil && p.count == count && len(p.page) == len(page) && len(page) > 0 && &p.page[0] == &page[0] {
		return p.items, p.n, p.bad
	}
	items, n, bad = parseKeyPage(s.itemBuf[:0], page, count)
	s.itemBuf = items[:0]
	return items, n, bad
}

// parseKeyPage is keyPageItems's parse, appending the items to items.
func parseKeyPage(items []keyItem, page []byte, count int) ([]keyItem, int, int) {
	n, bad := 0, 0
	var prev []byte
	oob := forLeafItems(page, count, func(it leafItem) {
		n++
		rev, tomb, ok := parseRevKey(it.key)
		switch {
		case it.flags != 0 || !ok:
			bad++
		case prev != nil && bytes.Compare(prev, it.key) >= 0:
			bad++
		case len(it.value) == 0:
			items = append(items, keyItem{rk: it.key, rev: rev, tomb: tomb, marker: true})
		default:
			x, ok := parseKV(it.value)
			if !ok || !checkKV(x, rev, tomb) {
				bad++
				break
			}
			items = append(items, keyItem{rk: it.key, enc: it.value, rev: rev, tomb: tomb, x: x, off: it.off})
		}
		prev = it.key
	})
	return items, n + oob, bad + oob
}

// add takes one valid revision of the "key" bucket into the index.
func (s *scanner) add(rev Revision, tomb bool, x kv, enc []byte, sum uint32, off int64, orphan bool) {
	s.rep.RevisionsRead++
	s.maxSeen = max(s.maxSeen, rev.Main)
	i, ok := s.keys[string(x.key)]
	if !ok {
		i = int32(s.ents.add(entry{}))
		s.keys[string(x.key)] = i
	}
	e := s.ents.at(i)
	if tomb {
		if !e.hasTomb || e.tomb.less(rev) {
			e.hasTomb, e.tomb = true, rev
		}
		return
	}
	if e.hasKeep && e.keep.rev == rev {
		// The same revision again (a freed copy of its page): prefer the
		// copy in the tree.
		if e.keepOrphan && !orphan {
			e.keepOrphan, e.keep.off = false, off
		}
		return
	}
	c := candidate{rev: keptRev{rev: rev, off: off, n: len(enc), sum: sum}, orphan: orphan, lease: x.lease}
	if s.opts.Readable != nil {
		// Judged at the end, newest first (judge): most keys' newest
		// revision passes, and the older ones are never decoded.
		if e.hasKeep && rev.less(e.keep.rev) {
			e.older = int32(s.older.add(olderRev{c: c, next: e.older}) + 1)
			return
		}
		if e.hasKeep {
			e.older = int32(s.older.add(olderRev{c: candidate{rev: e.keep, orphan: e.keepOrphan, lease: e.keepLease}, next: e.older}) + 1)
		}
	} else if e.hasKeep && rev.less(e.keep.rev) {
		return
	}
	e.hasKeep, e.keepOrphan, e.keepLease, e.keep = true, c.orphan, c.lease, c.rev
}

// judge keeps, of each key, the newest revision whose value passes
// Options.Readable, newest first, never one older than the key's newest
// deletion (finish counts such a key deleted); the revisions that do not
// pass are recorded as bad. Keys are judged on several cores: Readable
// must be safe for concurrent use. Each value is read again from the
// input and checked against the scan (ErrInputChanged).
func (s *scanner) judge() error {
	if s.opts.Readable == nil {
		return nil
	}
	all, err := s.judgeJobs()
	if err != nil {
		return err
	}
	return s.judgeAll(all)
}

// judgePlanned is judge, and returns the revisions finish usually keeps
// when every value passes Options.Readable (no key has a bad revision,
// see judgedBad): the newest revision of each key judge judges, in
// revision order (sorted while the judge runs). Not always: finish drops
// a key deleted at its newest revision, and orders two keys of one
// revision its own way; salvageTo compares the two.
func (s *scanner) judgePlanned() ([]keptRev, error) {
	all, err := s.judgeJobs()
	if err != nil {
		return nil, err
	}
	planned := make([]keptRev, len(all))
	for j, jb := range all {
		planned[j] = s.ents.at(jb.i).keep
	}
	sorted := make(chan struct{})
	go func() {
		defer close(sorted)
		slices.SortFunc(planned, func(a, b keptRev) int { return a.rev.cmp(b.rev) })
	}()
	if s.opts.Readable != nil {
		err = s.judgeAll(all)
	}
	<-sorted
	return planned, err
}

// judgedBad reports whether the judge found a revision that does not pass
// Options.Readable.
func (s *scanner) judgedBad() bool {
	for _, b := range s.badRevs {
		if len(b) > 0 {
			return true
		}
	}
	return false
}

// judgeAll judges the keys of all (see judge).
func (s *scanner) judgeAll(all []job) error {
	// In file order of the newest revisions, in runs of judgeRun keys a
	// worker takes at a time: each reads its values through a window
	// (most keys' newest revision passes, so most reads are those).
	slices.SortFunc(all, func(a, b job) int { return cmp.Compare(a.off, b.off) })
	runs := make(chan []job, 4)
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			var cands []candidate
			wr := newWindowReader(s.r, s.size)
			for run := range runs {
				for _, j := range run {
					if errs[w] != nil || s.ctx.Err() != nil {
						break
					}
					buf, cands, errs[w] = s.judgeKey(wr, j.key, j.i, buf, cands)
				}
			}
		}()
	}
	for i := 0; i < len(all) && s.ctx.Err() == nil; i += judgeRun {
		runs <- all[i:min(i+judgeRun, len(all))]
	}
	close(runs)
	wg.Wait()
	// The older revisions are read by the judge alone: they go before
	// what comes after it (the write's buffers).
	s.older = chunked[olderRev]{}
	if err := s.ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// judgeRun is how many keys a worker of the judge takes at a time.
const judgeRun = 512

// job is a key for the judge: s.ents.at(i) is its entry, and off where
// its newest revision is in the input (the judge's order).
type job struct {
	key string
	i   int32
	off int64
}

// judgeJobs returns the keys judge judges (in the index's order), and
// makes the table of the revisions that do not pass (s.badRevs): the keys
// with a revision not older than their newest deletion.
func (s *scanner) judgeJobs() ([]job, error) {
	s.badRevs = make([][]badRev, s.ents.len())
	var all []job
	n := 0
	for key, i := range s.keys {
		if n++; n%4096 == 0 && s.ctx.Err() != nil {
			return nil, s.ctx.Err()
		}
		e := s.ents.at(i)
		if !e.hasKeep || (e.hasTomb && e.keep.rev.less(e.tomb)) {
			continue // deleted after every revision held: nothing to judge
		}
		all = append(all, job{key, i, e.keep.off})
	}
	return all, nil
}

// judgeKey judges s.ents[i], the entry of key (see judge), reading values
// from r into buf; it returns buf and cands (scratch space) for the next
// key.
func (s *scanner) judgeKey(r io.ReaderAt, key string, i int32, buf []byte, cands []candidate) ([]byte, []candidate, error) {
	e := s.ents.at(i)
	cands = append(cands[:0], candidate{rev: e.keep, orphan: e.keepOrphan, lease: e.keepLease})
	for o := e.older; o != 0; o = s.older.at(o - 1).next {
		cands = append(cands, s.older.at(o-1).c)
	}
	// Newest first; of one revision held twice (a freed copy), the copy
	// in the tree first.
	slices.SortFunc(cands, func(a, b candidate) int {
		switch {
		case a.rev.rev != b.rev.rev && b.rev.rev.less(a.rev.rev):
			return -1
		case a.rev.rev != b.rev.rev:
			return 1
		case a.orphan == b.orphan:
			return 0
		case !a.orphan:
			return -1
		}
		return 1
	})
	e.hasKeep, e.older = false, 0
	for k, c := range cands {
		if k > 0 && c.rev.rev == cands[k-1].rev.rev {
			continue
		}
		if e.hasTomb && c.rev.rev.less(e.tomb) {
			break // never across a deletion
		}
		if cap(buf) < c.rev.n {
			buf = make([]byte, c.rev.n)
		}
		buf = buf[:c.rev.n]
		if _, err := r.ReadAt(buf, c.rev.off); err != nil {
			return buf, cands, fmt.Errorf("salvage: read revision %s again at offset %d: %w", c.rev.rev, c.rev.off, err)
		}
		if crc32.Checksum(buf, castagnoli) != c.rev.sum {
			return buf, cands, fmt.Errorf("revision %s at offset %d: %w", c.rev.rev, c.rev.off, ErrInputChanged)
		}
		// The bytes are the ones the scan parsed (the checksum says so):
		// parsed again at the wire level, without copying the value.
		x, ok := parseKV(buf)
		if !ok {
			return buf, cands, fmt.Errorf("revision %s at offset %d: %w", c.rev.rev, c.rev.off, ErrInputChanged)
		}
		if err := s.opts.Readable(key, x.value); err != nil {
			if len(s.badRevs[i]) < 64 {
				s.badRevs[i] = append(s.badRevs[i], badRev{rev: c.rev.rev, err: err.Error()})
			}
			continue
		}
		e.hasKeep, e.keep, e.keepOrphan, e.keepLease = true, c.rev, c.orphan, c.lease
		break
	}
	return buf, cands, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// pass2 reads the freed "key" bucket pages that may fill a lost range,
// taking only their revisions inside lost ranges.
func (s *scanner) pass2() error {
	if len(s.lost) == 0 && !s.fillAll {
		return nil
	}
	fill := s.lost
	if s.fillAll {
		// The newer transaction wrote revisions above the tree's newest;
		// below it, a page outside the tree is a freed copy.
		fill = append(slices.Clip(fill), keyRange{lo: revKey(Revision{Main: s.maxSeen + 1}, false)})
	}
	fill = mergeRanges(fill)
	inLost := func(rk []byte) bool { return findRange(fill, rk, rk) }
	for i, o := range s.orphan {
		if i%256 == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
		lo, hi := revKey(o.min, false), revKey(o.max, true)
		if !findRange(fill, lo, hi) {
			continue
		}
		buf, h := s.readPage(o.id)
		if buf == nil || h.flags != flagLeaf {
			continue
		}
		s.rep.OrphanPagesUsed++
		s.rep.PagesStale--
		s.leafItems(bucketKey, buf, int(h.count), int64(o.id)*int64(s.ps), true, inLost)
	}
	return nil
}

// newResult starts the Result of the index: what the write needs besides
// the kept revisions (the compaction salvaged, the leases and members
// found), which the judge does not change. finish completes it.
func (s *scanner) newResult() *Result {
	rep := s.rep
	res := &Result{Report: rep, r: s.r, size: s.size}
	rep.MaxRevisionSeen, rep.MaxRevisionNamed = s.maxSeen, s.maxNamed

	// Compaction, as salvaged, if consistent.
	fin, finOK := compactRev(s.metaItems[metaFinishedCompact])
	sch, schOK := compactRev(s.metaItems[metaScheduledCompact])
	compactKnown := false
	switch {
	case finOK && schOK && fin <= sch, finOK && !schOK, schOK && !finOK:
		rep.CompactRevision, rep.ScheduledCompactRevision, compactKnown = fin, sch, true
	case finOK || schOK:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the compaction revisions salvaged are inconsistent (finished %d, scheduled %d): not used", fin, sch))
	case !s.tree || len(s.metaItems) == 0:
	default:
		compactKnown = true // never compacted
	}
	if v := s.metaItems[metaConsistentIndex]; len(v) == 8 {
		rep.ConsistentIndex = binary.BigEndian.Uint64(v)
	}
	s.compactKnown = compactKnown
	s.compact = max(rep.CompactRevision, rep.ScheduledCompactRevision)

	for _, k := range sortedKeys(s.leases) {
		res.leases = append(res.leases, rawItem{[]byte(k), s.leases[k]})
	}
	rep.Leases = len(res.leases)
	for _, k := range sortedKeys(s.members) {
		res.members = append(res.members, rawItem{[]byte(k), s.members[k]})
	}
	rep.Members = len(res.members)
	res.compact = max(s.compact, rep.MaxRevisionSeen, rep.MaxRevisionNamed)
	return res
}

// finish turns the judged index into res's kept revisions and the
// report (res from newResult).
func (s *scanner) finish(res *Result) {
	rep := s.rep
	compactKnown, compact := s.compactKnown, s.compact
	if !s.tree {
		// Without a tree, a branch page still names what its lost
		// children held; it may be a freed copy, which the problem says.
		for _, b := range s.shapeBranches {
			for i, e := range b.elems {
				if e.child < s.npages && !s.badPos[e.child] {
					continue
				}
				var hi []byte
				if i+1 < len(b.elems) {
					hi = b.elems[i+1].key
				}
				what := "unreadable"
				if e.child >= s.npages {
					what = "beyond the end of the file"
				}
				s.lose(bucketKey, e.key, hi, e.child, b.id, what+" (named by a branch page found outside any tree, which may be a freed copy)")
			}
		}
	}
	maxLost := int64(0)
	// Without a tree, any loss may have taken any key's newer revisions.
	openLost := !s.tree && (rep.PagesUnreadable > 0 || s.truncated || len(s.lost) > 0)
	for _, l := range s.lost {
		if l.hi == nil {
			openLost = true
		} else if r, _, ok := parseRevKey(l.hi); ok {
			maxLost = max(maxLost, r.Main)
		}
	}

	perRes := map[string]int{}
	var kept []keptRev
	leased := map[int64]bool{}
	// The keys in the map's order, what is listed sorted after (only
	// what a damaged file lists is sorted, not every key).
	var drops, uncertain []Drop
	var stale []string
	for key, i := range s.keys {
		e := s.ents.at(i)
		var bad []badRev
		if s.badRevs != nil {
			bad = s.badRevs[i]
		}
		newest := Revision{}
		if e.hasKeep {
			newest = e.keep.rev
		}
		if e.hasTomb && newest.less(e.tomb) {
			newest = e.tomb
		}
		for _, b := range bad {
			if newest.less(b.rev) {
				newest = b.rev
			}
		}
		switch {
		case e.hasTomb && e.tomb == newest:
			rep.Deleted++
			continue
		case !e.hasKeep || (e.hasTomb && e.keep.rev.less(e.tomb)):
			reason := "no revision of it is readable"
			if e.hasKeep {
				reason = fmt.Sprintf("its newest readable revision %s is older than its deletion at %s", e.keep.rev, e.tomb)
			}
			if len(bad) > 0 {
				reason = fmt.Sprintf("unreadable (%s); %s", bad[len(bad)-1].err, reason)
			}
			drops = append(drops, Drop{Key: key, Revision: newest, Reason: reason})
			continue
		}
		if newest != e.keep.rev {
			drops = append(drops, Drop{Key: key, Revision: newest, Kept: e.keep.rev, Reason: fmt.Sprintf("newer revision unreadable (%s): kept the older %s", bad[len(bad)-1].err, e.keep.rev)})
		}
		rep.Keys++
		kept = append(kept, e.keep)
		if e.keepLease != 0 {
			leased[e.keepLease] = true
		}
		perRes[resourceOf(s.opts.Prefix, key)]++
		if e.keepOrphan && (!compactKnown || e.keep.rev.Main <= compact) {
			uncertain = append(uncertain, Drop{Key: key, Revision: newest, Kept: e.keep.rev,
				Reason: "found only on a page outside the tree of buckets, at or below the compaction revision (or none is known): compaction may have removed it and a deletion after it"})
		}
		if openLost || e.keep.rev.Main < maxLost {
			rep.PossiblyStale++
			stale = append(stale, key)
		}
	}
	byKey := func(a, b Drop) int { return strings.Compare(a.Key, b.Key) }
	slices.SortFunc(drops, byKey)
	for _, d := range drops {
		s.drop(d)
	}
	slices.SortFunc(uncertain, byKey)
	rep.Uncertain = append(rep.Uncertain, uncertain[:min(len(uncertain), max(0, MaxListed-len(rep.Uncertain)))]...)
	slices.Sort(stale)
	rep.PossiblyStaleKeys = append(rep.PossiblyStaleKeys, stale[:min(len(stale), max(0, MaxListed-len(rep.PossiblyStaleKeys)))]...)
	rep.Superseded = rep.RevisionsRead - int64(rep.Keys)
	for k, rc := range perRes {
		rep.Resources = append(rep.Resources, ResourceCount{Resource: k, Keys: rc})
	}
	sort.Slice(rep.Resources, func(i, j int) bool { return rep.Resources[i].Resource < rep.Resources[j].Resource })
	slices.SortFunc(kept, func(a, b keptRev) int { return a.rev.cmp(b.rev) })
	res.kept = kept

	for _, it := range res.leases {
		delete(leased, int64(binary.BigEndian.Uint64(it.key)))
	}
	rep.LeasesMissing = len(leased)
	for k := range s.others {
		rep.OtherBuckets = append(rep.OtherBuckets, k)
	}
	sort.Strings(rep.OtherBuckets)

	rep.Complete = s.tree && !s.fillAll && len(s.lost) == 0 && len(rep.OtherLost) == 0 && rep.Dropped == nil && rep.Trailer != "mismatch"
	s.warn(compactKnown)
}

func (s *scanner) drop(d Drop) {
	if len(s.rep.Dropped) < MaxListed {
		s.rep.Dropped = append(s.rep.Dropped, d)
	}
}

// warn adds the report's sentences.
func (s *scanner) warn(compactKnown bool) {
	rep := s.rep
	if !s.tree {
		rep.Warnings = append(rep.Warnings, "no meta page led to a readable root bucket: every leaf page was recognised by its contents, freed pages included; a key deleted before the last compaction may reappear (listed as uncertain), and so may a revoked lease")
	}
	if s.fillAll {
		rep.Warnings = append(rep.Warnings, "the tree was followed from a meta page not known to be the newest (the other one is damaged): pages outside it were read as well, for the writes of a newer transaction")
		if rep.PagesUnreadable > 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d unreadable page(s) outside the tree may have held that transaction's writes", rep.PagesUnreadable))
		}
	}
	if s.truncated {
		rep.Warnings = append(rep.Warnings, "the file is cut short: a meta page names pages beyond its end, or it ends inside a page")
	}
	if !s.tree && rep.PossiblyStale > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("pages were lost and no index tells which keys they held: any of the %d kept keys may have had a newer revision or a deletion there", rep.PossiblyStale))
	}
	if len(s.lost) > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d part(s) of the key bucket's index are lost; %d kept key(s) are older than the end of a lost part and may have had newer revisions or a deletion there", len(s.lost), rep.PossiblyStale))
	}
	if len(rep.OtherLost) > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d page(s) of the meta, lease or members buckets are lost", len(rep.OtherLost)))
	}
	if !compactKnown {
		rep.Warnings = append(rep.Warnings, "the compaction revision is not known")
	}
	if rep.LeasesMissing > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d lease(s) that kept keys are attached to were not found: etcd keeps those keys without a lease", rep.LeasesMissing))
	}
	if len(rep.OtherBuckets) > 0 {
		rep.Warnings = append(rep.Warnings, "buckets not copied: "+strings.Join(rep.OtherBuckets, ", ")+" (authentication users and roles among them are not restored)")
	}
	if rep.Trailer == "mismatch" {
		rep.Warnings = append(rep.Warnings, "the last 32 bytes, a sha256 trailer by etcd's rule (the size is 32 over a multiple of 512), do not match the file: it was damaged after it was written (or was cut to that size)")
	}
}

// compactRev reads a compaction revision from "meta" (17-byte revision
// form, or 8 bytes).
func compactRev(v []byte) (int64, bool) {
	if len(v) != 17 && len(v) != 8 {
		return 0, false
	}
	r := int64(binary.BigEndian.Uint64(v[:8]))
	return r, r > 0
}

func resourceOf(prefix, key string) string {
	if r, _, _, ok := resource.ParseKey(prefix, key); ok {
		return r.String()
	}
	return "(other)"
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
