package salvage

import (
	"encoding/binary"
	"hash/fnv"
)

// The bbolt on-disk format this package reads (go.etcd.io/bbolt v1.x,
// internal/common), little-endian as written on amd64 and arm64.
const (
	pageHeaderSize = 16 // id u64, flags u16, count u16, overflow u32
	elemSize       = 16 // leaf: flags, pos, ksize, vsize u32; branch: pos, ksize u32, pgid u64
	metaSize       = 64 // magic, version, pageSize, flags u32; root pgid, seq u64; freelist, pgid, txid, checksum u64
	bucketHdrSize  = 16 // a bucket's value: root pgid u64, sequence u64 (then an inline page when root is 0)

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10

	bucketLeafFlag = 0x01

	metaMagic   = 0xED0CDAED
	metaVersion = 2

	minPageSize = 1 << 10
	maxPageSize = 1 << 16
)

// pageHeader is the 16-byte header at the start of every page.
type pageHeader struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

func parseHeader(b []byte) pageHeader {
	return pageHeader{
		id:       binary.LittleEndian.Uint64(b[0:8]),
		flags:    binary.LittleEndian.Uint16(b[8:10]),
		count:    binary.LittleEndian.Uint16(b[10:12]),
		overflow: binary.LittleEndian.Uint32(b[12:16]),
	}
}

// validFlags reports whether flags is exactly one of bbolt's page types.
func validFlags(f uint16) bool {
	return f == flagBranch || f == flagLeaf || f == flagMeta || f == flagFreelist
}

// kindName names a page type for the report.
func kindName(f uint16) string {
	switch f {
	case flagBranch:
		return "branch"
	case flagLeaf:
		return "leaf"
	case flagMeta:
		return "meta"
	case flagFreelist:
		return "freelist"
	}
	return "unknown"
}

// meta is a meta page's content.
type meta struct {
	pageSize uint32
	root     uint64 // root bucket's page
	freelist uint64
	pgid     uint64 // high water mark: pages in use are below it
	txid     uint64
}

// parseMeta reads the meta at the start of a page's body (b is the page)
// and reports whether its magic, version and checksum hold.
func parseMeta(b []byte) (meta, bool) {
	if len(b) < pageHeaderSize+metaSize {
		return meta{}, false
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	h := fnv.New64a()
	_, _ = h.Write(m[:56])
	if binary.LittleEndian.Uint32(m[0:4]) != metaMagic || binary.LittleEndian.Uint32(m[4:8]) != metaVersion ||
		binary.LittleEndian.Uint64(m[56:64]) != h.Sum64() {
		return meta{}, false
	}
	return meta{
		pageSize: binary.LittleEndian.Uint32(m[8:12]),
		root:     binary.LittleEndian.Uint64(m[16:24]),
		freelist: binary.LittleEndian.Uint64(m[32:40]),
		pgid:     binary.LittleEndian.Uint64(m[40:48]),
		txid:     binary.LittleEndian.Uint64(m[48:56]),
	}, true
}

// leafItem is one element of a leaf page; key and value alias the page.
// off is the value's offset in the page buffer.
type leafItem struct {
	flags      uint32
	key, value []byte
	off        int
}

// forLeafItems calls fn for each of the first count elements of the leaf
// page in buf (the page with its overflow, or an inline page) whose key
// and value lie inside buf, and returns how many do not. Every bound is
// checked against len(buf) in 64-bit arithmetic: no element can make it
// read outside buf.
func forLeafItems(buf []byte, count int, fn func(leafItem)) (bad int) {
	for i := range count {
		e := pageHeaderSize + i*elemSize
		if e+elemSize > len(buf) {
			return bad + count - i
		}
		flags := binary.LittleEndian.Uint32(buf[e:])
		pos := uint64(binary.LittleEndian.Uint32(buf[e+4:]))
		ks := uint64(binary.LittleEndian.Uint32(buf[e+8:]))
		vs := uint64(binary.LittleEndian.Uint32(buf[e+12:]))
		start := uint64(e) + pos
		if pos < elemSize || start+ks+vs > uint64(len(buf)) {
			bad++
			continue
		}
		k := buf[start : start+ks : start+ks]
		v := buf[start+ks : start+ks+vs : start+ks+vs]
		fn(leafItem{flags: flags, key: k, value: v, off: int(start + ks)})
	}
	return bad
}

// branchElem is one element of a branch page: the first key of the
// child's subtree and the child's page id.
type branchElem struct {
	key   []byte
	child uint64
}

// branchElems returns the elements of the branch page in buf that lie
// inside it, and how many do not.
func branchElems(buf []byte, count int) (elems []branchElem, bad int) {
	for i := range count {
		e := pageHeaderSize + i*elemSize
		if e+elemSize > len(buf) {
			return elems, bad + count - i
		}
		pos := uint64(binary.LittleEndian.Uint32(buf[e:]))
		ks := uint64(binary.LittleEndian.Uint32(buf[e+4:]))
		child := binary.LittleEndian.Uint64(buf[e+8:])
		start := uint64(e) + pos
		if pos < elemSize || start+ks > uint64(len(buf)) {
			bad++
			continue
		}
		elems = append(elems, branchElem{key: buf[start : start+ks : start+ks], child: child})
	}
	return elems, bad
}

// bucketValue splits a bucket-flagged leaf value into its root page id
// and, for an inline bucket (root 0), the inline page.
func bucketValue(v []byte) (root uint64, inline []byte, ok bool) {
	if len(v) < bucketHdrSize {
		return 0, nil, false
	}
	root = binary.LittleEndian.Uint64(v[0:8])
	if root != 0 {
		return root, nil, true
	}
	if len(v) < bucketHdrSize+pageHeaderSize {
		return 0, nil, false
	}
	return 0, v[bucketHdrSize:], true
}
