package wal

import (
	"context"
	"fmt"
	"slices"
)

// Anchoring the prefix's revisions in the db.
//
// The entries that may or may not have made a revision (a revoke of a
// lease granted before the log, a lone delete of a key from before it, a
// range delete the log knows no key of to exist)
// cut the prefix into segments; within a segment the revisions follow
// from counting, but where a segment starts is one unknown. Compares fix
// some starts (a writer names the revision it read). The db fixes more:
// its key bucket is keyed by revision, and holds every revision above its
// compaction revision (with its key and value, tombstones included) and,
// at or below it, each live key's newest write. So a start b is possible
// for a segment only if every revision b would give its writes agrees
// with what the db holds there:
//
//   - above the compaction revision, the db's items at that revision are
//     exactly the writes the segment's entry made there (keys, puts or
//     tombstones, and the value's hash);
//   - at or below it, every item the db holds there is one of them.
//
// A range delete's revision may hold more tombstones than the deletes the
// log establishes: of the keys it names whose existence there is unknown,
// and of keys it never names. Those are allowed there (and at the
// revision an uncertain range delete may have made), never taken for a
// misfit.
//
// The possible starts are worked out segment by segment from the end (the
// last segment ends at the db's revision) and back from the start (each
// uncertain entry made one revision or none), with the compares' pins as
// fixed points. A segment left with one possible start is established; a
// segment left with several makes only its own writes' revisions unknown
// (their outcomes still follow from the compares), never the rest of the
// log's. A pin from a compare that no possible start agrees with comes
// from a stale compare: the prefix is then worked out again with the
// starts the db allows, so that the compare is evaluated, not trusted.
// Those starts are the ones for the writes the segment had; where the
// compares evaluated so give it other writes, its starts are worked out
// again, not kept (see staleStarts).

// anchorBudget bounds the revisions looked up for one segment (the number
// of its possible starts times its revisions). Past it the segment's
// starts are not narrowed by the db (a superset: less is established,
// nothing wrong): a long stretch of the log the db compacted away, cut by
// many uncertain entries, would otherwise cost time quadratic in it.
const anchorBudget = 1 << 22

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
	lo, hi  int64
	compact int64
	off     []int32 // items of revision lo+i: items[off[i]:off[i+1]]
	items   []dbItem
}

