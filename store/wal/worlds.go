package wal

import (
	"context"
	"fmt"
	"math"
	"sort"
)

// The worlds of the prefix (worlds*.go).
//
// The log's entries at or below the db's consistent index (the prefix)
// were applied to the db, from a state the log does not hold: the
// keyspace, the leases and the revision before the log (X). A world is
// one such state, together with what the log's entries then did; it is
// consistent when the entries, applied from it as etcd applies them, lead
// to exactly the db. What every consistent world says alike is
// established; anything two of them say differently is not.
//
// The search enumerates every consistent world, depth first, one entry at
// a time. Where what an entry does rests on something the log does not
// hold (whether a key existed before the log, its mod revision then, a
// lease from before the log, the revision before the log, whether a
// revoke of a lease from before the log deleted keys the log never
// names), the search branches: each branch is a fact about the state
// before the log, and the branches together cover every possibility. A
// branch ends where its facts contradict the db or what a writer can
// have seen; the branches that reach the log's end are the consistent
// worlds. Nothing is taken to hold unless every world says it: there is
// no "likely" world and no challenge of it, so a world the search does
// not find cannot make a claim wrong. A search that stops short (its
// budget or pace, see walk) establishes nothing: what settle fixed
// before it stands.
//
// What a world must agree with:
//
//   - the db: after the last entry, every key the log names is as the db
//     holds it (existence, mod and create revision, version, lease, the
//     value's hash), every lease the log grants or revokes is held or not
//     as the db says, the db's revision is the last one the entries made,
//     its compaction revision the last one applied; every revision above
//     the compaction revision holds exactly the writes the entry that made
//     it wrote (tombstones of keys the log never names only where a
//     revoke of a lease from before the log, or a range delete, may have
//     deleted them); the revisions above the compaction revision and at or
//     below X are the keys' history before the log, which the state before
//     the log must end;
//   - the writers: a compare of a key's mod revision with R (R > 0) names
//     a revision its writer read, so the key was put at revision R at or
//     before the entry: before the log (R ≤ X), or by a put of the log
//     that applied. kube-apiserver writes this way (the object's
//     resourceVersion), and so do the controllers through it;
//   - the values: a key's value put by exactly one entry of the log is
//     put by no write before the log (kube-apiserver's values carry
//     times, generations and, encrypted, a random nonce), so where the db
//     holds that key and value at revision R, that entry applied at R.
//
// Some of what etcd does is less constrained here than it is (a lease's
// keys before the log, the keys a range delete deletes that the log does
// not name): the search then keeps worlds etcd would not reach, which
// can only leave more unestablished, never claim something wrong.

// xNone marks the end of a list in the search's arenas, or no entry.
const xNone = int32(-1)

// xSym is one unknown number of the state before the log (the revision
// before the log, a key's mod revision there, ...): pinned to a value, or
// within [lo, hi] with some values excluded.
type xSym struct {
	v, lo, hi int64
	not       int32 // head of the excluded values (worlds.excl)
	pinned    bool
}

func freeSym(lo, hi int64) xSym { return xSym{lo: lo, hi: hi, not: xNone} }

// xNode is an element of one of the search's list arenas.
type xNode struct {
	v    int64
	next int32
}

// The states of a key in a world.
const (
	xsPre     uint8 = iota // as it was before the log (the log has not written it)
	xsAbsent               // deleted, or never created, by the log's writes so far
	xsPresent              // put by the log's writes so far
)

// The kinds of a put's create revision in a world.
const (
	crRel uint8 = iota // X + crV: created by the log
	crPre              // the key's create revision before the log
)

// xKey is a key in a world: its state now and, with xPre, what is known
// of it before the log.
type xKey struct {
	st uint8
	// The state the log's writes left (xsPresent): its mod revision is
	// X+modC, its create revision crKind/crV, its version verKind/verN.
	crKind  uint8
	verKind uint8
	// final: the db holds the key as it is now, and nothing after may
	// delete it (see finalize).
	final           bool
	modC, crV, verN int64
	lease           int64
	hash            uint64
	puts            int32 // head of the list of its puts' revision counts (worlds.puts)
	preExists       int8  // before the log: -1 unknown, 0 absent, 1 present
	confirmed       int32 // present before the log, it outlived the first confirmed revokes of worlds.revokes
	residual        int32 // 1 + the first of worlds.revokes one of which must delete it (0: none)
	// goneFrom/goneTo: absent now while it may have existed before the
	// log, it was deleted by one of revokes[goneFrom:goneTo] if it did
	// (goneTo 0: not so); goneSure: the db shows which.
	goneFrom, goneTo int32
	goneSure         bool
	stamp            uint32
	preIx            int32 // its facts before the log in worlds.pre (xNone: none yet)
	// putsH hashes the revisions of its puts (puts); zh1, zh2 are its
	// part of the state's hash (see worlds_memo.go).
	putsH, zh1, zh2 uint64
}

