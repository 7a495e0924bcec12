package wal

import (
	"hash/maphash"
	"slices"
	"sort"
	"strings"
)

// The prefix is the log's entries at or below its db's consistent index:
// in the db, whose compaction has usually removed their revisions, from a
// state before the log that neither holds. Settle proves what it did.

// valueSeed hashes values: the prefix keeps a hash of each value.
var valueSeed = maphash.MakeSeed()

func valueHash(v []byte) uint64 { return maphash.Bytes(valueSeed, v) }

// keyRanges is a union of key ranges [from, end), end "" for none, sorted
// and disjoint.
type keyRanges [][2]string

// rangeUnion returns the union of the range deletes' ranges.
func rangeUnion(entries []pxEntry) keyRanges {
	var rs keyRanges
	for i := range entries {
		if e := &entries[i]; e.ranged {
			end := e.end
			if end == "\x00" {
				end = ""
			}
			if end == "" || e.from < end {
				rs = append(rs, [2]string{e.from, end})
			}
		}
	}
	slices.SortFunc(rs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var out keyRanges
	for _, r := range rs {
		if n := len(out); n > 0 && (out[n-1][1] == "" || r[0] <= out[n-1][1]) {
			if out[n-1][1] != "" && (r[1] == "" || r[1] > out[n-1][1]) {
				out[n-1][1] = r[1]
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// has reports whether key is in one of the ranges.
func (rs keyRanges) has(key string) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i][0] > key }) - 1
	return i >= 0 && (rs[i][1] == "" || key < rs[i][1])
}
