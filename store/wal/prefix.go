package wal

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/walread"
)

// The entries a member's log holds at or below its db's consistent index
// (the "prefix") are already in the db, but the db has usually compacted
// their revisions away: an object deleted an hour ago is in the log and in
// no revision of the db. The prefix is worked out backwards from the db:
//
//   - Every applied write adds one revision; the db's revision is the
//     revision after the prefix's last entry. So the revision before the
//     prefix (X) is the db's revision less the number of applied
//     revision-making entries in it.
//   - The state of a key before the log is not in the log; kube-apiserver
//     writes through transactions that compare the key's mod revision (or,
//     for its compaction key, version) with what it read. The first compare
//     on a key the log has not written is taken to hold, which gives the
//     key's state before the log; every later compare is evaluated. A
//     writer may have read a stale state, though: each entry whose outcome
//     rests on such a compare, and that the db does not corroborate, is
//     challenged (prefix_challenge.go): worked out again with that
//     compare failed, whatever that world says differently is left not
//     established.
//   - A lease revoked in the prefix that was granted before the log may
//     have had keys attached before the log: whether its revoke made a
//     revision is not known there (nor whether a lone delete without a
//     compare, etcdctl del, of a key from before the log deleted it).
//     Such an entry starts a segment whose
//     first revision is fixed by the first compare that names a revision
//     written in the segment (or, at the end, by the db's revision).
//   - A range delete outside a transaction (etcdctl del --prefix) deletes
//     every key of its range that exists, in key order, in one revision
//     (none when it deletes nothing). The keys the log names whose
//     existence there is known are deleted or not, certainly; those whose
//     existence before the log is not known, and every key the log never
//     names, may or may not have existed; after it every key of the range
//     is absent. With a certain delete its revision is certain, else it
//     starts a segment like an uncertain revoke. Which of the uncertain
//     keys it deleted, the db's tombstones at its revision tell when the
//     db holds that revision; when it does not, the entry's outcome is
//     left unknown (its writes listed, none claimed). A range delete in a
//     transaction is not modelled.
//   - The result is then checked against the db: every key the prefix
//     wrote or compared must end as the db holds it (existence, mod and
//     create revision, version, lease, value), no other key may have
//     changed after X, leases and the compaction must agree. Only then are
//     the outcomes and revisions reported as established; otherwise the
//     prefix's writes are listed with an unknown outcome, and why.
//
// A log that starts at raft index 1 needs no assumption: it is replayed
// from an empty keyspace and checked against the db the same way.

// valueSeed hashes values: the prefix keeps a hash of each value, not the
// value (memory bounded by the number of writes, not the log's size).
var valueSeed = maphash.MakeSeed()

func valueHash(v []byte) uint64 { return maphash.Bytes(valueSeed, v) }

// pxKey is the model of one key in the prefix. Revisions are either
// absolute (assumed from a compare, before the log) or relative: counted
// in the prefix's applied writes (see pxSolver.abs).
type pxKey struct {
	exists int8 // -1 unknown, 0 absent, 1 present
	// pre is what the key was before the log (-1 unknown, 0 absent, 1
	// present), once known.
	pre                    int8
	modKnown, modRel       bool
	mod                    int64
	createKnown, createRel bool
	create                 int64
	verKnown               bool
	version                int64 // with !verKnown: puts since the unknown version
	leaseKnown             bool
	lease                  int64
	valKnown               bool
	val                    uint64
	written                bool
	touched                bool
	// preRev is the mod revision before the log taken from the key's
	// first compare (0: none taken).
	preRev int64
	// fc is what a compare taken to hold said of the key before the log
	// (0: nothing, 1: present, 2: absent), fcEntry that compare's entry:
	// checkPreStates holds it against the db's revisions before the log.
	fc      int8
	fcEntry int32
	// blindMod: its last write was made without a compare.
	blindMod bool
	// maybeGone: present in its state from before the log, its lease not
	// known, when a lease from before the log was revoked: the revoke may
	// have deleted it. A delete without a compare, or a range delete,
	// then deletes it or nothing (as a key whose existence is unknown);
	// a write, or a compare that holds on it, says it is there.
	maybeGone bool
}

// pxRef is a compare of a key's mod revision with rev.
type pxRef struct {
	entry, key int32
	rev        int64
	// pre: not made on a key the log itself deleted (a create's
	// compare then names no revision from before the log).
	pre bool
}

// pxWrite is one write of a key by a prefix entry.
type pxWrite struct {
	entry   int32
	key     int32
	path    int32
	inTxn   bool
	del     bool
	applied bool
	rel     int64 // the relative revision (applied)
	// create: relative when createRel, absolute when known and not.
	create                 int64
	createKnown, createRel bool
	version                int64
	verKnown               bool
	vdelta                 int64 // with !verKnown: puts since the unknown version, this one included
	lease                  int64
	hash                   uint64 // a put's value hash
	// seg, for a delete that deleted the key or nothing, is the segment
	// it starts: it deleted the key when that segment's start made a
	// revision (revokeRev).
	seg int32
	// maybe marks a range delete's delete of a key whose existence there
	// is unknown (not applied: it may have deleted it or not): the db's
	// tombstones at the entry's revision tell, where it holds that
	// revision (see rangeDeleted).
	maybe bool
	// vague: its create revision and version are not established (an
	// alternative world gives others; see challenge); lo and hi, when
	// not 0, bound its revision, not established either.
	vague  bool
	lo, hi int64
	// conceded: its revision was blurred by a concession (no world worked
	// out), so what a later compare naming it says is not established
	// either (see concedeBlurredCompares).
	conceded bool
}

// pxSeg is a run of relative revisions whose absolute start is one
// unknown: the prefix's start, or a revoke that may or may not have made
// a revision.
type pxSeg struct {
	startRel int64
	base     int64 // the absolute revision of startRel, once pinned
	pinned   bool
	revoke   int32 // the entry that started it: a revoke, or a delete (-1: the prefix's start)
	// lo and hi bound the start of a segment left unresolved (not
	// pinned) once solved: its writes' revisions are not established.
	lo, hi int64
}

