package salvage

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
)

// treeWalk is what the walk of the tree of buckets found, and what pass1
// adds to it: the pages the tree names, the parts of the "key" bucket
// lost, and the pages outside the tree that may fill them.
type treeWalk struct {
	live map[uint64]liveRef
	tree bool
	// fillAll is set when the tree came from a meta page that is not
	// known to be the newest (the other one is damaged): pages outside
	// the tree may then hold the last transaction's writes.
	fillAll bool
	lost    []keyRange
	// lostPages are the pages the tree names that did not check out.
	lostPages map[uint64]bool
	walked    int
	// shapeBranches are the "key" bucket branch pages found without a
	// tree.
	shapeBranches []shapeBranch
	orphan        []orphan
	maxNamed      int64
}

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
	s.live, s.lost, s.lostPages, s.maxNamed = map[uint64]liveRef{}, nil, map[uint64]bool{}, 0
	s.index = newIndex()
	s.rep.LostRanges, s.rep.OtherLost = nil, nil
	s.rep.RevisionsRead, s.rep.InvalidItems, s.rep.Markers = 0, 0, 0
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

// loseShapeChildren records, without a tree, the children of the "key"
// bucket branch pages found that are lost: a branch page still names
// what they held; it may be a freed copy, which the problem says.
func (s *scanner) loseShapeChildren() {
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

// lostBounds returns the highest main revision that ends a lost part of
// the "key" bucket, and whether a lost part is open above: any kept key
// below the one, or every key with the other, may have had a newer
// revision there.
func (s *scanner) lostBounds() (maxLost int64, openLost bool) {
	// Without a tree, any loss may have taken any key's newer revisions.
	openLost = !s.tree && (s.rep.PagesUnreadable > 0 || s.truncated || len(s.lost) > 0)
	for _, l := range s.lost {
		if l.hi == nil {
			openLost = true
		} else if r, _, ok := parseRevKey(l.hi); ok {
			maxLost = max(maxLost, r.Main)
		}
	}
	return maxLost, openLost
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
