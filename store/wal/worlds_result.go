package wal

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/walread"
)

// xClaim gathers what the consistent worlds say of one number.
type xClaim struct {
	v, alt int64 // the first value given; another, when they differ
	lo, hi int64 // the lowest and highest value given
	lowPos int64 // the lowest value above 0 given (0: none)
	n      int32 // the worlds that gave a value
	diff   bool  // two worlds differ, or one left it open
	open   bool  // a world left it open (a number from before the log it does not fix)
}

func (c *xClaim) add(v int64) {
	if v > 0 && (c.lowPos == 0 || v < c.lowPos) {
		c.lowPos = v
	}
	if c.n == 0 {
		c.v, c.lo, c.hi = v, v, v
	} else {
		if v != c.v && !c.diff {
			c.diff, c.alt = true, v
		}
		c.lo, c.hi = min(c.lo, v), max(c.hi, v)
	}
	c.n++
}

func (c *xClaim) addOpen() { c.diff, c.open = true, true }

// get returns the claim's value and whether every world gave it.
func (c *xClaim) get() (int64, bool) { return c.v, c.n > 0 && !c.diff }

// xEntryClaim is what the worlds say of an entry.
type xEntryClaim struct {
	outcome, why, rev xClaim
}

// xWriteClaim is what the worlds say of one write: whether it applied
// (1) or not (0), and, applied, the key's mod and create revision and
// version after it.
type xWriteClaim struct {
	applied, mod, create, version xClaim
}

// worldsResult is what the search of the prefix's worlds established.
type worldsResult struct {
	// complete: every consistent world was found; else why says why not,
	// and nothing is established.
	complete bool
	why      string
	// worlds counts the consistent worlds found (a path that reaches a
	// state whose future is consistent counts once, for every world that
	// future holds); with none, noWorld says why the branch that went
	// furthest ended.
	worlds  int
	noWorld string
	x       xClaim
	entries []xEntryClaim
	ops     []xWriteClaim // by opIndex
	opBase  []int32
	// dyn holds the deletes of keys by revokes (of the keys the log
	// puts with their lease) and range deletes (of the keys in the range
	// the log names), by entry and key: every world says of each whether
	// it deleted it. lazy holds the keys a revoke of a lease from before
	// the log may have deleted besides (attached to it there): never
	// established.
	dyn  map[[2]int32]*xWriteClaim
	lazy map[[2]int32]bool
	// settled is what settle fixed: established where the search did not
	// finish; rangedKeys the keys the log names in each range delete's
	// range, dbRev the db's revision.
	settled    *settled
	rangedKeys map[int32][]int32
	dbRev      int64
	// pre holds, by key, whether it existed before the log (1) or not.
	pre   []xClaim
	steps int64
}

// established reports whether r holds claims: the search covered every
// world and found one at least.
func (r *worldsResult) established() bool { return r != nil && r.complete && r.worlds > 0 }

// worldsBudget bounds the search's steps: an entry (or one key's check
// against the db) worked out in one branch is a step. Past it the search
// establishes nothing (what settle fixed stands). On a log of any length
// the pace (worldsPace) stops a search that is not getting on before it;
// a variable for tests (1: settle alone).
var worldsBudget = func(entries int) int64 { return 64*int64(entries) + 1<<23 }

// debugWorldsChoices, set by a test, counts the search's branch points.
var debugWorldsChoices map[string]int