type pxEntryOut struct {
	outcome Outcome
	reason  string
	// ambiguous, when not empty, says why the outcome is not established
	// although the revision count is (see markAmbiguous).
	ambiguous string
	rel       int64 // relative revision made (0: none)
	seg       int32 // for an uncertain revoke: the segment it starts
	// vague, when not empty, says why the revision it made is not
	// established (an alternative world gives another: see challenge);
	// lo and hi bound it.
	vague  string
	lo, hi int64
	// keysVague, for a range delete, says why which keys it deleted is
	// not established (an alternative world deletes others), even where
	// its revision is.
	keysVague string
}

// pxSolver works the prefix out.
type pxSolver struct {
	entries []pxEntry
	names   *pxKeys
	exact   bool // the log starts at raft index 1: an empty keyspace before it
	// db, when not nil, is the db's items by revision: a compare's pin
	// must agree with them (fitsSoFar).
	db *dbIndex
	// veto holds the entries whose compares may not pin a segment (a
	// pin an earlier try found wrong); pins the pins made, in order.
	veto map[int32]bool
	pins []pxPin
	// passPins holds the pins earlier passes of solveOnce made: a start
	// allowed from them fixes its segment when it starts, and the
	// compare that pinned it no longer pins there, but it is still what
	// the segment's start rests on (the next try may pass over it).
	passPins []pxPin
	// force holds the entries whose first compares on keys from before
	// the log are taken to fail, not to hold (an alternative world a
	// challenge works out), and, with leaseBit set, those whose leases
	// from before the log are taken to be gone; assumed the entries
	// whose compares were taken to hold, or leases to exist, that way
	// (see challenge).
	force   map[int32]bool
	assumed map[int32]bool
	// gone holds the leases force takes to be gone (goneBefore).
	gone map[int64]bool
	// failed holds the compares on keys' states from before the log
	// taken to fail that way: the same compare later, with no write of
	// the key between (nor a revoke that may have deleted it: see
	// revoke), fails too.
	failed map[pxCmpKey]bool
	// relFirst[r] is the index in writes of the first applied write of
	// relative revision r.
	relFirst []int32
	// allowed, when not nil, holds the starts the db allows each segment,
	// by the entry that starts it (-1: the prefix's start), from an
	// earlier pass (see anchor): a compare may pin a segment only there,
	// and a segment the db fixes is pinned when it starts.
	allowed map[int32][]int64

	keys         []pxKey // by number (pxKeys)
	byLease      map[int64]map[int32]bool
	leases       map[int64]int8 // 1 exists, 0 does not; absent: unknown (before the log)
	leaseGranted map[int64]bool
	leaseRevoked map[int64]bool
	rel          int64
	segs         []pxSeg
	// maxPreMod is the highest revision known to be at or below the
	// revision before the log: one a first compare took as a key's state
	// there, or one a compare names too early for a write of the log
	// to have made it (see compare).
	maxPreMod int64
	writes    []pxWrite
	out       []pxEntryOut
	// compactions are the log's compactions, each with the relative
	// revision and the segment it came at: the revision it compacts was
	// read before it (etcd refuses a future one), so that segment's
	// start is at least rev - (rel - its startRel) (see anchor).
	compactions []struct {
		entry int32
		rev   int64
		rel   int64
		seg   int
	}
	fail string
	// xWhy, when not empty, says why the revision before the log is not
	// established although segment 0 is pinned (see challenge); xHi is
	// its highest possible value.
	xWhy string
	xHi  int64
	// cur is the entry being worked out; refs the compares of a key's
	// mod revision (see checkRefs, markAmbiguous).
	cur  int32
	refs []pxRef
	// vrefs are the compares of a key's version (see staleChains).
	vrefs []pxRef
	// onBlind holds the entries whose compares named the revision of a
	// write made without a compare (see challenge).
	onBlind map[int32]bool
	// relFailed holds the entries with a compare that failed on the
	// revision of a write of the log: with the revisions before it
	// counted otherwise, it may hold (see anchoredBefore).
	relFailed map[int32]bool
	// noPin holds the compares on a write of the log's revision taken to
	// have failed (their pin passed over, or forced to fail).
	noPin map[pxPinKey]bool
	// blind: an entry so far may have changed keys the log does not name
	// (a revoke of a lease from before the log, a range delete; see took).
	blind bool
	// dbState is the db's create revision and version of the keys
	// present before the log and still in the db (verify keeps them).
	dbState map[int32][2]int64
	// sorted is the keys' numbers in key order (for range deletes);
	// maybeOf the keys each range delete may have deleted (see
	// pxWrite.maybe), by entry.
	sorted  []int32
	maybeOf map[int32]map[int32]bool
}

// pxPinKey is a compare of a key whose mod revision is the relative
// revision rel of a write of the log, naming revision want (see noPin).
type pxPinKey struct {
	key       int32
	rel, want int64
}

// pxPin is a pin a compare made: the entry, and the revision it named.
type pxPin struct {
	entry int32
	want  int64
}

func newPxSolver(entries []pxEntry, names *pxKeys, exact bool, db *dbIndex, veto map[int32]bool, allowed map[int32][]int64) *pxSolver {
	p := &pxSolver{
		entries: entries, names: names, exact: exact, db: db, veto: veto, allowed: allowed, relFirst: []int32{0},
		keys: make([]pxKey, len(names.names)), byLease: map[int64]map[int32]bool{},
		leases: map[int64]int8{}, leaseGranted: map[int64]bool{}, leaseRevoked: map[int64]bool{},
		assumed: map[int32]bool{}, failed: map[pxCmpKey]bool{}, onBlind: map[int32]bool{}, relFailed: map[int32]bool{}, noPin: map[pxPinKey]bool{},
	}
	// One write per op of the branch an entry takes: sized once (the
	// prefix may hold a million entries; range deletes may add more).
	n := 0
	for i := range entries {
		n += max(len(entries[i].succ), len(entries[i].fail))
	}
	p.writes = make([]pxWrite, 0, n)
	p.newSeg(-1)
	if exact {
		p.segs[0].pinned, p.segs[0].base = true, 1 // a new etcd's keyspace starts at revision 1
	}
	return p
}

// newSeg starts a segment at the current revision (entry: the uncertain
// entry that starts it, -1 for the prefix's start), pinned when the db
// allows it one start only, and returns its number.
func (p *pxSolver) newSeg(entry int32) int32 {
	s := pxSeg{startRel: p.rel, revoke: entry}
	if a := p.allowed[entry]; len(a) == 1 {
		s.base, s.pinned = a[0], true
	}
	p.segs = append(p.segs, s)
	return int32(len(p.segs) - 1)
}