// xPre is what is known of a key's state before the log beyond whether it
// existed: its mod and create revision, version, lease and value hash.
type xPre struct {
	mod, create, ver, lease, val xSym
	stamp                        uint32
	key                          int32
}

// sym returns p's number that sel selects (selMod, selCreate, selVer,
// selLease, selVal).
func (p *xPre) sym(sel uint8) *xSym {
	switch sel {
	case selMod:
		return &p.mod
	case selCreate:
		return &p.create
	case selVer:
		return &p.ver
	case selLease:
		return &p.lease
	}
	return &p.val
}

// xLease is a lease in a world.
type xLease struct {
	id    int64
	st    int8 // -1 unknown (from before the log), 0 absent, 1 granted
	pre   bool // it existed before the log (keys may have been attached to it there)
	att   int32
	stamp uint32
	// attH hashes the keys attached (att); zh1, zh2 are its part of the
	// state's hash (see memo).
	attH, zh1, zh2 uint64
}

// xRevoke is a revoke of a lease from before the log that made a
// revision in a world: it may have deleted keys whose lease the log does
// not know.
type xRevoke struct {
	entry int32
	c     int64 // its revision is X+c
	lease int64
}

// The kinds of a record that are not an op's (xRec.op).
const (
	opDyn  = -1 // a key a revoke (of those the log puts with its lease) or range delete deleted, or not
	opPre  = -2 // whether the key existed before the log (applied: 1, 0, -1 not known)
	opLazy = -3 // a key a revoke of a lease from before the log may have deleted besides
)

// xRec is one write of an entry in a world, or what it says of a key (see
// the op kinds).
type xRec struct {
	entry, key int32
	// op is the write's op in its entry (opIndex), or a kind above.
	op      int32
	applied int8 // 1, 0, or -1: not established in this world
	del     bool
	crKind  uint8
	verKind uint8
	modC    int64
	crV     int64
	verN    int64
	hash    uint64
}

// xERec is an entry in a world: what it did, why not, the revision it
// made (X+revC; 0: none).
type xERec struct {
	outcome Outcome
	why     uint8
	// open: the outcome is not established in this world (a revoke of a
	// lease from before the log that made no revision: the lease was gone
	// already, or had no key left).
	open bool
	revC int64
	// dep, for a compaction: it applied exactly when the compaction
	// revision before the log is below dep (see compaction).
	dep int64
}

// Why an entry was not applied in a world (xERec.why).
const (
	whyNone uint8 = iota
	whyCompare
	whyLease
	whyLeaseExists
	whyCompacted
	whyFuture
	whyNothing
)

// xMark is the search's state at a branch, to go back to.
type xMark struct {
	g          xGlobals
	keyTrail   int
	preTrail   int
	leaseTrail int
	excl, puts int
	att        int
	revokes    int
	recs       int
	deferred   int
	resid      int
	gone       int
	preKeys    int
	dirtyK     int
	dirtyL     int
	scratch    xScratch
}

// xGlobals is the part of a world's state that is not per key or lease.
type xGlobals struct {
	x, k0 xSym
	c     int64 // the revisions the entries made so far: the last is X+c
	kLog  int64 // the highest compaction revision of the entries so far that was not in the future (0: none)
	made  int32 // the entries worked out so far (their erecs hold)
	// h1, h2 hash the keys' and leases' parts of the state (see memo),
	// up to the dirty ones from dirtyK, dirtyL on; revH hashes revokes.
	h1, h2         uint64
	dirtyK, dirtyL int32
	revH           uint64
	// firstHeld is the first of revokes whose revision the db holds (X
	// pinned): the revokes before it deleted keys the db cannot show.
	firstHeld int32
}

// xScratch is what a branch decided for the entry being worked out.
type xScratch struct {
	entry int32
	phase int32 // 0: the entry itself; 1+i: finalizing the entry's i-th key
	delta int8  // -1: undecided; whether the entry made a revision (-2: see selRevokeNone)
}