// solveWorlds searches the worlds of the prefix entries over db (whose
// revision is dbRev; x its items at the revisions the prefix may have
// made). exact: the log starts at raft index 1 (nothing before it).
func solveWorlds(ctx context.Context, entries []pxEntry, names *pxKeys, exact bool, dbRev int64, db prefixDB, x *dbIndex) *worldsResult {
	n := int32(len(entries))
	res := &worldsResult{entries: make([]xEntryClaim, n), dyn: map[[2]int32]*xWriteClaim{}, lazy: map[[2]int32]bool{}}
	for i := range entries {
		pe := &entries[i]
		if pe.unmodelled != "" {
			res.why = fmt.Sprintf("entry %d: %s: not modelled", pe.index, pe.unmodelled)
			return res
		}
		for _, c := range pe.cmps {
			if c.target == pb.Compare_VALUE && c.result != pb.Compare_EQUAL && c.result != pb.Compare_NOT_EQUAL {
				res.why = fmt.Sprintf("entry %d: a compare of a value by order: not modelled", pe.index)
				return res
			}
		}
	}
	s := &worlds{ctx: ctx, entries: entries, names: names, exact: exact, dbRev: dbRev, dbK: db.compactRevision(), db: x, res: res}
	why, err := s.load(ctx, db)
	if err != nil {
		// Not a verdict on the worlds: the db could not be read.
		res.why = "reading the db: " + err.Error()
		return res
	}
	if why != "" {
		res.complete, res.noWorld = true, why
		return res
	}
	res.opBase = s.opBase
	res.settled, res.rangedKeys, res.dbRev = s.settled, s.ranged, s.dbRev
	res.ops = make([]xWriteClaim, len(s.anchors))
	res.pre = make([]xClaim, len(names.names))
	s.budget = worldsBudget(len(entries))
	s.debugChoices = debugWorldsChoices
	s.erecs = make([]xERec, n)
	s.memo = make(map[[2]uint64]int32, n)
	// The main path's records and trail, sized once (a log may hold a
	// million entries).
	s.recs = make([]xRec, 0, len(s.anchors)+2*len(s.keys))
	s.keyTrail = make([]xKeyUndo, 0, len(s.keys))
	s.dirtyK = make([]int32, 0, 2*len(s.anchors))
	s.memos = make([]xMemo, 0, n)
	s.pre = slices.Grow(s.pre, len(s.keys)-len(s.pre))
	s.preKeys = slices.Grow(s.preKeys, len(s.keys)-len(s.preKeys))
	s.puts = slices.Grow(s.puts, len(s.anchors))
	if s.walk() {
		res.complete = true
	} else {
		res.why = s.why
	}
	res.steps = s.steps
	if res.worlds == 0 {
		res.noWorld = s.furthest
	}
	return res
}