func (p *pxSolver) failf(format string, args ...any) {
	if p.fail == "" {
		p.fail = fmt.Sprintf(format, args...)
	}
}

// key returns key k's model, set to "before the log" on first use.
func (p *pxSolver) key(k int32) *pxKey {
	s := &p.keys[k]
	if s.touched {
		return s
	}
	*s = pxKey{exists: -1, pre: -1, touched: true}
	if p.exact {
		s.exists, s.pre, s.modKnown, s.createKnown, s.verKnown, s.leaseKnown, s.valKnown = 0, 0, true, true, true, true, true
	}
	return s
}

// name is key k's name.
func (p *pxSolver) name(k int32) string { return p.names.names[k] }

// seg returns the segment holding relative revision rel.
func (p *pxSolver) seg(rel int64) int {
	return sort.Search(len(p.segs), func(i int) bool { return p.segs[i].startRel >= rel }) - 1
}

// abs returns the absolute revision of rel, when its segment is pinned.
func (p *pxSolver) abs(rel int64) (int64, bool) {
	j := p.seg(rel)
	if j < 0 {
		return 0, false
	}
	s := p.segs[j]
	return s.base + rel - s.startRel, s.pinned
}

// pin fixes segment j's start so that rel is revision want, if that agrees
// with its pinned neighbours (a revoke makes one revision or none).
func (p *pxSolver) pin(j int, rel, want int64) bool {
	base := want - (rel - p.segs[j].startRel)
	if a, ok := p.allowed[p.segs[j].revoke]; ok && !slices.Contains(a, base) {
		return false
	}
	// The segment starts after the revision before the log, which is at
	// least every revision a first compare took as a key's state there
	// (and every one a compare shows to be from before the log: see
	// maxPreMod).
	if base < 1 || base < p.maxPreMod+p.segs[j].startRel || p.veto[p.cur] || p.force[p.cur] || !p.fitsSoFar(j, base) {
		return false
	}
	if j > 0 {
		if prev := p.segs[j-1]; prev.pinned {
			if d := base - (prev.base + p.segs[j].startRel - prev.startRel); d != 0 && d != 1 {
				return false
			}
		}
	}
	if j+1 < len(p.segs) && p.segs[j+1].pinned {
		next := p.segs[j+1]
		if d := next.base - (base + next.startRel - p.segs[j].startRel); d != 0 && d != 1 {
			return false
		}
	}
	p.segs[j].base, p.segs[j].pinned = base, true
	p.pins = append(p.pins, pxPin{entry: p.cur, want: want})
	return true
}

// fitsSoFar reports whether the db allows segment j to start at base,
// with the writes the segment has made so far (see revisionFits; keys and
// kinds only): a compare is then evaluated against the db, not trusted.
func (p *pxSolver) fitsSoFar(j int, base int64) bool {
	if p.db == nil {
		return true
	}
	start, end := p.segSpan(j)
	i := len(p.writes)
	if int(start+1) < len(p.relFirst) {
		i = int(p.relFirst[start+1])
	}
	for rel := start + 1; rel <= end; rel++ {
		k := i
		for k < len(p.writes) && (p.writes[k].rel == rel || p.writes[k].rel == 0) {
			k++
		}
		var ws []int32
		for ; i < k; i++ {
			if w := &p.writes[i]; w.applied && w.rel == rel {
				ws = append(ws, int32(i))
			}
		}
		a := base + rel - start
		if ok, _ := p.revisionFits(p.db.at(a), p.db.held(a), ws, false); !ok {
			return false
		}
	}
	return true
}

// x returns the revision before the log, when known.
func (p *pxSolver) x() (int64, bool) { return p.segs[0].base, p.segs[0].pinned }