// xChoice is a branch point: the alternatives not tried yet.
type xChoice struct {
	mark xMark
	alts [][]xFact
	next int
	// recorded: the segment from this branch point's alternative on was
	// added to the claims (see record).
	recorded bool
}

// xDeferred is a check that waits for X: a compare naming revision r of
// key, taken to name a revision from before the log.
type xDeferred struct {
	key int32
	r   int64
}

// worlds is the search.
type worlds struct {
	ctx     context.Context
	entries []pxEntry
	names   *pxKeys
	exact   bool
	dbRev   int64
	dbK     int64
	db      *dbIndex

	// From the db, by key number: its live state, and its items at the
	// revisions dbIndex holds (itemOff/items).
	live     []xLive
	itemOff  []int32
	items    []xItem
	dbLeases map[int64]bool
	// anchors holds, by opIndex, the revision at which the db holds a
	// put's key and value when no other put of the log writes them (0:
	// none).
	anchors []int64
	opBase  []int32 // by entry: the index of its first op (opIndex)
	// certain and possible count the entries before each that certainly
	// make a revision, and that may; nextAnchor is the first entry from
	// each on with a put the db anchors, anchorRev its revision (see
	// xBounds).
	certain, possible []int32
	nextAnchor        []int32
	anchorRev         []int64
	// settled is what settle fixed before the search.
	settled *settled
	// lookR and preCompares: see lookAhead.
	lookR       []int64
	preCompares int64
	// finOff/finKeys list, by entry, the keys the entry touches last.
	finOff  []int32
	finKeys []int32
	// ranged lists, by range delete, the keys the log names in its range.
	ranged   map[int32][]int32
	leaseIx  map[int64]int32
	unnamedX int64 // the highest mod revision of a live key the log never names

	budget, steps int64
	reached       int32 // the furthest entry the search got to

	// A world (the one being worked out): its state and what its entries
	// did so far.
	keys       []xKey
	pre        []xPre
	leases     []xLease
	g          xGlobals
	excl       []xNode
	puts       []xNode
	att        []xNode
	revokes    []xRevoke
	recs       []xRec
	erecs      []xERec
	deferred   []xDeferred
	resid      []int32
	gone       []int32 // keys lazyGone(-1) or a range delete took absent, a revoke before perhaps deleting them
	preKeys    []int32
	scratch    xScratch
	keyTrail   []xKeyUndo
	preTrail   []xPreUndo
	leaseTrail []xLeaseUndo
	serial     uint32
	stack      []xChoice

	// res gathers what the consistent worlds say.
	res *worldsResult
	// why says why the search stopped short (its budget, its pace, an
	// interruption): nothing it found is then established.
	why string
	// dead says why the current branch ended; furthest why the branch
	// that got furthest did (the reason when no world is consistent).
	dead      string
	furthest  string
	furthestE int32
	// putWith lists, by lease, the keys the log puts with it (the keys
	// a revoke of it may delete that the log attached).
	putWith map[int64][]int32
	// last is, by key, the last entry that names it (or may delete it).
	last []int32
	// The memo (see worlds_memo.go): by state, what its future gave.
	memo        map[[2]uint64]int32
	memos       []xMemo
	open        []int32
	completions int64
	dirtyK      []int32
	dirtyL      []int32
	// debugChoices, when not nil, counts the branch points by entry and
	// alternatives (tests).
	debugChoices map[string]int
}

type xKeyUndo struct {
	k   int32
	old xKey
}

type xPreUndo struct {
	i   int32
	old xPre
}

type xLeaseUndo struct {
	i   int32
	old xLease
}

// xLive is a key as the db holds it.
type xLive struct {
	present                     bool
	create, mod, version, lease int64
	hash                        uint64
}

// xItem is one item of a key in the db's key bucket.
type xItem struct {
	rev  int64
	tomb bool
	hash uint64
}

// The selectors of a fact (xFact.sel).
const (
	selX uint8 = iota
	selMod
	selCreate
	selVer
	selLease
	selVal
	selExists      // v: 0 or 1
	selLeaseExists // k: the lease's index; v: 0 or 1
	selLazyPresent // k present now: it outlived every revoke so far
	selLazyGone    // k deleted by the revoke revokes[v] (-1: absent now; see lazyGone)
	selDelta       // the entry being worked out made a revision (v 1) or not
	selRevokeNone  // the revoke being worked out made no revision: its lease k was gone, or had no key left
)

// The relations of a fact on a number (xFact.rel).
const (
	rEq uint8 = iota
	rNe
	rGe
	rLe
)