// load reads what the search needs of the db and of the entries, and sets
// up the state before the first entry. It returns why no world can be
// consistent, if the db says so at once, or the error reading it.
func (s *worlds) load(ctx context.Context, db prefixDB) (string, error) {
	names := s.names.names
	nk := int32(len(names))
	n := int32(len(s.entries))
	// The ops, and the puts' anchors: a put's key and value that no other
	// put of the log writes, where the db holds them. The puts are sorted
	// by key and value hash (no map: a log may hold a million).
	s.opBase = make([]int32, n+1)
	type put struct {
		key  int32
		hash uint64
		op   int32
	}
	var puts []put
	for i := range s.entries {
		pe := &s.entries[i]
		s.opBase[i+1] = s.opBase[i] + int32(len(pe.succ)+len(pe.fail))
		j := s.opBase[i]
		for _, ops := range [][]pxOp{pe.succ, pe.fail} {
			for _, op := range ops {
				if !op.del {
					puts = append(puts, put{op.key, op.hash, j})
				}
				j++
			}
		}
	}
	slices.SortFunc(puts, func(a, b put) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.hash, b.hash)
	})
	s.anchors = make([]int64, s.opBase[n])
	// hold notes that the db holds key's value hash at rev: the put of the
	// log that writes them alone made it (two revisions: no anchor).
	hold := func(key int32, hash uint64, rev int64) {
		i, found := slices.BinarySearchFunc(puts, put{key: key, hash: hash}, func(a, b put) int {
			if c := cmp.Compare(a.key, b.key); c != 0 {
				return c
			}
			return cmp.Compare(a.hash, b.hash)
		})
		if !found || i+1 < len(puts) && puts[i+1].key == key && puts[i+1].hash == hash {
			return
		}
		switch a := &s.anchors[puts[i].op]; {
		case *a == 0:
			*a = rev
		case *a != rev:
			*a = -1
		}
	}
	if s.db != nil {
		for rev := s.db.lo; rev <= s.db.hi; rev++ {
			for _, it := range s.db.at(rev) {
				if it.key >= 0 && !it.tomb {
					hold(it.key, it.hash, rev)
				}
			}
		}
	} else {
		s.db = &dbIndex{lo: 1, hi: 0, off: []int32{0}}
	}
	// The db's live keys: those the log names, and the highest mod
	// revision of the others (at or below X: the log did not write them).
	s.live = make([]xLive, nk)
	var unnamedRanged string
	ranges := rangeUnion(s.entries)
	err := db.live(ctx, s.names, func(v *store.KeyValue, k int32, hash uint64) error {
		if k < 0 {
			s.unnamedX = max(s.unnamedX, v.ModRevision)
			if unnamedRanged == "" && ranges.has(v.Key) {
				unnamedRanged = v.Key
			}
			return nil
		}
		s.live[k] = xLive{present: true, create: v.CreateRevision, mod: v.ModRevision, version: v.Version, lease: v.Lease, hash: hash}
		hold(k, hash, v.ModRevision)
		return nil
	})
	if err != nil {
		return "", err
	}
	if unnamedRanged != "" {
		return fmt.Sprintf("%s: in the db from before the log, yet a range delete of the log deletes every key of its range", unnamedRanged), nil
	}
	for i, a := range s.anchors {
		if a < 0 {
			s.anchors[i] = 0
		}
	}
	s.countBounds(nil)
	s.lookAhead()
	ids, err := db.leaseIDs()
	if err != nil {
		return "", err
	}
	s.dbLeases = make(map[int64]bool, len(ids))
	for _, id := range ids {
		s.dbLeases[id] = true
	}
	// The keys' items at the revisions read, by key.
	s.itemOff = make([]int32, nk+1)
	for _, it := range s.db.items {
		if it.key >= 0 {
			s.itemOff[it.key+1]++
		}
	}
	for k := int32(0); k < nk; k++ {
		s.itemOff[k+1] += s.itemOff[k]
	}
	s.items = make([]xItem, s.itemOff[nk])
	fill := slices.Clone(s.itemOff)
	for rev := s.db.lo; rev <= s.db.hi; rev++ {
		for _, it := range s.db.at(rev) {
			if it.key >= 0 {
				s.items[fill[it.key]] = xItem{rev: rev, tomb: it.tomb, hash: it.hash}
				fill[it.key]++
			}
		}
	}
	// The leases the entries name, and the keys put with each.
	s.leaseIx = map[int64]int32{}
	leaseOf := func(id int64) {
		if _, ok := s.leaseIx[id]; !ok {
			s.leaseIx[id] = int32(len(s.leases))
			st := int8(-1)
			if s.exact {
				st = 0
			}
			s.leases = append(s.leases, xLease{id: id, st: st, att: xNone})
		}
	}
	putWith := map[int64][]int32{}
	for i := range s.entries {
		pe := &s.entries[i]
		switch pe.kind {
		case walread.KindLeaseGrant, walread.KindLeaseRevoke:
			leaseOf(pe.id)
		}
		for _, ops := range [][]pxOp{pe.succ, pe.fail} {
			for _, op := range ops {
				if !op.del && op.lease != 0 {
					leaseOf(op.lease)
					putWith[op.lease] = append(putWith[op.lease], op.key)
				}
			}
		}
	}
	s.putWith = make(map[int64][]int32, len(putWith))
	for l, ks := range putWith {
		slices.Sort(ks)
		s.putWith[l] = slices.Compact(ks)
	}
	// The last entry that can change each key (or compare it): there the
	// key is held against the db.
	last := make([]int32, nk)
	for i := range last {
		last[i] = -1
	}
	sorted := make([]int32, nk)
	for i := range sorted {
		sorted[i] = int32(i)
	}
	slices.SortFunc(sorted, func(a, b int32) int {
		switch {
		case names[a] < names[b]:
			return -1
		case names[a] > names[b]:
			return 1
		}
		return 0
	})
	s.ranged = map[int32][]int32{}
	for i := range s.entries {
		e := int32(i)
		pe := &s.entries[i]
		for _, c := range pe.cmps {
			last[c.key] = e
		}
		for _, ops := range [][]pxOp{pe.succ, pe.fail} {
			for _, op := range ops {
				last[op.key] = e
			}
		}
		if pe.ranged {
			j := sort.Search(len(sorted), func(j int) bool { return names[sorted[j]] >= pe.from })
			var ks []int32
			for ; j < len(sorted) && pe.inRange(names[sorted[j]]); j++ {
				ks = append(ks, sorted[j])
				last[sorted[j]] = e
			}
			s.ranged[e] = ks
		}
		if pe.kind == walread.KindLeaseRevoke {
			for _, k := range putWith[pe.id] {
				last[k] = e
			}
		}
	}
	s.last = last
	s.finOff = make([]int32, n+2)
	for _, e := range last {
		if e >= 0 {
			s.finOff[e+1]++
		}
	}
	for e := int32(0); e <= n; e++ {
		s.finOff[e+1] += s.finOff[e]
	}
	s.finKeys = make([]int32, s.finOff[n+1])
	fill = slices.Clone(s.finOff)
	for k, e := range last {
		if e >= 0 {
			s.finKeys[fill[e]] = int32(k)
			fill[e]++
		}
	}
	// Keys the log never writes nor compares are not held: none.
	s.keys = make([]xKey, nk)
	for k := range s.keys {
		s.keys[k] = xKey{preExists: -1, puts: xNone, preIx: xNone}
		if s.exact {
			s.keys[k].preExists = 0
		}
	}
	s.g.x = freeSym(max(1, s.unnamedX, s.dbRev-int64(n), s.preCompares), s.dbRev)
	s.g.k0 = freeSym(0, s.dbRev)
	if s.exact {
		// A new etcd's keyspace starts at revision 1.
		s.g.x = xSym{v: 1, lo: 1, hi: 1, pinned: true, not: xNone}
		s.g.k0 = xSym{lo: 0, hi: 0, pinned: true, not: xNone}
		if s.unnamedX > 1 {
			return fmt.Sprintf("the db holds keys the log never writes (changed at revision %d), yet the log starts at raft index 1", s.unnamedX), nil
		}
	}
	// What counting and the compare chains fix, before any search.
	s.settled = s.settle()
	if s.settled.noWorld != "" {
		return s.settled.noWorld, nil
	}
	s.countBounds(s.settled)
	return "", nil
}

