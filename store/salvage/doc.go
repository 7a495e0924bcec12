// Package salvage recovers what it can of an etcd backend file that bbolt
// refuses to open: a single member's db after a disk fault or a power cut,
// when etcd panics on start, `bbolt check` reports damaged pages, and
// there is no snapshot. Scan reads the file page by page and indexes each
// etcd key's newest readable revision; Result.WriteSnapshot writes those
// revisions, with the leases and members found, to a new snapshot file
// that `etcdutl snapshot restore` accepts; the Report says exactly what
// was read, what was lost and what is uncertain.
//
// # Why it is hand-written
//
// bbolt's page types live in go.etcd.io/bbolt/internal and cannot be
// imported, and bbolt itself reads a file only through its meta pages and
// B+tree: a meta page whose checksum fails, a freelist that does not
// parse or a branch page that points into garbage makes it refuse the
// file or panic. A salvage must instead read every page on its own terms
// and use each structure only where what it points to checks out. The
// format parts it relies on are few and stable since bbolt v1.0 (and are
// written little-endian, as on every platform etcd supports).
//
// # The bbolt page format used
//
// The file is a sequence of pages of one size (the OS page size when the
// file was created, 4096 almost always). Every page starts with a 16-byte
// header: its page id (which is its position, offset / page size; a page
// whose id field does not match its position is not a page header), flags
// (0x01 branch, 0x02 leaf, 0x04 meta, 0x10 freelist), an element count and
// an overflow count: a page with overflow n spans the n pages after it as
// well, and those carry no header of their own.
//
//   - Pages 0 and 1 are meta pages: magic 0xED0CDAED, version 2, page
//     size, the root bucket's page, the freelist's page, the high water
//     mark, the transaction id, and an FNV-64a checksum of the fields
//     before it. The valid one with the higher transaction id is current.
//     The page size is taken from a meta page whose checksum verifies,
//     else detected: the power of two from 1 KiB to 64 KiB (4 KiB tried
//     first) at which page headers name their own positions.
//   - A leaf page's elements are 16 bytes each (flags, pos, key size,
//     value size; pos is relative to the element), the keys and values
//     after them. An element flagged 0x01 is a bucket: its value is the
//     bucket's root page id and sequence (8 bytes each), and when the
//     root is 0 an inline page (header and elements as above) follows in
//     the value itself.
//   - A branch page's elements (pos, key size, child page id) name the
//     first key of each child's subtree, in order: for the "key" bucket a
//     revision, so a branch page whose child is lost still says which
//     revisions the lost page held.
//   - Freed pages keep their old contents until bbolt reuses them.
//
// # What is trusted
//
// Nothing by itself. The tree of buckets is followed from the newest meta
// page whose checksum verifies and whose root page is a leaf or branch
// page naming a "key" bucket (else the other meta page); a page it names
// is used only if its header names that page and its type fits. Leaf pages
// of the tree are read in one sequential pass over the whole file. A page
// outside the tree is a freed page: it may hold revisions that compaction
// removed since, and with them a key etcd has since deleted, so it is used
// only to fill a part of the "key" bucket whose own page is lost, and
// only for the revisions of that part (such keys are reported uncertain
// when the revision is not above the compaction). When the tree comes from
// a meta page not known to be the newest (the other one is damaged), the
// pages outside it are also read for the revisions above the tree's
// newest: the last transaction's writes. When no meta page leads to a
// usable root, every leaf page is recognised by the shape of its items
// (revision keys and mvccpb.KeyValue values, meta keys, leasepb leases,
// member ids) and the report says so.
//
// Every item is checked: a "key" bucket key is 17 bytes (8-byte
// big-endian main revision, '_', 8-byte sub revision) or 18 with a
// trailing 't' for a deletion; its value must decode as an
// mvccpb.KeyValue whose mod_revision is that main revision (a deletion's
// holds the key alone), and a page's keys must be in order. bbolt keeps no
// checksum of a page, so an item of a damaged page may pass these checks
// with damaged bytes in its value: a "key" bucket page with any item that
// fails them is not used at all (its range is reported lost), and damage
// that keeps every item well formed cannot be seen here; Options.Readable
// (decoding the value) is the second line. Every length is bounded by the page, every page
// by the file; every loop by the number of pages or elements; no length
// read from the file is allocated before it is checked against the file's
// size.
//
// # What is kept
//
// Per etcd key, the newest revision whose value passes Options.Readable;
// a key whose newest surviving revision is a deletion stays deleted, and
// an older readable revision is never kept across a deletion newer than
// it. The scan keeps in memory only this index (revision, offset, length,
// checksum per key), not the values: WriteSnapshot reads them again.
package salvage