// xFact is one fact a branch takes: sel rel v, of key (or lease) k.
type xFact struct {
	sel, rel uint8
	k        int32
	v        int64
}

func (s *worlds) trailKey(k int32) *xKey {
	s.dirtyK = append(s.dirtyK, k)
	return s.trailKeyClean(k)
}

// trailKeyClean is trailKey without marking the key changed (memo).
func (s *worlds) trailKeyClean(k int32) *xKey {
	key := &s.keys[k]
	if key.stamp != s.serial {
		s.keyTrail = append(s.keyTrail, xKeyUndo{k, *key})
		key.stamp = s.serial
	}
	return key
}

// preOf returns key k's facts from before the log, made on first use.
func (s *worlds) preOf(k int32) *xPre {
	s.dirtyK = append(s.dirtyK, k)
	key := &s.keys[k]
	if key.preIx == xNone {
		key = s.trailKey(k)
		key.preIx = int32(len(s.pre))
		// Not trailed: a new element, dropped with the arena's length.
		s.pre = append(s.pre, xPre{
			mod: freeSym(1, math.MaxInt64), create: freeSym(1, math.MaxInt64), ver: freeSym(1, math.MaxInt64),
			lease: freeSym(math.MinInt64, math.MaxInt64), val: freeSym(math.MinInt64, math.MaxInt64), key: k, stamp: s.serial,
		})
		s.preKeys = append(s.preKeys, k)
		return &s.pre[key.preIx]
	}
	p := &s.pre[key.preIx]
	if p.stamp != s.serial {
		s.preTrail = append(s.preTrail, xPreUndo{key.preIx, *p})
		p.stamp = s.serial
	}
	return p
}

// peekPre returns key k's facts from before the log without making or
// trailing them (nil: none yet).
func (s *worlds) peekPre(k int32) *xPre {
	if i := s.keys[k].preIx; i != xNone {
		return &s.pre[i]
	}
	return nil
}

func (s *worlds) trailLease(i int32) *xLease {
	s.dirtyL = append(s.dirtyL, i)
	return s.trailLeaseClean(i)
}

// trailLeaseClean is trailLease without marking the lease changed.
func (s *worlds) trailLeaseClean(i int32) *xLease {
	l := &s.leases[i]
	if l.stamp != s.serial {
		s.leaseTrail = append(s.leaseTrail, xLeaseUndo{i, *l})
		l.stamp = s.serial
	}
	return l
}

func (s *worlds) mark() xMark {
	return xMark{g: s.g, keyTrail: len(s.keyTrail), preTrail: len(s.preTrail), leaseTrail: len(s.leaseTrail),
		excl: len(s.excl), puts: len(s.puts), att: len(s.att), revokes: len(s.revokes), recs: len(s.recs),
		deferred: len(s.deferred), resid: len(s.resid), gone: len(s.gone), preKeys: len(s.preKeys),
		dirtyK: len(s.dirtyK), dirtyL: len(s.dirtyL), scratch: s.scratch}
}

// undo goes back to m.
func (s *worlds) undo(m xMark) {
	for i := len(s.keyTrail) - 1; i >= m.keyTrail; i-- {
		u := s.keyTrail[i]
		s.keys[u.k] = u.old
	}
	s.keyTrail = s.keyTrail[:m.keyTrail]
	for i := len(s.preTrail) - 1; i >= m.preTrail; i-- {
		u := s.preTrail[i]
		s.pre[u.i] = u.old
	}
	s.preTrail = s.preTrail[:m.preTrail]
	for i := len(s.leaseTrail) - 1; i >= m.leaseTrail; i-- {
		u := s.leaseTrail[i]
		s.leases[u.i] = u.old
	}
	s.leaseTrail = s.leaseTrail[:m.leaseTrail]
	// Pre facts made after m belong to keys whose preIx the key trail
	// restored.
	s.pre = s.pre[:m.preKeys]
	s.g, s.scratch = m.g, m.scratch
	s.excl, s.puts, s.att = s.excl[:m.excl], s.puts[:m.puts], s.att[:m.att]
	s.revokes, s.recs, s.deferred, s.resid = s.revokes[:m.revokes], s.recs[:m.recs], s.deferred[:m.deferred], s.resid[:m.resid]
	s.gone = s.gone[:m.gone]
	s.dirtyK, s.dirtyL = s.dirtyK[:m.dirtyK], s.dirtyL[:m.dirtyL]
	s.preKeys = s.preKeys[:m.preKeys]
}