// record adds the current path, a consistent world (X known) or one that
// reaches a state whose future was found consistent (see memo), to the
// claims. A path's records are added a segment (between two branch points)
// at a time, and each segment once: the segments it shares with a path
// recorded before hold the same records, whose values depend on X only
// where X was known when they were made (else they are added again).
func (s *worlds) record() {
	res := s.res
	x := s.g.x.v
	res.worlds++
	res.x.add(x)
	// The segments above the first branch point made with X known, from
	// the top down to one recorded already.
	first := sort.Search(len(s.stack), func(i int) bool { return s.stack[i].mark.g.x.pinned })
	for i := len(s.stack) - 1; i >= first; i-- {
		if s.stack[i].recorded {
			break
		}
		s.stack[i].recorded = true
		s.recordSegment(i, x)
	}
	// Below it, X was not known yet: added every time.
	for i := first - 1; i >= -1; i-- {
		s.recordSegment(i, x)
	}
}

// recordSegment adds segment i of the current path (-1: before the first
// branch point) to the claims.
func (s *worlds) recordSegment(i int, x int64) {
	e0, r0 := int32(0), 0
	if i >= 0 {
		e0, r0 = s.stack[i].mark.g.made, s.stack[i].mark.recs
	}
	e1, r1 := s.g.made, len(s.recs)
	if i+1 < len(s.stack) {
		e1, r1 = s.stack[i+1].mark.g.made, s.stack[i+1].mark.recs
	}
	res := s.res
	for e := e0; e < e1; e++ {
		r := s.erecs[e]
		c := &res.entries[e]
		switch {
		case r.dep > x:
			// A compaction applied unless the compaction before the
			// log (K0) was at or above it; K0 is at most X, the
			// revision before the log.
			c.outcome.add(int64(OutcomeApplied))
			c.why.add(int64(whyNone))
		case r.open || r.dep != 0:
			// A revoke that made no revision (see xERec.open); a
			// compaction at or below X, which K0 may have refused.
			c.outcome.addOpen()
			c.why.addOpen()
		default:
			c.outcome.add(int64(r.outcome))
			c.why.add(int64(r.why))
		}
		rev := int64(0)
		if r.revC > 0 {
			rev = x + r.revC
		}
		c.rev.add(rev)
	}
	for j := r0; j < r1; j++ {
		r := &s.recs[j]
		switch r.op {
		case opPre:
			if r.applied >= 0 {
				res.pre[r.key].add(int64(r.applied))
			} else {
				res.pre[r.key].addOpen()
			}
		case opLazy:
			res.lazy[[2]int32{r.entry, r.key}] = true
		case opDyn:
			k := [2]int32{r.entry, r.key}
			c := res.dyn[k]
			if c == nil {
				c = &xWriteClaim{}
				res.dyn[k] = c
			}
			s.addWrite(c, r, x)
		default:
			s.addWrite(&res.ops[r.op], r, x)
		}
	}
}

