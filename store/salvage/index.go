package salvage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// keptRev is one revision to write: where its mvccpb.KeyValue is in the
// input, and a checksum of it to verify the second read.
type keptRev struct {
	rev Revision
	off int64
	n   int
	sum uint32
}

// index is what the scan keeps of the items it reads. keys indexes ents
// by key; older holds the entries' older revisions (entry.older);
// badRevs, made by judge, the revisions of each entry that did not pass
// Options.Readable.
type index struct {
	keys      map[string]int32
	ents      chunked[entry]
	older     chunked[olderRev]
	badRevs   [][]badRev
	metaItems map[string][]byte
	metaCI    uint64 // consistent_index of the meta items chosen (shape mode)
	leases    map[string][]byte
	members   map[string][]byte
	others    map[string]bool
	maxSeen   int64
}

// newIndex returns an empty index.
func newIndex() index {
	return index{
		keys:      map[string]int32{},
		metaItems: map[string][]byte{},
		leases:    map[string][]byte{},
		members:   map[string][]byte{},
		others:    map[string]bool{},
	}
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
	// than keep (1-based in index.older; 0: none), which judge falls
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

func validKV(v []byte, rev Revision, tomb bool) bool {
	x, ok := parseKV(v)
	return ok && checkKV(x, rev, tomb)
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