// fail ends the current branch: no world there.
func (s *worlds) fail(format string, args ...any) bool {
	if s.dead == "" {
		s.dead = fmt.Sprintf(format, args...)
	}
	return false
}

// excluded reports whether v is excluded from sym.
func (s *worlds) excluded(sym *xSym, v int64) bool {
	for i := sym.not; i != xNone; i = s.excl[i].next {
		if s.excl[i].v == v {
			return true
		}
	}
	return false
}

// symHolds reports whether sym rel v is certain (1), impossible (0), or
// open (-1).
func (s *worlds) symHolds(sym *xSym, rel uint8, v int64) int8 {
	if sym.pinned {
		return b2i(relHolds(rel, sym.v, v))
	}
	switch rel {
	case rEq:
		if v < sym.lo || v > sym.hi || s.excluded(sym, v) {
			return 0
		}
	case rNe:
		if v < sym.lo || v > sym.hi || s.excluded(sym, v) {
			return 1
		}
	case rGe:
		if sym.lo >= v {
			return 1
		}
		if sym.hi < v {
			return 0
		}
	case rLe:
		if sym.hi <= v {
			return 1
		}
		if sym.lo > v {
			return 0
		}
	}
	return -1
}

func relHolds(rel uint8, a, b int64) bool {
	switch rel {
	case rEq:
		return a == b
	case rNe:
		return a != b
	case rGe:
		return a >= b
	}
	return a <= b
}

func b2i(b bool) int8 {
	if b {
		return 1
	}
	return 0
}

// negRel is the relation that holds where rel does not.
func negRel(rel uint8, v int64) (uint8, int64) {
	switch rel {
	case rEq:
		return rNe, v
	case rNe:
		return rEq, v
	case rGe:
		return rLe, v - 1
	}
	return rGe, v + 1
}

// restrict applies sym rel v; it returns false when no value is left.
// The caller has trailed sym's holder.
func (s *worlds) restrict(sym *xSym, rel uint8, v int64) bool {
	if sym.pinned {
		return relHolds(rel, sym.v, v)
	}
	switch rel {
	case rEq:
		if v < sym.lo || v > sym.hi || s.excluded(sym, v) {
			return false
		}
		sym.v, sym.pinned, sym.lo, sym.hi = v, true, v, v
		return true
	case rNe:
		if v < sym.lo || v > sym.hi || s.excluded(sym, v) {
			return true
		}
		s.excl = append(s.excl, xNode{v: v, next: sym.not})
		sym.not = int32(len(s.excl) - 1)
	case rGe:
		sym.lo = max(sym.lo, v)
	case rLe:
		sym.hi = min(sym.hi, v)
	}
	for sym.lo <= sym.hi && s.excluded(sym, sym.lo) {
		sym.lo++
	}
	for sym.hi >= sym.lo && s.excluded(sym, sym.hi) {
		sym.hi--
	}
	if sym.lo > sym.hi {
		return false
	}
	if sym.lo == sym.hi {
		sym.v, sym.pinned = sym.lo, true
	}
	return true
}

// apply applies one fact; it returns false when the branch has no world
// left (s.dead says why).
func (s *worlds) apply(f xFact) bool {
	switch f.sel {
	case selX:
		return s.restrictX(f.rel, f.v)
	case selMod, selCreate, selVer, selLease, selVal:
		return s.restrictPre(f.k, f.sel, f.rel, f.v)
	case selExists:
		return s.setPreExists(f.k, int8(f.v))
	case selLeaseExists:
		l := s.trailLease(f.k)
		if l.st != -1 {
			return l.st == int8(f.v)
		}
		l.st, l.pre = int8(f.v), f.v == 1
		return true
	case selLazyPresent:
		key := s.trailKey(f.k)
		key.confirmed = int32(len(s.revokes))
		return true
	case selLazyGone:
		return s.lazyGone(f.k, int32(f.v))
	case selDelta:
		s.scratch.delta = int8(f.v)
		return true
	case selRevokeNone:
		s.scratch.delta = -2
		return true
	}
	return false
}

func relWord(rel uint8) string {
	return [...]string{"=", "≠", "≥", "≤"}[rel]
}

// restrictX applies X rel v, and what follows when X is pinned by it.
func (s *worlds) restrictX(rel uint8, v int64) bool {
	was := s.g.x.pinned
	if !s.restrict(&s.g.x, rel, v) {
		return s.fail("the revision before the log cannot be %s %d (it is within %d..%d)", relWord(rel), v, s.g.x.lo, s.g.x.hi)
	}
	if !was && s.g.x.pinned {
		return s.pinned()
	}
	return true
}