// loadDBIndex reads the db's items at revisions lo to hi.
func loadDBIndex(ctx context.Context, db prefixDB, names *pxKeys, lo, hi int64) (*dbIndex, error) {
	lo = max(lo, 1)
	x := &dbIndex{lo: lo, hi: hi, compact: db.compactRevision()}
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

// held reports whether the db holds every revision at rev (above its
// compaction), so that an empty revision there refutes a write.
func (x *dbIndex) held(rev int64) bool {
	return x != nil && rev > x.compact && rev >= x.lo && rev <= x.hi
}

// segSpan is segment j's relative revisions: (startRel, end].
func (p *pxSolver) segSpan(j int) (start, end int64) {
	start = p.segs[j].startRel
	if j+1 < len(p.segs) {
		return start, p.segs[j+1].startRel
	}
	return start, p.rel
}

// byRel lists the applied writes (indexes into p.writes) of each relative
// revision.
func (p *pxSolver) byRel() (off []int32, ws []int32) {
	off = make([]int32, p.rel+2)
	for i := range p.writes {
		if w := &p.writes[i]; w.applied && w.rel > 0 {
			off[w.rel+1]++
		}
	}
	for r := int64(1); r <= p.rel+1; r++ {
		off[r] += off[r-1]
	}
	ws = make([]int32, off[p.rel+1])
	fill := slices.Clone(off)
	for i := range p.writes {
		if w := &p.writes[i]; w.applied && w.rel > 0 {
			ws[fill[w.rel]] = int32(i)
			fill[w.rel]++
		}
	}
	return off, ws
}

// anchor works out the segments' possible starts (see the comment at the
// top of this file) from the db's items x (nil: the db's revision alone)
// and the db's revision. With pins, a segment pinned by a compare may
// start only where the compare puts it. It returns the starts, sorted, per
// segment, or the first segment no start fits (-1: none).
func (p *pxSolver) anchor(x *dbIndex, dbRev int64, pins bool) ([][]int64, int) {
	n := len(p.segs)
	off, ws := p.byRel()
	// fits filters segment j's candidate starts by the db: first by keys
	// and kinds, then by values where that leaves any. A start fitting
	// keys alone gives some write another value than the db holds at its
	// revision: checkValues then refuses the solve, naming the key.
	fits := func(j int, cand []int64) []int64 {
		start, end := p.segSpan(j)
		if x == nil || int64(len(cand))*(end-start) > anchorBudget {
			return cand
		}
		var byKey, byValue []int64
		for _, b := range cand {
			keyFit, valueFit := true, true
			for rel := start + 1; rel <= end && keyFit; rel++ {
				a := b + rel - start
				k, v := p.revisionFits(x.at(a), x.held(a), ws[off[rel]:off[rel+1]], true)
				keyFit, valueFit = k, valueFit && v
			}
			if keyFit {
				byKey = append(byKey, b)
				if valueFit {
					byValue = append(byValue, b)
				}
			}
		}
		if len(byValue) > 0 {
			return byValue
		}
		return byKey
	}
	delKey := p.uncertainDeletes()
	// boundary reports whether segment j's uncertain entry can have made
	// revision v (it made one when segment j starts one past where j-1
	// ends).
	boundary := func(j int, v int64) bool {
		items := x.at(v)
		if x.held(v) && len(items) == 0 {
			return false
		}
		del := delKey[j]
		ranged := int32(-1)
		if e := p.segs[j].revoke; e >= 0 && p.entries[e].ranged {
			ranged = e
		}
		for _, it := range items {
			if !it.tomb || del >= 0 && it.key != del {
				return false
			}
			// A range delete's: of a key it may have deleted, or one
			// the log never names.
			if ranged >= 0 && it.key >= 0 && !p.maybeOf[ranged][it.key] {
				return false
			}
		}
		return !(del >= 0 && x.held(v) && len(items) != 1)
	}
	length := func(j int) int64 { s, e := p.segSpan(j); return e - s }
	F := make([][]int64, n)
	for j := n - 1; j >= 0; j-- {
		var cand []int64
		if j == n-1 {
			cand = []int64{dbRev - length(j)}
		} else {
			for _, b := range F[j+1] {
				if boundary(j+1, b) {
					cand = append(cand, b-length(j)-1)
				}
				cand = append(cand, b-length(j))
			}
			slices.Sort(cand)
			cand = slices.Compact(cand)
		}
		if j == 0 {
			lo := max(int64(1), p.maxPreMod)
			cand = slices.DeleteFunc(cand, func(b int64) bool { return b < lo })
		}
		// A compaction in the segment compacts a revision made by then.
		for _, c := range p.compactions {
			if c.seg == j {
				lo := c.rev - (c.rel - p.segs[j].startRel)
				cand = slices.DeleteFunc(cand, func(b int64) bool { return b < lo })
			}
		}
		if pins && p.segs[j].pinned {
			cand = slices.DeleteFunc(cand, func(b int64) bool { return b != p.segs[j].base })
		}
		if cand = fits(j, cand); len(cand) == 0 {
			return F, j
		}
		F[j] = cand
	}
	// Forward: a start must also follow from a possible start before it.
	for j := 1; j < n; j++ {
		prev := F[j-1]
		F[j] = slices.DeleteFunc(F[j], func(b int64) bool {
			for _, a := range prev {
				end := a + length(j-1)
				if b == end || b == end+1 && boundary(j, b) {
					return false
				}
			}
			return true
		})
		if len(F[j]) == 0 {
			return F, j
		}
	}
	return F, -1
}

// revisionFits checks one revision a candidate start gives: items are
// what the db holds there (held: every revision there is held), ws the
// writes the segment made at it. keyFit: the keys and kinds agree;
// valueFit: the values too (checked when values).
//
// A range delete's revision may hold more tombstones than its certain
// deletes: of the keys it may have deleted (pxWrite.maybe) and of keys the
// log never names (key -1). Its certain deletes must all be there when
// the revision is held.
func (p *pxSolver) revisionFits(items []dbItem, held bool, ws []int32, values bool) (keyFit, valueFit bool) {
	ranged := int32(-1)
	if len(ws) > 0 && p.entries[p.writes[ws[0]].entry].ranged {
		ranged = p.writes[ws[0]].entry
	}
	if held && ranged < 0 && len(items) != len(ws) {
		return false, false
	}
	valueFit = true
	matched := 0
	for _, it := range items {
		found := false
		for _, wi := range ws {
			w := &p.writes[wi]
			if w.key != it.key || w.del != it.tomb {
				continue
			}
			found = true
			if !w.del && values && w.hash != it.hash {
				valueFit = false
			}
			break
		}
		switch {
		case found:
			matched++
		case ranged >= 0 && it.tomb && (it.key < 0 || p.maybeOf[ranged][it.key]):
		default:
			return false, false
		}
	}
	if held && matched != len(ws) {
		return false, false
	}
	return true, valueFit
}

// uncertainDeletes returns, per segment, the key the uncertain delete
// starting it deletes (-1: the segment starts with a revoke, or is the
// first).
func (p *pxSolver) uncertainDeletes() []int32 {
	keys := make([]int32, len(p.segs))
	for i := range keys {
		keys[i] = -1
	}
	for i := range p.writes {
		if w := &p.writes[i]; w.seg > 0 {
			keys[w.seg] = w.key
		}
	}
	return keys
}

// checkValues refuses a solve that gives a put a revision at which the db
// holds another value of its key: the model gave some write the wrong
// value (a stale compare taken to hold, or a db changed by hand), and its
// revisions would be claimed for it.
func (p *pxSolver) checkValues() {
	for i := range p.writes {
		w := &p.writes[i]
		if !w.applied || w.del {
			continue
		}
		a, ok := p.relAbsOK(w.rel)
		if !ok {
			continue
		}
		for _, it := range p.db.at(a) {
			if it.key == w.key && !it.tomb && it.hash != w.hash {
				p.failf("%s: the db's value at revision %d is not the one entry %d wrote there", p.name(w.key), a, p.entries[w.entry].index)
				return
			}
		}
	}
}

// checkPreStates holds what the compares taken to hold said of keys before
// the log against the db's revisions there: above its compaction the db
// holds every revision, so a key said present at mod revision M has no
// write between M and the revision before the log (and its put at M is
// there when the db holds M), and a key said absent is not present at
// the last of its revisions there. Revisions up to the lowest the
// revision before the log may be are read.
func (p *pxSolver) checkPreStates() {
	x := p.db
	if x == nil {
		return
	}
	xLo := p.segs[0].lo
	if p.segs[0].pinned {
		xLo = p.segs[0].base
	}
	from := max(x.lo, x.compact+1)
	if xLo < from {
		return
	}
	type item struct {
		rev  int64
		tomb bool
	}
	last := map[int32]item{}
	at := map[[2]int64]bool{} // key, revision: a put there
	for rev := from; rev <= xLo; rev++ {
		for _, it := range x.at(rev) {
			if it.key < 0 || p.keys[it.key].fc == 0 {
				continue
			}
			last[it.key] = item{rev, it.tomb}
			if !it.tomb {
				at[[2]int64{int64(it.key), rev}] = true
			}
		}
	}
	for k := range p.keys {
		s := &p.keys[k]
		if s.fc == 0 {
			continue
		}
		l, ok := last[int32(k)]
		e := p.entries[s.fcEntry].index
		switch {
		case s.fc == 2 && ok && !l.tomb:
			p.failf("%s: the db holds it at revision %d, before the log's start, where entry %d's compare takes it to be absent", p.name(int32(k)), l.rev, e)
		case s.fc == 1 && ok && l.tomb:
			p.failf("%s: the db holds its deletion at revision %d, before the log's start, where entry %d's compare takes it to be present", p.name(int32(k)), l.rev, e)
		case s.fc == 1 && s.preRev > 0 && ok && l.rev > s.preRev:
			p.failf("%s: the db holds a write of it at revision %d, before the log's start and after revision %d, which entry %d's compare takes for its state there", p.name(int32(k)), l.rev, s.preRev, e)
		case s.fc == 1 && s.preRev >= from && s.preRev <= xLo && !at[[2]int64{int64(k), s.preRev}]:
			p.failf("%s: the db does not hold its write at revision %d, which entry %d's compare takes for its state before the log", p.name(int32(k)), s.preRev, e)
		}
		if p.fail != "" {
			return
		}
	}
}