// compare evaluates c against the state before the current entry; a
// compare on a key's state before the log is taken to hold (see the
// comment at the top of this file).
func (p *pxSolver) compare(c pxCmp) bool {
	s := p.key(c.key)
	eq := c.result == pb.Compare_EQUAL
	switch c.target {
	case pb.Compare_MOD:
		r := c.value
		if r > 0 {
			// Held or not, a compare names a revision its writer read:
			// made before this entry, so at most one for each write of
			// the log before it (and each uncertain entry) above the
			// revision before the log. What is below is from before it.
			p.maxPreMod = max(p.maxPreMod, r-p.rel-int64(len(p.segs)-1))
		}
		if eq {
			p.refs = append(p.refs, pxRef{entry: p.cur, key: c.key, rev: r, pre: !(s.written && s.exists == 0) && !p.force[p.cur]})
		}
		if s.exists == 0 {
			return compareInts(c.result, 0, r)
		}
		if s.exists == 1 && s.modKnown {
			m := s.mod
			if s.modRel {
				if eq && s.blindMod {
					// Naming the revision of a write made without a
					// compare: a stale read of the state before it
					// names another (see challenge). Failed in a
					// challenge's world, it says the write's revision is
					// not r: the same compare on the same state fails
					// there too (see noPin), else the next of them would
					// take that revision for the write's in its place.
					if p.force[p.cur] {
						p.noPin[pxPinKey{key: c.key, rel: m, want: r}] = true
						return false
					}
					p.onBlind[p.cur] = true
				}
				a, ok := p.abs(m)
				if !ok {
					if !eq {
						p.failf("compare on %s: its revision is not established there", p.name(c.key))
						return false
					}
					// The pin of a compare taken to have read a stale
					// state (passed over, or failed in a challenge's
					// world) says the write's revision is not r: the
					// same compare on the same state fails too.
					pk := pxPinKey{key: c.key, rel: m, want: r}
					if p.noPin[pk] {
						p.relFailed[p.cur] = true
						return false
					}
					if !p.pin(p.seg(m), m, r) {
						if p.veto[p.cur] || p.force[p.cur] {
							p.noPin[pk] = true
						}
						p.relFailed[p.cur] = true
						return false
					}
					return true
				}
				m = a
			}
			held := p.relCompare(s.modRel, c.result, m, r)
			if held && eq {
				s.maybeGone = false
			}
			return held
		}
		if !eq {
			p.failf("compare on %s before the log: not modelled", p.name(c.key))
			return false
		}
		if r == 0 {
			if s.exists == 1 || !p.takeToHold(c) {
				return false
			}
			p.setAbsent(s)
			p.took(s, 2)
			return true
		}
		if x, ok := p.x(); ok && r > x {
			// Read at a revision after the log's start that no write
			// of the log made.
			p.failf("entry compares %s with revision %d, after the log's start (revision %d), and no write of the log made it", p.name(c.key), r, x)
			return false
		}
		if !p.takeToHold(c) {
			return false
		}
		s.exists, s.modKnown, s.modRel, s.mod = 1, true, false, r
		if s.pre == -1 {
			s.pre = 1
		}
		s.preRev = r
		p.took(s, 1)
		p.maxPreMod = max(p.maxPreMod, r)
		return true
	case pb.Compare_VERSION:
		v := c.value
		p.vrefs = append(p.vrefs, pxRef{entry: p.cur, key: c.key, rev: v})
		if s.exists == 0 {
			return compareInts(c.result, 0, v)
		}
		if s.verKnown {
			return compareInts(c.result, s.version, v)
		}
		if !eq {
			p.failf("compare on %s before the log: not modelled", p.name(c.key))
			return false
		}
		if v == 0 {
			if s.exists == 1 || !p.takeToHold(c) {
				return false
			}
			p.setAbsent(s)
			p.took(s, 2)
			return true
		}
		if v-s.version < 1 {
			if s.written {
				p.failf("compare on the version of %s: its state before the log is not modelled", p.name(c.key))
			}
			return false
		}
		if !p.takeToHold(c) {
			return false
		}
		s.verKnown, s.version = true, v
		if s.exists == -1 {
			s.exists = 1
			if s.pre == -1 {
				s.pre = 1
			}
		}
		p.took(s, 1)
		return true
	case pb.Compare_CREATE:
		if s.exists == 0 {
			return compareInts(c.result, 0, c.value)
		}
		if s.exists == 1 && s.createKnown {
			cr := s.create
			if s.createRel {
				a, ok := p.abs(cr)
				if !ok {
					p.failf("compare on %s: its create revision is not established there", p.name(c.key))
					return false
				}
				cr = a
			}
			return p.relCompare(s.createRel, c.result, cr, c.value)
		}
	case pb.Compare_LEASE:
		if s.exists == 0 {
			return compareInts(c.result, 0, c.value)
		}
		if s.exists == 1 && s.leaseKnown {
			return compareInts(c.result, s.lease, c.value)
		}
	case pb.Compare_VALUE:
		if s.exists == 0 {
			return false
		}
		if s.exists == 1 && s.valKnown && (c.result == pb.Compare_EQUAL || c.result == pb.Compare_NOT_EQUAL) {
			same := s.val == uint64(c.value)
			return same == (c.result == pb.Compare_EQUAL)
		}
	}
	p.failf("compare on %s before the log: not modelled", p.name(c.key))
	return false
}

// relCompare is compareInts, the entry's failure recorded in relFailed
// when a (the revision compared) is a write of the log's (rel).
func (p *pxSolver) relCompare(rel bool, res pb.Compare_CompareResult, a, b int64) bool {
	ok := compareInts(res, a, b)
	if !ok && rel {
		p.relFailed[p.cur] = true
	}
	return ok
}

// takeToHold decides a compare on a key's state from before the log:
// taken to hold (and the entry marked assumed), or, in the alternative
// world of a challenge, to fail, and so the same compare after it (the key
// still in its state from before the log).
func (p *pxSolver) takeToHold(c pxCmp) bool {
	k := pxCmpKey{key: c.key, target: c.target, value: c.value}
	if p.force[p.cur] {
		p.failed[k] = true
		return false
	}
	if p.failed[k] {
		return false
	}
	p.assumed[p.cur] = true
	return true
}

// took records what a compare taken to hold said of the key before the
// log (see pxKey.fc), when it is the key's first.
// Only while no entry before may have changed keys the log does not name
// (a revoke of a lease from before the log, a range delete) is a key's
// state at the compare the one at the log's start.
func (p *pxSolver) took(s *pxKey, fc int8) {
	if s.fc == 0 && !s.written && !p.blind {
		s.fc, s.fcEntry = fc, p.cur
	}
}

// goneBefore reports whether lease l is taken to have been revoked
// before the log (the world a challenge works out): one entry in force
// with leaseBit names it. A lease's state at the log's start is one for
// the whole log, whichever of its entries first meets it in a world: an
// entry whose compare failed in one world may hold in another, and the
// next put with the lease then meets it first.
func (p *pxSolver) goneBefore(l int64) bool {
	if p.gone == nil {
		p.gone = map[int64]bool{}
		for e := range p.force {
			if e&leaseBit != 0 {
				if g := p.leaseOf(entryOf(e)); g != 0 {
					p.gone[g] = true
				}
			}
		}
	}
	return p.gone[l]
}

// leaseBit marks, in pxSolver.force and assumed, an entry's lease from
// before the log (the entry's number is below it).
const leaseBit = 1 << 30

// keepBit marks, in pxSolver.force, an entry whose compare's pin the
// search must not pass over (see solveTries, challenge): the world in
// which a compare the search took to have read a stale state held.
const keepBit = 1 << 29

// entryOf returns the entry a force or assumed element names.
func entryOf(e int32) int32 { return e &^ (leaseBit | keepBit) }

// pxCmpKey is a compare of a key's state, for pxSolver.failed.
type pxCmpKey struct {
	key    int32
	target pb.Compare_CompareTarget
	value  int64
}

func compareInts(res pb.Compare_CompareResult, a, b int64) bool {
	switch res {
	case pb.Compare_EQUAL:
		return a == b
	case pb.Compare_NOT_EQUAL:
		return a != b
	case pb.Compare_GREATER:
		return a > b
	case pb.Compare_LESS:
		return a < b
	}
	return false
}

func (p *pxSolver) setAbsent(s *pxKey) {
	s.maybeGone = false
	s.exists, s.modKnown, s.createKnown, s.verKnown, s.leaseKnown, s.valKnown = 0, true, true, true, true, true
	s.mod, s.create, s.version, s.lease = 0, 0, 0, 0
	if s.pre == -1 {
		s.pre = 0
	}
}