// restrictPre applies a fact on key k's state before the log.
func (s *worlds) restrictPre(k int32, sel, rel uint8, v int64) bool {
	p := s.preOf(k)
	sym := p.sym(sel)
	if !s.restrict(sym, rel, v) {
		return s.fail("%s: before the log, its %s cannot be %s %d", s.names.names[k], selWord(sel), relWord(rel), v)
	}
	if sel == selMod || sel == selCreate {
		// Made before the log: at or below X.
		if !s.restrictX(rGe, sym.lo) {
			return false
		}
		if sel == selMod && p.create.pinned && sym.pinned && p.create.v > sym.v {
			return s.fail("%s: created after its mod revision before the log", s.names.names[k])
		}
	}
	if s.g.x.pinned {
		return s.checkPre(k)
	}
	return true
}

func selWord(sel uint8) string {
	return [...]string{"revision", "mod revision", "create revision", "version", "lease", "value"}[sel]
}

// setPreExists takes key k to have existed before the log (v 1) or not.
func (s *worlds) setPreExists(k int32, v int8) bool {
	key := &s.keys[k]
	if key.preExists != -1 {
		if key.preExists != v {
			return s.fail("%s: whether it existed before the log", s.names.names[k])
		}
		return true
	}
	key = s.trailKey(k)
	key.preExists = v
	if s.g.x.pinned {
		return s.checkPre(k)
	}
	return true
}

// lazyGone takes key k to have been deleted by the revoke revokes[i] (the
// db shows it), or (i -1) to be absent now: it did not exist before the
// log, or one of the revokes it has not been shown to outlive deleted it.
func (s *worlds) lazyGone(k int32, i int32) bool {
	key := s.trailKey(k)
	key.st, key.residual = xsAbsent, 0
	if i >= 0 {
		rv := s.revokes[i]
		key.goneFrom, key.goneTo, key.goneSure = i, i+1, true
		s.recs = append(s.recs, xRec{entry: rv.entry, key: k, op: opLazy, applied: 1, del: true, modC: rv.c})
		return s.setPreExists(k, 1) && s.restrictPre(k, selLease, rEq, rv.lease)
	}
	key.goneFrom, key.goneTo = key.confirmed, int32(len(s.revokes))
	s.gone = append(s.gone, k)
	if key.preExists != 1 {
		// Whether it existed before the log is not known: the revokes'
		// possible deletions of it are not listed (see replay), nor kept.
		return true
	}
	// Which of them deleted it is not established.
	for j := key.goneFrom; j < s.pendingEnd(); j++ {
		if s.leaseFits(k, s.revokes[j].lease) {
			s.recs = append(s.recs, xRec{entry: s.revokes[j].entry, key: k, op: opLazy, applied: -1, del: true})
		}
	}
	return true
}

// goneOK reports whether key k, absent now by lazyGone(-1), can have been
// deleted by a revoke its gone range holds that the db does not show (it
// must, when it existed before the log).
func (s *worlds) goneOK(k int32) bool {
	key := &s.keys[k]
	if key.goneSure || key.preExists != 1 {
		return true
	}
	for j := key.goneFrom; j < min(key.goneTo, s.pendingEnd()); j++ {
		if s.leaseFits(k, s.revokes[j].lease) {
			return true
		}
	}
	return false
}

// pendingEnd is the end of the revokes whose deletions are not shown by
// the db (those at or after it are: see firstHeld).
func (s *worlds) pendingEnd() int32 {
	if s.g.x.pinned {
		return min(s.g.firstHeld, int32(len(s.revokes)))
	}
	return int32(len(s.revokes))
}

// leaseFits reports whether key k, from before the log, may have been
// attached to lease id there.
func (s *worlds) leaseFits(k int32, id int64) bool {
	p := s.peekPre(k)
	return p == nil || s.symHolds(&p.lease, rEq, id) != 0
}

// pending lists the revokes that may have deleted key k (present before
// the log, not written by the log since): those after the ones it is known
// to have outlived that the db does not show.
func (s *worlds) pending(k int32) []int32 {
	key := &s.keys[k]
	if key.final {
		return nil
	}
	var out []int32
	for j := key.confirmed; j < s.pendingEnd(); j++ {
		if s.leaseFits(k, s.revokes[j].lease) {
			out = append(out, j)
		}
	}
	return out
}

