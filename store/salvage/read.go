package salvage

import (
	"context"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// input is the file scanned, as pages.
type input struct {
	r      io.ReaderAt
	size   int64 // bytes holding pages (trailer excluded)
	ps     int
	npages uint64
	// readBudget bounds what readPage reads (and allocates) in all.
	readBudget int64
	// truncated is set when a verified meta page names pages beyond the
	// end of the file, or the file ends inside a page.
	truncated bool
}

// reading is pass1's state: the unreadable page positions, and the
// buffers it reuses.
type reading struct {
	// badPos marks unreadable page positions.
	badPos []bool
	// big is the buffer pass1 reads a page larger than its chunk into.
	big     []byte
	itemBuf []keyItem
	// pre is what the reader parsed ahead of the page pass1 is at (see
	// preParse), nil elsewhere.
	pre *prePage
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
func (s *input) readPage(id uint64) ([]byte, pageHeader) {
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
func (s *input) span(off int64, h pageHeader) int64 {
	span := (int64(h.overflow) + 1) * int64(s.ps)
	return min(span, s.size-off)
}

// chunkBytes is how much of the file pass1 reads at once.
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
		for i := uint64(0); i < uint64(per) && c.start+i < s.npages; i++ {
			if err := s.chunkPage(&c, i, &overflowEnd); err != nil {
				return err
			}
		}
		free <- c.buf
	}
	// The reader stops early only when the context ends.
	return s.ctx.Err()
}

// chunkPage handles the page at position i of chunk c in pass1: the
// page, when its header is valid at its position, else what the
// position holds instead. overflowEnd is the position below which the
// positions continue an earlier page.
func (s *scanner) chunkPage(c *readChunk, i uint64, overflowEnd *uint64) error {
	chunk := c.data
	pos := c.start + i
	pstart := int(i) * s.ps
	if pstart+pageHeaderSize > len(chunk) {
		s.bad(pos, "partial page", "the file ends inside it")
		return nil
	}
	hd := parseHeader(chunk[pstart:])
	if ref, ok := s.live[pos]; ok && !ref.branch && (hd.id != pos || hd.flags != flagLeaf) {
		// A leaf page the tree names, not checked by the walk.
		s.lose(ref.bucket, ref.lo, ref.hi, pos, ref.parent, fmt.Sprintf("not a leaf page (header names page %d, flags %#x)", hd.id, hd.flags))
		delete(s.live, pos)
		if hd.id != pos || !validFlags(hd.flags) {
			s.bad(pos, "leaf page of bucket "+ref.bucket, fmt.Sprintf("header names page %d, flags %#x", hd.id, hd.flags))
			return nil
		}
	}
	if hd.id != pos || !validFlags(hd.flags) {
		switch {
		case pos < *overflowEnd:
			s.rep.PagesOverflow++
		case isZero(chunk[pstart:min(pstart+s.ps, len(chunk))]):
			s.rep.PagesEmpty++
		case s.tree && !s.fillAll && !s.lostPages[pos]:
			// Not named by the tree of the newest transaction: a free
			// page, overwritten in part (the rest of a freed overflow
			// run).
			s.rep.PagesFree++
		default:
			seemed := "not a page header"
			if s.lostPages[pos] {
				seemed = "a page the tree names"
			}
			s.bad(pos, seemed, fmt.Sprintf("header names page %d, flags %#x", hd.id, hd.flags))
		}
		return nil
	}
	s.rep.PagesRead++
	if hd.overflow > 0 {
		*overflowEnd = max(*overflowEnd, pos+1+uint64(hd.overflow))
	}
	var page []byte
	span := s.span(int64(pos)*int64(s.ps), hd)
	if int64(pstart)+span <= int64(len(chunk)) {
		page = chunk[pstart : int64(pstart)+span]
	} else {
		if span > s.readBudget {
			// Overflow counts claiming more than the file holds, page
			// after page: read no more than the chunk has.
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
	return err
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
		// Room for the items the page can hold: each has an element.
		items := make([]keyItem, 0, min(int(hd.count), (len(page)-pageHeaderSize)/elemSize))
		items, n, bad := parseKeyPage(items, page, int(hd.count))
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
