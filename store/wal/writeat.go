package wal

import "sort"

// Writes is how many writes the log holds: the positions WriteAt takes,
// in log order.
func (w *WAL) Writes() int { return len(w.r.all) }

// WriteAt returns the write at position i (0 ≤ i < Writes) in log order,
// with the value its put carried when withValue.
func (w *WAL) WriteAt(i int, withValue bool) (KeyWrite, error) {
	return w.keyWrite(int32(i), withValue)
}

// WriteBefore returns the position of the write of the same key just
// before position i, and false when i is the key's first write in the log.
func (w *WAL) WriteBefore(i int) (int, bool) {
	ids := w.writesOf(w.r.keyNames[w.r.all[i].key])
	j := sort.Search(len(ids), func(j int) bool { return ids[j] >= int32(i) })
	if j == 0 {
		return 0, false
	}
	return int(ids[j-1]), true
}