// exists returns key k's existence now (1 or 0), or the alternatives of
// a fact that decides it, the likelier first (absent first when
// preferAbsent: a create's compare names no revision).
func (s *worlds) exists(k int32, preferAbsent bool) (int8, [][]xFact) {
	key := &s.keys[k]
	switch key.st {
	case xsPresent:
		return 1, nil
	case xsAbsent:
		return 0, nil
	}
	if key.preExists == 0 {
		return 0, nil
	}
	var alts [][]xFact
	if len(s.pending(k)) == 0 {
		if key.preExists == 1 {
			return 1, nil
		}
		alts = [][]xFact{{{sel: selExists, k: k, v: 1}}, {{sel: selExists, k: k, v: 0}}}
	} else {
		// A revoke of a lease from before the log may have deleted it:
		// there now (it existed, and outlived them), or not (it did not
		// exist, or one of them deleted it: one branch, as they differ in
		// nothing the log or the db shows but that revoke's deletion).
		alts = [][]xFact{{{sel: selExists, k: k, v: 1}, {sel: selLazyPresent, k: k}}, {{sel: selLazyGone, k: k, v: -1}}}
	}
	if preferAbsent {
		alts[0], alts[1] = alts[1], alts[0]
	}
	return -1, alts
}

// pinned does what follows once X is known: the revisions made so far
// are checked against the db, and what waited for X.
func (s *worlds) pinned() bool {
	x := s.g.x.v
	s.g.firstHeld = int32(sort.Search(len(s.revokes), func(i int) bool { return s.held(x + s.revokes[i].c) }))
	if !s.checkMadeSoFar() {
		return false
	}
	for _, d := range s.deferred {
		if !s.preLogRevision(d.key, d.r) {
			return false
		}
	}

	for _, k := range s.preKeys {
		if !s.checkPre(k) {
			return false
		}
	}
	return true
}

// held reports whether the db holds revision rev with every item it had
// (above the compaction revision, within what was read of it).
func (s *worlds) held(rev int64) bool {
	return rev > s.dbK && rev >= s.db.lo && rev <= s.db.hi
}

// keyItems returns key k's items in the db at revisions lo to hi.
func (s *worlds) keyItems(k int32, lo, hi int64) []xItem {
	its := s.items[s.itemOff[k]:s.itemOff[k+1]]
	i := sort.Search(len(its), func(i int) bool { return its[i].rev >= lo })
	j := sort.Search(len(its), func(i int) bool { return its[i].rev > hi })
	if i >= j {
		return nil
	}
	return its[i:j]
}

// preLogRevision checks, X known, a compare's revision r of key k taken
// to be from before the log: the db holds a put of the key there when it
// holds that revision.
func (s *worlds) preLogRevision(k int32, r int64) bool {
	x := s.g.x.v
	if r > x {
		return s.fail("%s: a compare names revision %d, after the revision before the log (%d), which no put of it made", s.names.names[k], r, x)
	}
	if !s.held(r) {
		return true
	}
	for _, it := range s.keyItems(k, r, r) {
		if !it.tomb {
			return true
		}
	}
	return s.fail("%s: a compare names revision %d, before the log, where the db holds no put of it", s.names.names[k], r)
}

// checkPre holds key k's state before the log against the db's
// revisions above its compaction revision and at or below X (X known):
// the last of the key's items there is its state before the log.
func (s *worlds) checkPre(k int32) bool {
	x := s.g.x.v
	lo := max(s.dbK+1, s.db.lo)
	if lo > x {
		return true
	}
	key := &s.keys[k]
	p := s.peekPre(k)
	its := s.keyItems(k, lo, x)
	if len(its) == 0 {
		if lo == s.dbK+1 && p != nil && key.preExists != 0 && p.mod.lo > s.dbK {
			// No write of it between the compaction and X, yet a mod
			// revision there.
			return s.fail("%s: before the log, its mod revision %d..%d has no write in the db", s.names.names[k], p.mod.lo, p.mod.hi)
		}
		if lo == s.dbK+1 && key.preExists != 0 && p != nil && !p.mod.pinned && p.mod.hi > s.dbK {
			p = s.preOf(k)
			if !s.restrict(&p.mod, rLe, s.dbK) {
				return s.fail("%s: before the log, its mod revision is above the compaction revision, with no write in the db", s.names.names[k])
			}
		}
		return true
	}
	last := its[len(its)-1]
	if last.tomb {
		if key.preExists == 1 {
			return s.fail("%s: the db holds its deletion at revision %d, before the log, where it is taken to exist", s.names.names[k], last.rev)
		}
		if key.preExists == -1 {
			key = s.trailKey(k)
			key.preExists = 0
		}
		return true
	}
	if key.preExists == 0 {
		return s.fail("%s: the db holds it at revision %d, before the log, where it is taken not to exist", s.names.names[k], last.rev)
	}
	if key.preExists == -1 {
		key = s.trailKey(k)
		key.preExists = 1
	}
	p = s.preOf(k)
	if !s.restrict(&p.mod, rEq, last.rev) {
		return s.fail("%s: before the log its mod revision is %d in the db", s.names.names[k], last.rev)
	}
	if !s.restrict(&p.val, rEq, int64(last.hash)) {
		return s.fail("%s: before the log its value is the db's at revision %d", s.names.names[k], last.rev)
	}
	return true
}