// run works through the prefix once.
func (p *pxSolver) run() {
	p.out = make([]pxEntryOut, len(p.entries))
	for i := range p.entries {
		if p.fail != "" {
			return
		}
		p.entry(int32(i))
	}
}

func (p *pxSolver) entry(idx int32) {
	pe := &p.entries[idx]
	o := &p.out[idx]
	p.cur = idx
	if pe.unmodelled != "" {
		p.failf("entry %d: %s: not modelled", pe.index, pe.unmodelled)
		return
	}
	if pe.ranged {
		p.rangeDelete(idx)
		return
	}
	switch pe.kind {
	case walread.KindPut, walread.KindDeleteRange:
		p.write(idx, pe.succ)
	case walread.KindTxn:
		succ := true
		for _, c := range pe.cmps {
			if !p.compare(c) {
				succ = false
				break
			}
		}
		if p.fail != "" {
			return
		}
		ops := pe.succ
		if !succ {
			ops = pe.fail
		}
		if !succ && len(ops) == 0 {
			o.outcome, o.reason = OutcomeNotApplied, "compare failed (the key changed since it was read)"
			p.attempts(idx, pe.succ)
			return
		}
		p.write(idx, ops)
	case walread.KindLeaseGrant:
		if p.leases[pe.id] == 1 {
			o.outcome, o.reason = OutcomeNotApplied, "lease already exists"
			return
		}
		p.leases[pe.id], p.leaseGranted[pe.id] = 1, true
		o.outcome = OutcomeApplied
	case walread.KindLeaseRevoke:
		p.revoke(idx, pe.id)
	case walread.KindCompaction:
		o.outcome = OutcomeApplied
		p.compactions = append(p.compactions, struct {
			entry int32
			rev   int64
			rel   int64
			seg   int
		}{idx, pe.id, p.rel, len(p.segs) - 1})
	default:
		o.outcome = OutcomeSkipped
	}
}

// attempts records writes that were not applied.
func (p *pxSolver) attempts(idx int32, ops []pxOp) {
	for _, o := range ops {
		p.writes = append(p.writes, pxWrite{entry: idx, key: o.key, path: o.path, inTxn: o.inTxn, del: o.del})
	}
}

// write applies a branch's writes.
func (p *pxSolver) write(idx int32, ops []pxOp) {
	o := &p.out[idx]
	for _, op := range ops {
		if !op.del {
			if l := op.lease; l != 0 {
				st, known := p.leases[l]
				switch {
				case known && st == 0, !known && p.exact:
					o.outcome, o.reason = OutcomeNotApplied, fmt.Sprintf("lease %x not found", l)
					p.attempts(idx, ops)
					return
				case !known && p.goneBefore(l):
					// The other world: the lease was gone already.
					p.leases[l] = 0
					o.outcome, o.reason = OutcomeNotApplied, fmt.Sprintf("lease %x not found", l)
					p.attempts(idx, ops)
					return
				case !known:
					p.leases[l] = 1 // assumed granted before the log; verify checks it
					p.assumed[p.cur|leaseBit] = true
				}
			}
			continue
		}
		if s := p.key(op.key); s.exists == -1 || s.maybeGone && !op.inTxn {
			if len(ops) == 1 {
				p.uncertainDelete(idx, op)
				return
			}
			p.failf("entry %d deletes %s, whose existence before the log is unknown, with other writes", p.entries[idx].index, p.name(op.key))
			return
		}
	}
	rel := p.rel + 1
	first := int32(len(p.writes))
	changed := false
	for _, op := range ops {
		if !op.del {
			p.recordPut(idx, op, rel)
			changed = true
			continue
		}
		if p.key(op.key).exists == 1 {
			p.recordDelete(idx, op.key, op.path, op.inTxn, rel)
			changed = true
		}
	}
	o.outcome = OutcomeApplied
	if changed {
		p.rel = rel
		o.rel = rel
		p.relFirst = append(p.relFirst, first)
	}
}

func (p *pxSolver) recordPut(idx int32, op pxOp, rel int64) {
	k := op.key
	s := p.key(k)
	s.maybeGone = false
	switch s.exists {
	case 0:
		s.createKnown, s.createRel, s.create = true, true, rel
		s.verKnown, s.version = true, 1
	case 1:
		s.version++
	default:
		s.createKnown, s.verKnown, s.version = false, false, s.version+1
	}
	if s.pre == -1 && s.exists != -1 && !s.written {
		s.pre = s.exists
	}
	if s.leaseKnown && s.exists == 1 && s.lease != 0 {
		delete(p.byLease[s.lease], k)
	}
	s.exists, s.modKnown, s.modRel, s.mod = 1, true, true, rel
	s.blindMod = len(p.entries[idx].cmps) == 0
	s.leaseKnown, s.lease = true, op.lease
	s.valKnown, s.val = true, op.hash
	s.written = true
	if l := op.lease; l != 0 {
		if p.byLease[l] == nil {
			p.byLease[l] = map[int32]bool{}
		}
		p.byLease[l][k] = true
	}
	w := pxWrite{entry: idx, key: k, path: op.path, inTxn: op.inTxn, applied: true, rel: rel, lease: op.lease, hash: op.hash,
		create: s.create, createKnown: s.createKnown, createRel: s.createRel, verKnown: s.verKnown}
	if s.verKnown {
		w.version = s.version
	} else {
		w.vdelta = s.version
	}
	p.writes = append(p.writes, w)
}

func (p *pxSolver) recordDelete(idx int32, k int32, path int32, inTxn bool, rel int64) {
	s := p.key(k)
	if s.leaseKnown && s.lease != 0 {
		delete(p.byLease[s.lease], k)
	}
	p.setAbsent(s)
	s.written = true
	p.writes = append(p.writes, pxWrite{entry: idx, key: k, path: path, inTxn: inTxn, del: true, applied: true, rel: rel})
}

// uncertainDelete applies a lone delete (etcdctl del) of a key whose
// existence before the log is unknown: it deleted the key (one revision)
// or nothing. Like an uncertain revoke, it starts a segment.
func (p *pxSolver) uncertainDelete(idx int32, op pxOp) {
	s := p.key(op.key)
	p.setAbsent(s)
	s.written = true
	seg := p.newSeg(idx)
	p.writes = append(p.writes, pxWrite{entry: idx, key: op.key, path: op.path, inTxn: op.inTxn, del: true, applied: true, seg: seg})
	o := &p.out[idx]
	o.outcome, o.seg = OutcomeApplied, seg
}