// addWrite adds what record r says to c.
func (s *worlds) addWrite(c *xWriteClaim, r *xRec, x int64) {
	switch r.applied {
	case -1:
		c.applied.addOpen()
		c.mod.addOpen()
		return
	case 0:
		c.applied.add(0)
		c.mod.add(0)
		return
	}
	c.applied.add(1)
	c.mod.add(x + r.modC)
	if r.del {
		return
	}
	// A create revision and version from before the log are the key's
	// there, which what comes after the write may fix: not recorded (the
	// write's own segment would hold them for every path through it).
	switch r.crKind {
	case crRel:
		c.create.add(x + r.crV)
	default:
		c.create.addOpen()
	}
	switch r.verKind {
	case verAbs:
		c.version.add(r.verN)
	default:
		c.version.addOpen()
	}
}

// countBounds works out, by entry, how many of the entries before it
// certainly make a revision (certain) and how many may (possible), and the
// next entry the db anchors (see xBounds).
func (s *worlds) countBounds(st *settled) {
	n := len(s.entries)
	s.certain = make([]int32, n+1)
	s.possible = make([]int32, n+1)
	s.nextAnchor = make([]int32, n+1)
	s.anchorRev = make([]int64, n+1)
	s.nextAnchor[n] = int32(n)
	if st != nil {
		// What settle fixed: the entries that made a revision or not, and
		// which.
		for i := n - 1; i >= 0; i-- {
			s.nextAnchor[i], s.anchorRev[i] = s.nextAnchor[i+1], s.anchorRev[i+1]
			if st.rev[i] != 0 {
				s.nextAnchor[i], s.anchorRev[i] = int32(i), st.rev[i]
			}
		}
		for i := range n {
			s.certain[i+1] = s.certain[i] + int32(b2i(st.made[i] == 1))
			s.possible[i+1] = s.possible[i] + int32(b2i(st.made[i] != 0))
		}
		return
	}
	for i := range s.entries {
		pe := &s.entries[i]
		anchored, writes := false, pe.ranged || pe.kind == walread.KindLeaseRevoke
		for b, ops := range [][]pxOp{pe.succ, pe.fail} {
			for j := range ops {
				writes = true
				if s.anchors[s.opIndex(int32(i), j, b == 1)] != 0 {
					anchored = true
				}
			}
		}
		// A put without a lease outside a transaction, or in one without
		// compares whose puts name no lease, always applies.
		sure := anchored
		if !sure && len(pe.cmps) == 0 && (pe.kind == walread.KindPut || pe.kind == walread.KindTxn) {
			puts := 0
			for _, op := range pe.succ {
				if !op.del {
					puts++
					if op.lease != 0 {
						puts = -len(pe.succ) - 1
					}
				}
			}
			sure = puts > 0
		}
		s.certain[i+1] = s.certain[i] + int32(b2i(sure))
		s.possible[i+1] = s.possible[i] + int32(b2i(writes))
	}
	for i := n - 1; i >= 0; i-- {
		s.nextAnchor[i], s.anchorRev[i] = s.nextAnchor[i+1], s.anchorRev[i+1]
		pe := &s.entries[i]
		for b, ops := range [][]pxOp{pe.succ, pe.fail} {
			for j := range ops {
				if r := s.anchors[s.opIndex(int32(i), j, b == 1)]; r != 0 {
					s.nextAnchor[i], s.anchorRev[i] = int32(i), r
				}
			}
		}
	}
}