// walk enumerates the worlds. It returns false when it stopped short
// (s.why says why).
func (s *worlds) walk() bool {
	n := int32(len(s.entries))
	s.scratch = xScratch{entry: 0, delta: -1}
	for {
		if s.steps++; s.steps > s.budget {
			s.why = fmt.Sprintf("the search of the worlds the log and the db allow took more than %d steps", s.budget)
			return false
		}
		s.reached = max(s.reached, s.scratch.entry)
		if s.steps > 1<<21 && s.steps > worldsPace*int64(s.reached+1) {
			// Far more steps than entries reached: the worlds multiply
			// faster than the search gets on.
			if s.reached >= n-1 {
				s.why = fmt.Sprintf("the search of the worlds the log and the db allow took %d steps, reaching the log's last entry (%d) without going through every world", s.steps, s.entries[n-1].index)
			} else {
				s.why = fmt.Sprintf("the search of the worlds the log and the db allow took %d steps to get to entry %d", s.steps, s.entries[s.reached].index)
			}
			return false
		}
		if s.steps&1023 == 0 {
			if err := s.ctx.Err(); err != nil {
				s.why = "the search of the worlds the log and the db allow was interrupted: " + err.Error()
				return false
			}
		}
		var alts [][]xFact
		ok := true
		if e := s.scratch.entry; e < n {
			alts, ok = s.step(e)
			if ok && alts == nil {
				s.scratch = xScratch{entry: e + 1, delta: -1}
				if !s.g.x.pinned || !worldsMemo {
					continue
				}
				seen, found := s.memoCheck(e + 1)
				if !seen {
					continue
				}
				// Its future is known: a world for each it held, or none.
				if found {
					s.completions++
					s.record()
				}
			}
		} else {
			alts, ok = s.end()
			if ok && alts == nil {
				s.completions++
				s.record()
			}
		}
		if !ok {
			s.noteDead()
		}
		if ok && alts != nil {
			s.serial++
			s.stack = append(s.stack, xChoice{mark: s.mark(), alts: alts})
			if s.debugChoices != nil {
				s.debugChoices[fmt.Sprintf("entry %d: %v", s.scratch.entry, alts)]++
			}
		}
		// Take the next alternative of the innermost branch point left.
		for {
			s.memoDone(len(s.stack) - 1)
			if len(s.stack) == 0 {
				return true
			}
			ch := &s.stack[len(s.stack)-1]
			if ch.next == len(ch.alts) {
				s.stack = s.stack[:len(s.stack)-1]
				continue
			}
			ch.recorded = false
			s.undo(ch.mark)
			s.serial++
			alt := ch.alts[ch.next]
			ch.next++
			s.dead = ""
			good := true
			for _, f := range alt {
				if !s.apply(f) {
					good = false
					s.noteDead()
					break
				}
			}
			if good {
				break
			}
		}
	}
}

// worldsPace is how many steps an entry reached the search may take (past
// 2M steps) before it gives up: the worlds multiply faster than it gets
// on. A variable for tests.
var worldsPace int64 = 64

// noteDead keeps why the branch that got furthest ended.
func (s *worlds) noteDead() {
	if e := s.scratch.entry; e >= s.furthestE || s.furthest == "" {
		s.furthestE, s.furthest = e, s.dead
	}
}

// opIndex numbers op i of entry e's success branch (fail false) or
// failure branch.
func (s *worlds) opIndex(e int32, i int, fail bool) int32 {
	if fail {
		return s.opBase[e] + int32(len(s.entries[e].succ)) + int32(i)
	}
	return s.opBase[e] + int32(i)
}