// rangeDelete applies a plain range delete (etcdctl del --prefix): it
// deletes every key in its range that exists, in one revision, none when
// it deletes nothing. A key the log names whose existence there is known
// is deleted or not, certainly; one whose existence before the log is not
// known, and every key the log never names, may or may not have existed:
// after it, every key in the range is absent. When it certainly deleted a
// key its revision is certain (the others it may have deleted are
// tombstones at that revision too: see revisionFits); else, like an
// uncertain revoke, it starts a segment.
func (p *pxSolver) rangeDelete(idx int32) {
	pe := &p.entries[idx]
	o := &p.out[idx]
	o.outcome = OutcomeApplied
	p.blind = true
	if pe.end != "\x00" && pe.end <= pe.from {
		return // an empty range: nothing deleted
	}
	if p.sorted == nil {
		p.sorted = make([]int32, len(p.names.names))
		for i := range p.sorted {
			p.sorted[i] = int32(i)
		}
		slices.SortFunc(p.sorted, func(a, b int32) int { return strings.Compare(p.name(a), p.name(b)) })
		p.maybeOf = map[int32]map[int32]bool{}
	}
	i := sort.Search(len(p.sorted), func(i int) bool { return p.name(p.sorted[i]) >= pe.from })
	var ks []int32
	for ; i < len(p.sorted) && pe.inRange(p.name(p.sorted[i])); i++ {
		ks = append(ks, p.sorted[i])
	}
	sure := false
	for _, k := range ks {
		if s := p.key(k); s.exists == 1 && !s.maybeGone {
			sure = true
		}
	}
	rel := p.rel + 1
	if sure {
		p.relFirst = append(p.relFirst, int32(len(p.writes)))
	}
	// In key order: the tombstones' order at the revision.
	for _, k := range ks {
		s := p.key(k)
		exists := s.exists
		if s.maybeGone {
			exists = -1
		}
		switch exists {
		case 1:
			p.recordDelete(idx, k, 0, false, rel)
		case -1:
			p.setAbsent(s)
			s.pre, s.written = -1, true
			p.writes = append(p.writes, pxWrite{entry: idx, key: k, del: true, maybe: true})
			if p.maybeOf[idx] == nil {
				p.maybeOf[idx] = map[int32]bool{}
			}
			p.maybeOf[idx][k] = true
		}
	}
	switch {
	case sure:
		p.rel, o.rel = rel, rel
	case !p.exact:
		// It deleted keys from before the log (one revision) or none.
		o.seg = p.newSeg(idx)
	}
}

func (p *pxSolver) revoke(idx int32, id int64) {
	o := &p.out[idx]
	st, known := p.leases[id]
	if (known && st == 0) || (!known && (p.exact || p.goneBefore(id))) {
		p.leases[id] = 0
		o.outcome, o.reason = OutcomeNotApplied, "lease not found"
		return
	}
	p.leases[id] = 0
	p.leaseRevoked[id] = true
	o.outcome = OutcomeApplied
	if !p.leaseGranted[id] {
		p.blind = true
		// A key still in its state from before the log, its lease not
		// known, may have been attached to this lease and deleted with
		// it: a compare found to fail on that state (failed) may hold
		// after it, and a delete without a compare may delete nothing.
		for k := range p.failed {
			if !p.keys[k.key].leaseKnown {
				delete(p.failed, k)
			}
		}
		for i := range p.keys {
			if k := &p.keys[i]; k.exists == 1 && !k.leaseKnown {
				k.maybeGone = true
			}
		}
	}
	attached := make([]int32, 0, len(p.byLease[id]))
	for k := range p.byLease[id] {
		attached = append(attached, k)
	}
	slices.Sort(attached)
	delete(p.byLease, id)
	switch {
	case len(attached) > 0:
		rel := p.rel + 1
		p.relFirst = append(p.relFirst, int32(len(p.writes)))
		for _, k := range attached {
			p.recordDelete(idx, k, 0, false, rel)
		}
		p.rel, o.rel = rel, rel
	case p.leaseGranted[id] || p.exact:
		// Granted in the log: no key attached before it; none now.
	default:
		// Keys attached before the log may have been deleted (one
		// revision) or not: a new segment.
		o.seg = p.newSeg(idx)
	}
}

// solve fixes the segments' starts from the db's revision alone (see
// anchor and settle): the last segment ends at dbRev; a segment no
// compare pins is fixed by its neighbours when only one start fits.
func (p *pxSolver) solve(dbRev int64) {
	F, bad := p.anchor(nil, dbRev, true)
	if bad >= 0 {
		p.failf("%s", p.misfit(bad, dbRev))
		return
	}
	p.settle(F)
}

// misfit says why no start fits segment j.
func (p *pxSolver) misfit(j int, dbRev int64) string {
	if j+1 < len(p.segs) {
		return fmt.Sprintf("the log's writes before entry %d do not fit the revisions the db and the compares give them", p.entries[p.segs[j+1].revoke].index)
	}
	return fmt.Sprintf("the log's writes do not lead to the db's revision %d", dbRev)
}

// settle takes the possible starts F (see anchor): a segment with one is
// pinned there; one with several is left unresolved, with its bounds.
func (p *pxSolver) settle(F [][]int64) {
	for j := range p.segs {
		s := &p.segs[j]
		if len(F[j]) == 1 {
			s.base, s.pinned = F[j][0], true
			continue
		}
		s.pinned, s.lo, s.hi = false, F[j][0], F[j][len(F[j])-1]
	}
	for _, c := range p.compactions {
		if a, ok := p.relAbsOK(c.rel); ok && c.rev > a {
			p.failf("entry %d compacts revision %d, past the derived revision %d", p.entries[c.entry].index, c.rev, a)
			return
		}
	}
}

// revokeRev returns the revision an uncertain revoke (or delete) that
// starts segment seg made (0: none), and whether that is established.
func (p *pxSolver) revokeRev(seg int32) (int64, bool) {
	s, prev := p.segs[seg], p.segs[seg-1]
	if !s.pinned || !prev.pinned {
		return 0, false
	}
	if s.base == prev.base+s.startRel-prev.startRel {
		return 0, true
	}
	return s.base, true
}