// xBounds bounds X before entry e is worked out, with c revisions made: the
// entries from e on make at least the certain ones and at most the
// possible ones, and the db's revision follows the last; the next entry
// the db anchors (its put's key and value at a revision) made exactly that
// revision.
func (s *worlds) xBounds(e int32) bool {
	n := int32(len(s.entries))
	c := s.g.c
	hi := s.dbRev - c - int64(s.certain[n]-s.certain[e])
	lo := s.dbRev - c - int64(s.possible[n]-s.possible[e])
	if a := s.nextAnchor[e]; a < n {
		r := s.anchorRev[e]
		hi = min(hi, r-c-1-int64(s.certain[a]-s.certain[e]))
		lo = max(lo, r-c-1-int64(s.possible[a]-s.possible[e]))
	}
	return s.restrictX(rLe, hi) && s.restrictX(rGe, lo)
}

// lookAhead works out, for each put of the log, the highest revision a
// compare of its key's mod revision names after it, up to and with the
// next entry that puts the key (lookR): where the put does not apply and
// the log has applied no put of the key before, those compares name
// revisions from before the log (a writer names a revision the key was
// put at), so X is at least that. The same for the compares before each
// key's first put gives X's first lower bound (preCompares).
func (s *worlds) lookAhead() {
	s.lookR = make([]int64, len(s.anchors))
	acc := make([]int64, len(s.names.names))
	for i := len(s.entries) - 1; i >= 0; i-- {
		pe := &s.entries[i]
		puts := false
		for b, ops := range [][]pxOp{pe.succ, pe.fail} {
			for j, op := range ops {
				if !op.del {
					s.lookR[s.opIndex(int32(i), j, b == 1)] = acc[op.key]
					puts = true
				}
			}
		}
		// This entry's compares come before its puts.
		mine := map[int32]int64{}
		for _, c := range pe.cmps {
			if c.target == pb.Compare_MOD && c.result == pb.Compare_EQUAL && c.value > 0 {
				mine[c.key] = max(mine[c.key], c.value)
			}
		}
		if puts {
			for _, ops := range [][]pxOp{pe.succ, pe.fail} {
				for _, op := range ops {
					if !op.del {
						acc[op.key] = 0
					}
				}
			}
		}
		for k, r := range mine {
			acc[k] = max(acc[k], r)
		}
	}
	for _, r := range acc {
		s.preCompares = max(s.preCompares, r)
	}
}
