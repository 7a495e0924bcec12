package wal

import (
	"context"
	"fmt"
)

// dbItem is one item of the db's key bucket at a revision: the key's
// number in the prefix (-1: a key the prefix never names), whether it is a
// tombstone, and the value's hash.
type dbItem struct {
	key  int32
	tomb bool
	hash uint64
}

// dbIndex holds the db's items at the revisions the prefix can have made,
// by revision (lo to hi): memory bounded by the number of revisions, not
// by their values.
type dbIndex struct {
	lo, hi int64
	off    []int32 // items of revision lo+i: items[off[i]:off[i+1]]
	items  []dbItem
}

// loadDBIndex reads the db's items at revisions lo to hi.
func loadDBIndex(ctx context.Context, db prefixDB, names *pxKeys, lo, hi int64) (*dbIndex, error) {
	lo = max(lo, 1)
	x := &dbIndex{lo: lo, hi: hi}
	if hi < lo {
		x.off = []int32{0}
		return x, nil
	}
	x.off = make([]int32, hi-lo+2)
	next := lo
	err := db.revisions(ctx, lo, hi, func(main int64, key []byte, tomb bool, value []byte) error {
		for ; next <= main; next++ {
			x.off[next-lo] = int32(len(x.items))
		}
		id, ok := names.ids[string(key)]
		if !ok {
			id = -1
		}
		it := dbItem{key: id, tomb: tomb}
		if !tomb {
			it.hash = valueHash(value)
		}
		x.items = append(x.items, it)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the db's revisions %d to %d: %w", lo, hi, err)
	}
	for ; next <= hi+1; next++ {
		x.off[next-lo] = int32(len(x.items))
	}
	return x, nil
}

// at returns the db's items at revision rev.
func (x *dbIndex) at(rev int64) []dbItem {
	if x == nil || rev < x.lo || rev > x.hi {
		return nil
	}
	i := rev - x.lo
	return x.items[x.off[i]:x.off[i+1]]
}