// relAbsOK is abs for a solved prefix (rel 0 is the revision before it):
// the revision, and whether it is established.
func (p *pxSolver) relAbsOK(rel int64) (int64, bool) {
	if rel == 0 {
		return p.segs[0].base, p.segs[0].pinned
	}
	return p.abs(rel)
}

// relBounds returns the revisions rel may be: relAbsOK's, or for a
// segment left unresolved (see settle), those its start's bounds give;
// false when not bounded.
func (p *pxSolver) relBounds(rel int64) (lo, hi int64, ok bool) {
	if a, ok := p.relAbsOK(rel); ok {
		return a, a, true
	}
	j := max(p.seg(rel), 0)
	if s := p.segs[j]; !s.pinned && s.lo > 0 && s.hi >= s.lo {
		return s.lo + rel - s.startRel, s.hi + rel - s.startRel, true
	}
	return 0, 0, false
}

// relAbs is relAbsOK's revision, 0 when not established.
func (p *pxSolver) relAbs(rel int64) int64 {
	if a, ok := p.relAbsOK(rel); ok {
		return a
	}
	return 0
}

// xMax is the revision before the log, or its highest possible value when
// the first segment is unresolved.
func (p *pxSolver) xMax() int64 {
	if s := p.segs[0]; !s.pinned {
		return max(s.hi, p.xHi)
	}
	return max(p.segs[0].base, p.xHi)
}

// unresolvedRevs returns the revisions the unresolved segments' writes
// (and the uncertain entries starting them) may have, as sorted disjoint
// ranges.
func (p *pxSolver) unresolvedRevs() [][2]int64 {
	var out [][2]int64
	for j, s := range p.segs {
		if s.pinned {
			continue
		}
		start, end := p.segSpan(j)
		r := [2]int64{s.lo, s.hi + end - start}
		if n := len(out); n > 0 && r[0] <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// inRanges reports whether rev is in one of the sorted disjoint ranges.
func inRanges(ranges [][2]int64, rev int64) bool {
	i := sort.Search(len(ranges), func(i int) bool { return ranges[i][1] >= rev })
	return i < len(ranges) && ranges[i][0] <= rev
}

// checkRefs checks the solution against every compare of a key's mod
// revision: a writer names a revision it read, so the revision must be 0,
// one from before the log, or one a write of that key made in the log. A
// wrong start of a segment (a stale compare taken to fix it) shifts the
// log's revisions and breaks that.
func (p *pxSolver) checkRefs() {
	x := p.xMax()
	made := map[int32]map[int64]bool{}
	for _, w := range p.writes {
		if !w.applied || w.del {
			continue
		}
		a, ok := p.relAbsOK(w.rel)
		if !ok {
			continue
		}
		if made[w.key] == nil {
			made[w.key] = map[int64]bool{}
		}
		made[w.key][a] = true
	}
	// A compare may name a revision an unresolved segment's write made.
	unknown := p.unresolvedRevs()
	for _, r := range p.refs {
		if r.rev == 0 || r.rev <= x || made[r.key][r.rev] || inRanges(unknown, r.rev) {
			continue
		}
		p.failf("entry %d compares %s with revision %d, which no write of it made (the log's revisions from %d on would be wrong)", p.entries[r.entry].index, p.name(r.key), r.rev, x+1)
		return
	}
}

// markAmbiguous finds the keys whose compares name two different mod
// revisions from before the log. The first was taken as the key's state
// there; but a writer that read a stale state names an older revision, and
// the log does not tell which of the two was the key's: which of those
// writes applied is not established (one of them did, so the revisions
// count the same). Their outcomes are left unknown.
func (p *pxSolver) markAmbiguous() {
	x := p.xMax()
	named, _ := p.preLogNames(x)
	for _, r := range p.refs {
		revs := named[r.key]
		if r.rev > x || !r.pre || len(revs) < 2 {
			continue
		}
		list := make([]int64, 0, len(revs))
		for v := range revs {
			list = append(list, v)
		}
		slices.Sort(list)
		p.out[r.entry].ambiguous = fmt.Sprintf("compares name revisions %v of %s from before the log: which of its writes applied is not established", list, p.name(r.key))
	}
}

// preLogNames returns, per key, the revisions from before the log (at or
// below x) its compares name, and the entries that name them, in order.
func (p *pxSolver) preLogNames(x int64) (map[int32]map[int64]bool, map[int32][]int32) {
	named := map[int32]map[int64]bool{}
	byKey := map[int32][]int32{}
	for _, r := range p.refs {
		if r.rev > x || !r.pre || p.keys[r.key].preRev == 0 {
			continue
		}
		if named[r.key] == nil {
			named[r.key] = map[int64]bool{}
		}
		named[r.key][r.rev] = true
		if l := byKey[r.key]; len(l) == 0 || l[len(l)-1] != r.entry {
			byKey[r.key] = append(l, r.entry)
		}
	}
	return named, byKey
}

// verify checks the model against the db (see the comment at the top of
// this file), in one pass over the db's keys, and keeps what fill needs.
func (p *pxSolver) verify(ctx context.Context, b prefixDB) {
	x := p.xMax()
	seen := make([]bool, len(p.keys))
	p.dbState = map[int32][2]int64{}
	// The revisions the log's puts of a key whose creation it does not
	// know made: one of them may have created it. A put in a segment
	// left unresolved may have made any revision its segment's bounds
	// give it.
	puts := map[int32]map[int64]bool{}
	for _, w := range p.writes {
		if w.applied && !w.del && !p.keys[w.key].createKnown {
			lo, hi, ok := p.relBounds(w.rel)
			if !ok {
				continue
			}
			if puts[w.key] == nil {
				puts[w.key] = map[int64]bool{}
			}
			for a := lo; a <= hi; a++ {
				puts[w.key][a] = true
			}
		}
	}
	// The range deletes: every key in their ranges is absent after them,
	// so a key the log does not write, live in the db from before the
	// log, must be outside them all.
	deletedRanges := p.rangeUnion()
	// Only the values of the keys the log writes are compared.
	// live asks need of each key, then calls back with it: the key's
	// number is looked up once (the db's keys are many).
	var lastKey string
	var lastID int32
	var lastOK bool
	lookup := func(key string) (int32, bool) {
		if key != lastKey || lastKey == "" {
			lastKey = key
			lastID, lastOK = p.names.ids[key]
		}
		return lastID, lastOK
	}
	need := func(key string) bool {
		id, ok := lookup(key)
		return ok && p.keys[id].touched
	}
	err := b.live(ctx, need, func(kv *store.KeyValue, hash uint64) error {
		var s *pxKey
		id, ok := lookup(kv.Key)
		if ok && p.keys[id].touched {
			s = &p.keys[id]
		}
		if s == nil || s.exists == -1 {
			if kv.ModRevision > x && (s == nil || !s.written) {
				return fmt.Errorf("%s: changed at revision %d in the db, after the log's start (revision %d), by no write of the log", kv.Key, kv.ModRevision, x)
			}
			if deletedRanges.has(kv.Key) {
				for i := range p.entries {
					if e := &p.entries[i]; e.ranged && e.inRange(kv.Key) {
						return fmt.Errorf("%s: in the db from revision %d, before the log, yet entry %d deletes every key of its range", kv.Key, kv.ModRevision, e.index)
					}
				}
			}
			return nil
		}
		seen[id] = true
		if why := p.check(kv.Key, s, kv, hash, x, puts[id]); why != "" {
			return errors.New(why)
		}
		if s.exists == 1 && s.pre == 1 {
			p.dbState[id] = [2]int64{kv.CreateRevision, kv.Version}
		}
		return nil
	})
	if err != nil {
		p.failf("%v", err)
		return
	}
	for k := range p.keys {
		if s := &p.keys[k]; s.touched && s.exists == 1 && !seen[k] {
			p.failf("%s: the log's writes end with it present, the db does not hold it", p.name(int32(k)))
			return
		}
	}
	ids, err := b.leaseIDs()
	if err != nil {
		p.failf("%v", err)
		return
	}
	inDB := map[int64]bool{}
	for _, id := range ids {
		inDB[id] = true
	}
	for id, st := range p.leases {
		switch {
		case st == 1 && !inDB[id]:
			p.failf("lease %x: granted (or used) in the log and never revoked there, not in the db", id)
			return
		case st == 0 && p.leaseRevoked[id] && inDB[id]:
			p.failf("lease %x: revoked in the log, still in the db", id)
			return
		}
	}
	if len(p.compactions) > 0 {
		var top int64
		for _, c := range p.compactions {
			top = max(top, c.rev)
		}
		if k := b.compactRevision(); top > k {
			p.failf("the log compacts revision %d, the db only %d", top, k)
		}
	} else if k := b.compactRevision(); k > x {
		p.failf("the db is compacted at revision %d, after the log's start (revision %d), by no entry of the log", k, x)
	}
}

// keyRanges is a union of key ranges [from, end) (end "": no end),
// sorted and disjoint.
type keyRanges [][2]string

// rangeUnion returns the union of the prefix's range deletes' ranges.
func (p *pxSolver) rangeUnion() keyRanges {
	var rs keyRanges
	for i := range p.entries {
		if e := &p.entries[i]; e.ranged {
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

// check compares a key's model with the db's live kv, whose value's hash
// is hash; it returns why they disagree ("" when they agree).
func (p *pxSolver) check(k string, s *pxKey, kv *store.KeyValue, hash uint64, x int64, puts map[int64]bool) string {
	if s.exists == 0 {
		return fmt.Sprintf("%s: the log's writes end with it absent, the db holds it", k)
	}
	mod, placed := s.mod, true
	if s.modRel {
		mod, placed = p.relAbsOK(s.mod)
	}
	switch {
	case !placed:
		// Its last write's revision is not established.
	case s.modKnown && mod != kv.ModRevision:
		return fmt.Sprintf("%s: the log's writes end at revision %d, the db holds revision %d", k, mod, kv.ModRevision)
	case !s.modKnown && kv.ModRevision > x:
		return fmt.Sprintf("%s: changed at revision %d in the db, after the log's start, by no write of the log", k, kv.ModRevision)
	}
	if s.createKnown {
		cr, placed := s.create, true
		if s.createRel {
			cr, placed = p.relAbsOK(s.create)
		}
		if placed && cr != kv.CreateRevision {
			return fmt.Sprintf("%s: created at revision %d by the log, at %d in the db", k, cr, kv.CreateRevision)
		}
	} else if kv.CreateRevision > x && !puts[kv.CreateRevision] {
		return fmt.Sprintf("%s: created at revision %d in the db, after the log's start, by no write of the log", k, kv.CreateRevision)
	}
	// A key present before the log had a version then; one whose
	// existence then is unknown may have had none (a put of the log
	// created it).
	least := s.version + 1
	if s.pre != 1 {
		least = s.version
	}
	if s.verKnown && s.version != kv.Version || !s.verKnown && kv.Version < least {
		return fmt.Sprintf("%s: version %d in the db does not follow from the log's writes", k, kv.Version)
	}
	if s.leaseKnown && s.lease != kv.Lease {
		return fmt.Sprintf("%s: lease %x in the db, %x from the log's writes", k, kv.Lease, s.lease)
	}
	if s.valKnown && s.val != hash {
		return fmt.Sprintf("%s: the db's value is not the one the log's last write of it holds", k)
	}
	return ""
}

// fill completes, once verified, what the model left unknown: the create
// revision and version of keys that existed before the log and still
// exist in the db.
func (p *pxSolver) fill() {
	deleted := map[int32]bool{}
	for _, w := range p.writes {
		if w.applied && w.del || w.maybe {
			deleted[w.key] = true
		}
	}
	for i := range p.writes {
		w := &p.writes[i]
		if !w.applied || w.del || w.createKnown && w.verKnown || deleted[w.key] {
			continue
		}
		// Known only for a key present before the log and never deleted
		// in it.
		db, ok := p.dbState[w.key]
		if !ok {
			continue
		}
		if !w.createKnown {
			w.create, w.createKnown, w.createRel = db[0], true, false
		}
		if s := &p.keys[w.key]; !w.verKnown && !s.verKnown {
			w.version, w.verKnown = db[1]-s.version+w.vdelta, true
		}
	}
}
