package wal

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/walread"
)

// Challenging the first compares taken to hold.
//
// The solver takes a key's first compare in the log (on a state from
// before the log) to hold: a writer names what it read. But a writer may
// have read a stale state (a conflict): its transaction then failed, the
// revision it would have made was some other write's, and every revision
// before it is one higher. Where the db compacted the revisions that
// would tell, both worlds lead to the same db: the log's first writes of
// a key, near the log's start or a stretch nothing else fixes, then look
// applied at the revision a write from before the log made.
//
// So each entry whose outcome rests on such a compare is challenged: the
// prefix is worked out again with that compare taken to fail. When that
// world, too, leads to the db, whatever it says differently (the entry's
// outcome, revisions, create revisions, versions) is not established.
// The same goes for the other things taken on a writer's word: a lease
// from before the log taken to exist (the other world: revoked already,
// etcd refuses the put), a compare naming the revision of a write made
// without a compare (the other world: a stale read, failed). Worlds with
// several at once are worked out too: a challenged compare with the next
// ones on its key (the key is still in its state from before the log in
// that world), the compares markAmbiguous groups, and two single entries
// among the first few.
//
// An entry needs no challenge when the db corroborates it: a put whose key
// and value the db holds at the revision it is given, or one whose
// revision a later compare on its key names when that revision is
// certainly after the log's start (at or above a revision the db holds a
// value of the log's at: anchorFloor); a lease the db still holds. Nor
// does a world that a put the db holds before it refutes (anchoredBefore):
// in a member's real log, traffic of other objects comes first, and only
// the log's very first writes are left to challenge.
//
// A world the solver, working it out, does not find may still be the
// true one with more stale reads in it than the unit challenged (a
// conflict seldom comes alone): widen looks for it with one more of the
// compares taken on a writer's word failed as well, or another unit's,
// breadth first and bounded. What is left: a world not found within
// those bounds is taken for refuted. The model test and its fuzzer know
// no case of it today (their regressions were all of this kind); the
// runbook says what to check where a recovery rests on such a claim.

// maxChallenges bounds the prefix's alternative solves. Past it the
// entries left are not worked out: each is left unknown, and the
// revisions before it as well (higher in the other world). A variable
// for tests (TestPrefixModelConceded sets it to 0).
var maxChallenges = 48

// challenge works out the alternative worlds of the entries that rest on
// a first compare taken to hold and that nothing corroborates, and takes
// out of p's claims what one of them contradicts.
func (p *pxSolver) challenge(ctx context.Context, dbRev int64, db prefixDB) {
	if p.exact {
		return // nothing is taken to hold on an empty keyspace
	}
	floor := p.anchorFloor()
	// The groups are those of markAmbiguous, with the revision before the
	// log as it was worked out (a challenge may raise its bound).
	groups := p.ambiguousGroups()
	anchored := p.anchoredRels()
	ix := p.challengeIndex()
	// The leases the db holds (unread: none, so that every lease from
	// before the log is challenged).
	dbLeases := map[int64]bool{}
	if ids, err := db.leaseIDs(); err == nil {
		for _, id := range ids {
			dbLeases[id] = true
		}
	}
	done := 0
	var seeds []pxWorld
	try := func(force map[int32]bool) {
		why := p.challengeWhy(force)
		if done == maxChallenges {
			for e := range force {
				p.concede(e, why)
			}
			return
		}
		done++
		q, _, took := solveTries(ctx, p.entries, p.names, p.exact, dbRev, p.db, db, force)
		if q == nil {
			seeds = append(seeds, pxWorld{force: force, took: took})
			return
		}
		p.yield(q, why)
		// A world found rests on a writer's word too, where it may
		// agree with p for another wrong reason: widen it as well.
		seeds = append(seeds, pxWorld{force: force, took: q.wordTaken()})
	}
	// The units challenged: each entry that rests on a first compare
	// taken to hold and that nothing corroborates; the compares
	// markAmbiguous found naming two revisions of a key from before the
	// log (one of them was taken to hold, so that the revisions count the
	// same; but all of them may have failed).
	var units []map[int32]bool
	var chains []map[int32]bool
	for i := range p.entries {
		idx := int32(i)
		// cmp: a compare on a key from before the log taken to hold;
		// lease: a lease from before the log taken to exist, which may
		// have been revoked already (etcd then refuses the put), unless
		// the db still holds it. An entry markAmbiguous left unknown is
		// challenged too when it made a revision (the revisions between
		// it and its key's other compares depend on which of them held),
		// and so is one refused for its lease after its compare was taken
		// to hold (what the compare said of the key stays).
		cmp, lease := p.assumed[idx], p.assumed[idx|leaseBit] && !dbLeases[p.leaseOf(idx)]
		if o := p.out[i]; !cmp && !lease || o.outcome == OutcomeUnknown || o.ambiguous != "" && o.rel == 0 || p.corroborated(idx, floor, ix) {
			continue
		}
		if cmp {
			units = append(units, map[int32]bool{idx: true})
		}
		if lease {
			units = append(units, map[int32]bool{idx | leaseBit: true})
		}
	}
	// A lease from before the log that no world so far took to exist
	// (its first puts failed their compares there): in the world where
	// a compare before them failed instead, the put holds and meets
	// the lease, which may have been revoked already. One unit per
	// lease, at its first put in the log.
	for _, idx := range p.unassumedLeases(dbLeases) {
		units = append(units, map[int32]bool{idx | leaseBit: true})
	}
	// A compare that named the revision of a write made without a
	// compare, and held: a stale read of the key's state from before that
	// write names its revision too where the stretch is not fixed, and
	// failed.
	for _, e := range slices.Sorted(maps.Keys(p.onBlind)) {
		if p.out[e].outcome == OutcomeApplied && !p.corroborated(e, floor, ix) {
			units = append(units, map[int32]bool{e: true})
		}
	}
	// A compare whose pin the search passed over (taken to have read a
	// stale state, so failed) may have held: the world in which its pin
	// stands.
	for _, e := range slices.Sorted(maps.Keys(p.veto)) {
		if p.veto[e] {
			units = append(units, map[int32]bool{e | keepBit: true})
		}
	}
	for _, g := range groups {
		force := map[int32]bool{}
		for _, e := range g {
			force[e] = true
		}
		units = append(units, force)
	}
	for _, u := range units {
		chains = append(chains, p.staleChains(u)...)
	}
	units = append(units, chains...)
	units = slices.DeleteFunc(units, func(u map[int32]bool) bool { return p.anchoredBefore(u, anchored, ix) })
	for _, u := range units {
		if ctx.Err() != nil {
			return
		}
		try(u)
	}
	// Two at once, among the first single entries: a stale compare on one
	// key and one on another make up for each other's revision.
	var singles []map[int32]bool
	for _, u := range units {
		if len(u) == 1 && len(singles) < maxPairUnits {
			singles = append(singles, u)
		}
	}
	for i := 0; i < len(singles) && done < maxChallenges; i++ {
		for j := i + 1; j < len(singles) && done < maxChallenges; j++ {
			if ctx.Err() != nil {
				return
			}
			u := maps.Clone(singles[i])
			maps.Copy(u, singles[j])
			try(u)
		}
	}
	// What widen may add: what a unit could be (taken on a writer's word,
	// not corroborated, the lease not held by the db), unless the db
	// refutes the world it makes (anchoredBefore).
	open := func(e int32) bool {
		idx := entryOf(e)
		if e&leaseBit != 0 {
			return !dbLeases[p.leaseOf(idx)]
		}
		return p.out[idx].outcome != OutcomeUnknown && !p.corroborated(idx, floor, ix)
	}
	refuted := func(f map[int32]bool) bool { return p.anchoredBefore(f, anchored, ix) }
	p.widen(ctx, dbRev, db, seeds, units, open, refuted)
	p.concedeBlurredCompares(ctx)
}

// concedeBlurredCompares concedes (see concede) every entry whose outcome
// is claimed but rests on a compare naming the mod revision of a write a
// concession blurred (the key's last applied write before it): in the
// world conceded, that write may have the revision the compare names, or
// another, and the compare hold where it failed, or fail where it held.
// What it concedes blurs more: again, until nothing more is (each round
// concedes what one pass over the log finds; every round concedes at
// least one entry, so there are at most as many rounds as entries). It
// stops when ctx ends (solvePrefix then keeps no claim).
func (p *pxSolver) concedeBlurredCompares(ctx context.Context) {
	for range len(p.entries) + 1 {
		found := p.blurredCompares()
		if len(found) == 0 || ctx.Err() != nil {
			return
		}
		for _, f := range found {
			p.concede(f.entry, f.why)
		}
	}
}

// pxConcession is an entry to concede, and why.
type pxConcession struct {
	entry int32
	why   string
}

// blurredCompares returns the entries concedeBlurredCompares concedes in
// one pass, and why.
func (p *pxSolver) blurredCompares() []pxConcession {
	var out []pxConcession
	last := map[int32]int{} // key: its last applied write so far, in p.writes
	wi := 0
	for i := range p.entries {
		idx := int32(i)
		if o := p.out[i]; o.ambiguous == "" && (o.outcome == OutcomeApplied || o.outcome == OutcomeNotApplied) {
			for _, c := range p.entries[i].cmps {
				if c.target != pb.Compare_MOD || c.value <= 0 {
					continue
				}
				k, ok := last[c.key]
				if !ok {
					continue
				}
				w := &p.writes[k]
				if w.del || !w.conceded || c.value < w.lo || c.value > w.hi {
					continue // absent (mod 0), placed, or not the revision named
				}
				out = append(out, pxConcession{idx, fmt.Sprintf("entry %d compares %s with revision %d, which entry %d may have made (its revision is not established)", p.entries[i].index, p.name(c.key), c.value, p.entries[w.entry].index)})
				break
			}
		}
		for ; wi < len(p.writes) && p.writes[wi].entry == idx; wi++ {
			if p.writes[wi].applied {
				last[p.writes[wi].key] = wi
			}
		}
	}
	return out
}

// pxWorld is a challenged world: the entries taken to fail (force) and
// what it took on a writer's word (took: the world's own, see wordTaken,
// or, for one not found, the try's that went furthest, see solveTries).
type pxWorld struct {
	force map[int32]bool
	took  []int32
}

// maxWiden bounds the worlds widen works out in one challenge, and
// maxWidenWidth and maxWidenDepth how many entries it adds to a world
// at a time and in all.
const (
	maxWiden      = 256
	maxWidenWidth = 4
	maxWidenDepth = 3
	// maxWidenWork bounds widen's work on a long log: worlds times
	// entries (a member's log of 200,000 entries gets 10 worlds).
	maxWidenWork = 2_000_000
)

// widen looks again around the challenged worlds (seeds), found or not
// (a world found rests on a writer's word too, and may agree with p for
// another wrong reason): a world in which, besides a seed's compares, a
// compare (or lease) taken on a writer's word in the try that went
// furthest failed too (one open to challenge: not corroborated by the
// db), or another challenged unit's did; a world the db refutes (refuted:
// anchoredBefore) is not worked out. A stale read seldom comes alone:
// with one compare failed, the key is still in its state from before the
// log, and the next compare on it, or on a key the same writer read, may
// have been stale as well, and only together do they lead to the db (a
// world with one of them alone does not). Breadth first: each seed
// widened by one entry (the maxWidenWidth of took nearest its first
// entry) or one unit, then those by one more, up to maxWidenDepth, and no
// more than maxWiden worlds in all (fewer on a long log: maxWidenWork);
// what a world found says differently is taken out of p's claims (yield).
func (p *pxSolver) widen(ctx context.Context, dbRev int64, db prefixDB, seeds []pxWorld, units []map[int32]bool, open func(int32) bool, refuted func(map[int32]bool) bool) {
	type queued struct {
		pxWorld
		depth int
	}
	queue := make([]queued, 0, len(seeds))
	for _, w := range seeds {
		queue = append(queue, queued{w, 0})
	}
	seen := map[string]bool{}
	setKey := func(f map[int32]bool) string {
		var b strings.Builder
		for _, e := range slices.Sorted(maps.Keys(f)) {
			b.WriteString(strconv.FormatInt(int64(e), 36))
			b.WriteByte(',')
		}
		return b.String()
	}
	for _, w := range seeds {
		seen[setKey(w.force)] = true
	}
	n, limit := 0, min(maxWiden, maxWidenWork/max(len(p.entries), 1))
	for len(queue) > 0 && n < limit && ctx.Err() == nil {
		w := queue[0]
		queue = queue[1:]
		first := minKey(w.force)
		near := slices.DeleteFunc(slices.Clone(w.took), func(e int32) bool { return w.force[e] || !open(e) })
		slices.SortStableFunc(near, func(a, b int32) int {
			return cmp.Compare(absDiff(entryOf(a), first), absDiff(entryOf(b), first))
		})
		var adds []map[int32]bool
		for _, e := range near[:min(len(near), maxWidenWidth)] {
			adds = append(adds, map[int32]bool{e: true})
		}
		adds = append(adds, units...)
		for _, add := range adds {
			if n >= limit || ctx.Err() != nil {
				return
			}
			f := maps.Clone(w.force)
			maps.Copy(f, add)
			k := setKey(f)
			if seen[k] || len(f) == len(w.force) {
				continue
			}
			seen[k] = true
			if refuted(f) {
				continue
			}
			n++
			q, _, took := solveTries(ctx, p.entries, p.names, p.exact, dbRev, p.db, db, f)
			if q != nil {
				p.yield(q, p.challengeWhy(f))
				took = q.wordTaken()
			}
			if w.depth+1 < maxWidenDepth {
				queue = append(queue, queued{pxWorld{force: f, took: took}, w.depth + 1})
			}
		}
	}
}

// wordTaken returns what a world found took on a writer's word, in order:
// the compares on states from before the log taken to hold and the
// leases taken to exist (assumed), and the compares that held naming the
// revision of a write made without a compare (onBlind), which a stale
// read of the state before that write names too.
func (p *pxSolver) wordTaken() []int32 {
	out := slices.Collect(maps.Keys(p.assumed))
	for e := range p.onBlind {
		if p.out[e].outcome == OutcomeApplied && !p.assumed[e] {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

func absDiff(a, b int32) int32 {
	if a < b {
		return b - a
	}
	return a - b
}

// maxChain bounds the compares after a challenged one on its key that are
// taken to have failed with it (see staleChains).
const maxChain = 3

// staleChains returns the worlds in which unit u's compares and the next
// ones on its first entry's keys failed too: with u's failed, a key is
// still in its state from before the log, and the next compare on it
// (evaluated against u's write, and held) is one on that state, which may
// have been stale as well. One set for each of the next maxChain compares
// of those keys' mod revisions (and versions).
func (p *pxSolver) staleChains(u map[int32]bool) []map[int32]bool {
	first := minKey(u)
	var out []map[int32]bool
	for _, refs := range [][]pxRef{p.refs, p.vrefs} {
		keys := map[int32]bool{}
		for _, r := range refs {
			if r.entry == first {
				keys[r.key] = true
			}
		}
		cur, n := u, 0
		for _, r := range refs {
			if n == maxChain {
				break
			}
			if r.entry <= first || !keys[r.key] || cur[r.entry] {
				continue
			}
			cur = maps.Clone(cur)
			cur[r.entry] = true
			out = append(out, cur)
			n++
		}
	}
	return out
}

// minKey returns the lowest entry of a non-empty set (leaseBit and keepBit
// left out).
func minKey(m map[int32]bool) int32 {
	first := int32(-1)
	for e := range m {
		if e = entryOf(e); first < 0 || e < first {
			first = e
		}
	}
	return first
}

// unassumedLeases returns, for each lease from before the log that the
// db does not hold and that p took nowhere to exist or to be gone, the
// first entry of the log whose put names it (a lease the log grants or
// revokes before that put is known there).
func (p *pxSolver) unassumedLeases(dbLeases map[int64]bool) []int32 {
	seen := map[int64]bool{}
	for e := range p.assumed {
		if e&leaseBit != 0 {
			seen[p.leaseOf(entryOf(e))] = true
		}
	}
	var firsts []int32
	for i := range p.entries {
		pe := &p.entries[i]
		if pe.kind == walread.KindLeaseGrant || pe.kind == walread.KindLeaseRevoke {
			// Granted in the log, or revoked before its first put
			// (both worlds of that revoke are the segments').
			seen[pe.id] = true
			continue
		}
		if l := p.leaseOf(int32(i)); l != 0 && !seen[l] && !dbLeases[l] {
			seen[l] = true
			firsts = append(firsts, int32(i))
		}
	}
	return firsts
}

// leaseOf returns the lease of entry idx's first put with one (0: none).
func (p *pxSolver) leaseOf(idx int32) int64 {
	pe := &p.entries[idx]
	for _, ops := range [][]pxOp{pe.succ, pe.fail} {
		for _, o := range ops {
			if !o.del && o.lease != 0 {
				return o.lease
			}
		}
	}
	return 0
}

// maxPairUnits bounds the single entries challenged two at once (see
// challenge).
const maxPairUnits = 8

// challengeWhy says why what the world with force's compares failed says
// differently is not established.
func (p *pxSolver) challengeWhy(force map[int32]bool) string {
	var idx []string
	lease, keep := false, false
	for _, e := range slices.Sorted(maps.Keys(force)) {
		lease, keep = lease || e&leaseBit != 0, keep || e&keepBit != 0
		idx = append(idx, strconv.FormatUint(p.entries[entryOf(e)].index, 10))
	}
	switch {
	case len(idx) == 1 && keep:
		return fmt.Sprintf("entry %s's compare, on the revision of a write of the log, may have held rather than read a stale state, and the db does not tell", idx[0])
	case keep:
		return fmt.Sprintf("the compares of entries %s may have held or failed otherwise (stale reads, revoked leases), and the db does not tell", strings.Join(idx, ", "))
	case len(idx) == 1 && lease:
		return fmt.Sprintf("entry %s's lease, granted before the log, may have been revoked already (etcd then refuses the put), and the db does not tell", idx[0])
	case len(idx) == 1:
		return fmt.Sprintf("entry %s's compare on a key from before the log may have failed (a stale read), and the db does not tell", idx[0])
	}
	return fmt.Sprintf("the compares (or leases) of entries %s on states from before the log may all have failed (stale reads, revoked leases), and the db does not tell", strings.Join(idx, ", "))
}

// ambiguousGroups returns, per key whose compares name two revisions from
// before the log (see markAmbiguous), the entries whose compares name
// them, when one of those made a revision.
func (p *pxSolver) ambiguousGroups() [][]int32 {
	named, byKey := p.preLogNames(p.xMax())
	keys := make([]int32, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out [][]int32
	for _, k := range keys {
		if len(named[k]) < 2 {
			continue
		}
		made := false
		for _, e := range byKey[k] {
			made = made || p.out[e].rel != 0
		}
		if made {
			out = append(out, byKey[k])
		}
	}
	return out
}

// anchorFloor returns the lowest revision at which the db holds a put
// whose key and value a put of the log has (0: none): a log's write made
// it, so every revision from it on is after the log's start.
func (p *pxSolver) anchorFloor() int64 {
	puts := map[[2]uint64]bool{}
	for _, pe := range p.entries {
		for _, ops := range [][]pxOp{pe.succ, pe.fail} {
			for _, o := range ops {
				if !o.del {
					puts[[2]uint64{uint64(o.key), o.hash}] = true
				}
			}
		}
	}
	x := p.db
	if x == nil {
		return 0
	}
	for rev := x.lo; rev <= x.hi; rev++ {
		for _, it := range x.at(rev) {
			if !it.tomb && it.key >= 0 && puts[[2]uint64{uint64(it.key), it.hash}] {
				return rev
			}
		}
	}
	return 0
}

// anchoredRels returns the relative revisions of the puts the db holds,
// key and value, at the revision they are given, in order.
func (p *pxSolver) anchoredRels() []int64 {
	var out []int64
	for i := range p.writes {
		w := &p.writes[i]
		if !w.applied || w.del || w.rel == 0 {
			continue
		}
		if _, ok := p.dbHolds(w); ok {
			out = append(out, w.rel)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// anchoredIn reports whether a put the db holds has a relative revision
// in (lo, hi].
func anchoredIn(anchored []int64, lo, hi int64) bool {
	i, _ := slices.BinarySearch(anchored, lo+1)
	return i < len(anchored) && anchored[i] <= hi
}

// anchoredBefore reports whether the world in which unit u's compares
// failed is refuted by a put the db holds before them in their segment:
// the revisions they made gone, every revision before them in the segment
// would be as many higher (the ones after stay, counted back from the db),
// and that put's with them. Nothing before can make up for it: no
// uncertain entry (it would start a segment), and every entry before u's
// is worked out the same in that world (a put the db holds fixes the
// segment's start, whatever u's compares pinned), unless a compare of one
// of them failed on the revision of a write of the log (relFailed): one
// higher there, it may hold. Nor after,
// when every later write of its keys outside u applied (a later compare
// on them that failed would be one on their state from before the log in
// that world, and may hold there, making up a revision; a later delete of
// them that deleted nothing may delete there), and an uncertain
// entry after them that may make one more revision there has a put the
// db holds before it too. A lease taken to be gone changes more (every
// later use of it): never refuted so.
func (p *pxSolver) anchoredBefore(u map[int32]bool, anchored []int64, ix *challengeIndex) bool {
	first, r := int32(-1), int64(0)
	for e := range u {
		if e&(leaseBit|keepBit) != 0 {
			return false
		}
		if first < 0 || e < first {
			first = e
		}
		if rel := p.out[e].rel; rel != 0 && (r == 0 || rel < r) {
			r = rel
		}
	}
	if r == 0 {
		return false
	}
	j := p.seg(r)
	if !anchoredIn(anchored, p.segs[j].startRel, r-1) {
		return false
	}
	// A compare before them in the segment that failed on the revision
	// of a write of the log may hold in that world, where that revision
	// is one higher, and make up for theirs.
	for e := max(p.segs[j].revoke, 0); e < first; e++ {
		if p.relFailed[e] {
			return false
		}
	}
	// An uncertain entry after them that made no revision (or may have
	// made none) may have made one in that world, for theirs: then the
	// revisions between them and it are one lower there, refuted only by
	// a put the db holds between.
	for k := j + 1; k < len(p.segs); k++ {
		if rev, ok := p.revokeRev(int32(k)); !ok || rev == 0 {
			if !anchoredIn(anchored, r, p.segs[k].startRel) {
				return false
			}
			break
		}
	}
	keys := map[int32]bool{}
	for e := range u {
		for wi := ix.firstWrite(p, e); wi < len(p.writes) && p.writes[wi].entry == e; wi++ {
			keys[p.writes[wi].key] = true
		}
	}
	for k := range keys {
		for _, wi := range ix.writesOf[k] {
			if w := &p.writes[wi]; w.entry > first && !u[w.entry] && !w.applied {
				return false
			}
		}
		// A later delete of it that deleted nothing (the key absent after
		// u's writes) may delete it in that world, where u's did not
		// apply: one more revision there, making up for u's.
		for _, e := range ix.deletesOf[k] {
			if e > first && !u[e] && !slices.ContainsFunc(ix.writesOf[k], func(wi int32) bool { return p.writes[wi].entry == e }) {
				return false
			}
		}
	}
	return true
}

// dbHolds returns the revision applied put w is given (0: not
// established), and whether the db holds its key and value there.
func (p *pxSolver) dbHolds(w *pxWrite) (int64, bool) {
	rev, ok := p.relAbsOK(w.rel)
	if !ok {
		return 0, false
	}
	for _, it := range p.db.at(rev) {
		if it.key == w.key && !it.tomb && it.hash == w.hash {
			return rev, true
		}
	}
	return rev, false
}

// corroborated reports whether entry idx's writes are confirmed whatever
// its compares read: one of its puts is in the db at the revision it is
// given, or a later compare on its key names that revision, which is
// after the log's start (floor), and no write of that key comes between.
func (p *pxSolver) corroborated(idx int32, floor int64, ix *challengeIndex) bool {
	for wi := ix.firstWrite(p, idx); wi < len(p.writes) && p.writes[wi].entry == idx; wi++ {
		w := &p.writes[wi]
		if !w.applied || w.del {
			continue
		}
		rev, held := p.dbHolds(w)
		switch {
		case held:
			return true
		case rev == 0 || floor == 0 || rev < floor:
			continue
		}
		// The key's next write after this one, and the compares on it
		// between.
		ws := ix.writesOf[w.key]
		k, _ := slices.BinarySearch(ws, int32(wi))
		next := int32(len(p.entries))
		if k+1 < len(ws) {
			next = p.writes[ws[k+1]].entry
		}
		for _, r := range ix.refsOf[w.key] {
			if r.rev == rev && r.entry > idx && r.entry <= next {
				return true
			}
		}
	}
	return false
}

// challengeIndex indexes a solved prefix's writes and compares by key, for
// challenge.
type challengeIndex struct {
	writesOf map[int32][]int32 // positions in writes, in order
	refsOf   map[int32][]pxRef
	// deletesOf lists, by key, the entries with a delete of it in either
	// branch (a delete that deleted nothing leaves no write).
	deletesOf map[int32][]int32
}

func (p *pxSolver) challengeIndex() *challengeIndex {
	ix := &challengeIndex{writesOf: map[int32][]int32{}, refsOf: map[int32][]pxRef{}, deletesOf: map[int32][]int32{}}
	for i := range p.writes {
		k := p.writes[i].key
		ix.writesOf[k] = append(ix.writesOf[k], int32(i))
	}
	for i := range p.entries {
		for _, ops := range [2][]pxOp{p.entries[i].succ, p.entries[i].fail} {
			for _, o := range ops {
				if o.del {
					ix.deletesOf[o.key] = append(ix.deletesOf[o.key], int32(i))
				}
			}
		}
	}
	for _, r := range p.refs {
		ix.refsOf[r.key] = append(ix.refsOf[r.key], r)
	}
	return ix
}

// firstWrite returns the position of entry idx's first write in writes
// (which are in entry order), or where it would be.
func (ix *challengeIndex) firstWrite(p *pxSolver, idx int32) int {
	return sort.Search(len(p.writes), func(i int) bool { return p.writes[i].entry >= idx })
}

// claim is what a solved prefix says of one entry: its outcome (unknown
// when ambiguous) and the revision it made, when established.
type claim struct {
	outcome Outcome
	rev     int64
	revOK   bool
}

func (p *pxSolver) claimOf(i int) claim {
	o := p.out[i]
	c := claim{outcome: o.outcome}
	switch {
	case o.ambiguous != "":
		c.outcome = OutcomeUnknown
	case p.entries[i].ranged:
		c.rev, c.revOK = p.rangeRev(int32(i))
	case o.rel != 0:
		c.rev, c.revOK = p.relAbsOK(o.rel)
	case o.seg != 0:
		c.rev, c.revOK = p.revokeRev(o.seg)
	default:
		c.revOK = true
	}
	return c
}

// writeClaim is what a solved prefix says of one write: applied, and its
// create revision and version (0: not established).
type writeClaim struct {
	applied         bool
	create, version int64
}

func (p *pxSolver) writeClaimOf(w *pxWrite) writeClaim {
	c := writeClaim{applied: w.applied}
	switch {
	case w.createRel:
		c.create = p.relAbs(w.create)
	case w.createKnown:
		c.create = w.create
	}
	if w.verKnown {
		c.version = w.version
	}
	return c
}

// yield takes out of p what the other world q says differently: an
// entry's outcome (left unknown, why), the revision it made or the one
// before the log (not established, bounded by both), a write's create
// revision or version.
func (p *pxSolver) yield(q *pxSolver, why string) {
	for i := range p.entries {
		a, b := p.claimOf(i), q.claimOf(i)
		if a.outcome == OutcomeUnknown {
			continue
		}
		if a.outcome != b.outcome {
			p.out[i].ambiguous = "its outcome is not established: " + why
			continue
		}
		if a.outcome == OutcomeNotApplied && p.out[i].reason != q.out[i].reason {
			// Refused in both worlds, for another reason in each.
			p.out[i].reason = "not applied: its compare failed, or etcd refused it (its lease not found); which is not established: " + why
		}
		if a.revOK && a.rev != 0 && (!b.revOK || b.rev != a.rev) {
			lo, hi := a.rev-1, a.rev+1
			if b.revOK && b.rev != 0 {
				lo, hi = min(a.rev, b.rev), max(a.rev, b.rev)
			}
			p.blur(int32(i), lo, hi, why)
		}
	}
	if x, ok := p.x(); ok {
		if y, yok := q.x(); !yok || y != x || q.xWhy != "" {
			p.xWhy, p.xHi = why, max(p.xHi, x+1, q.xMax())
		}
	}
	qw := map[[2]int32][]*pxWrite{}
	for i := range q.writes {
		w := &q.writes[i]
		k := [2]int32{w.entry, w.key}
		qw[k] = append(qw[k], w)
	}
	for i := range p.writes {
		w := &p.writes[i]
		k := [2]int32{w.entry, w.key}
		var other *pxWrite
		if l := qw[k]; len(l) > 0 {
			other, qw[k] = l[0], l[1:]
		}
		if !w.applied {
			continue
		}
		if other == nil && p.out[w.entry].ambiguous == "" {
			// The other world's entry does not write the key (a revoke
			// whose lease that world does not know to hold it): what
			// the entry did is not established.
			p.out[w.entry].ambiguous = "its outcome is not established: " + why
		}
		if other == nil || p.writeClaimOf(w) != q.writeClaimOf(other) {
			w.vague = true
		}
	}
	// A range delete applies in every world, but the keys it deletes
	// are those that exist there: one the other world deletes and this
	// one does not, or the reverse, leaves which keys it deleted not
	// established.
	applied := func(s *pxSolver) map[[2]int32]bool {
		m := map[[2]int32]bool{}
		for i := range s.writes {
			if w := &s.writes[i]; w.applied && s.entries[w.entry].ranged {
				m[[2]int32{w.entry, w.key}] = true
			}
		}
		return m
	}
	pa, qa := applied(p), applied(q)
	for _, m := range []map[[2]int32]bool{pa, qa} {
		for k := range m {
			if pa[k] != qa[k] && p.out[k[0]].keysVague == "" {
				p.out[k[0]].keysVague = why
			}
		}
	}
}

// firstWrite returns the index in p.writes of entry i's first write (or
// where it would be): the writes are in the order of their entries.
func (p *pxSolver) firstWrite(i int32) int {
	return sort.Search(len(p.writes), func(k int) bool { return p.writes[k].entry >= i })
}

// blur leaves the revision entry i made not established, between lo and
// hi (widened by an earlier blur).
func (p *pxSolver) blur(i int32, lo, hi int64, why string) {
	o := &p.out[i]
	if o.vague == "" {
		o.vague, o.lo, o.hi = why, lo, hi
	} else {
		o.lo, o.hi = min(o.lo, lo), max(o.hi, hi)
	}
	for wi := p.firstWrite(i); wi < len(p.writes) && p.writes[wi].entry == i; wi++ {
		if w := &p.writes[wi]; w.applied {
			w.vague = true
			if w.lo == 0 {
				w.lo, w.hi = lo, hi
			} else {
				w.lo, w.hi = min(w.lo, lo), max(w.hi, hi)
			}
		}
	}
}

// concede is challenge's answer for entries past maxChallenges: the
// entry's outcome is left unknown, its keys' later writes' too, and the
// revisions before it (higher in the other world) not established. e
// may carry leaseBit (the entry's lease taken to exist): every later put
// with that lease is left unknown as well (refused in the other world),
// and the revisions before each are not established by as many.
func (p *pxSolver) concede(e int32, why string) {
	idx := entryOf(e)
	conceded := []int32{idx}
	if l := p.leaseOf(idx); e&leaseBit != 0 && l != 0 {
		for i := idx + 1; int(i) < len(p.entries); i++ {
			if p.leaseOf(i) == l {
				conceded = append(conceded, i)
			}
		}
	}
	// In the other world each of them that made a revision made none:
	// the revisions before them are up to that many higher there (at
	// least one: the entry may have made one it was not given).
	made := 0
	isConceded := map[int32]bool{}
	for _, c := range conceded {
		isConceded[c] = true
		if p.out[c].rel != 0 {
			made++
		}
	}
	made = max(made, 1)
	// In that world the entries after them may differ too (a compare
	// naming a revision that world gives another write holds, or fails;
	// a revoke deletes a key or none): the revisions before them may be
	// lower as well as higher, by as many as there are entries after.
	last := conceded[len(conceded)-1]
	for i := range last {
		if c := p.claimOf(int(i)); !isConceded[i] && c.revOK && c.rev != 0 {
			after := int64(len(p.entries)) - int64(i)
			p.blur(i, max(1, c.rev-after), c.rev+max(int64(made), after), why)
			for wi := p.firstWrite(i); wi < len(p.writes) && p.writes[wi].entry == i; wi++ {
				if w := &p.writes[wi]; w.applied {
					w.conceded = true
				}
			}
		}
	}
	if x, ok := p.x(); ok {
		p.xWhy, p.xHi = why, max(p.xHi, x+int64(made))
	}
	keys := map[int32]bool{}
	for _, c := range conceded {
		p.out[c].ambiguous = "its outcome is not established: " + why
	}
	for i := range p.writes {
		if w := &p.writes[i]; isConceded[w.entry] {
			keys[w.key] = true
		}
	}
	for i := range p.writes {
		w := &p.writes[i]
		if w.entry > idx && keys[w.key] && p.out[w.entry].ambiguous == "" {
			p.out[w.entry].ambiguous = "its outcome is not established: " + why
		}
	}
}

// vagueStretches returns the runs of entries whose revisions a challenge
// left not established (entries that made none between them join runs).
func (p *pxSolver) vagueStretches() []WALStretch {
	var out []WALStretch
	open := false
	for i, o := range p.out {
		switch {
		case o.vague != "":
			if open {
				out[len(out)-1].ToIndex = p.entries[i].index
				continue
			}
			out = append(out, WALStretch{FromIndex: p.entries[i].index, ToIndex: p.entries[i].index, Reason: o.vague})
			open = true
		case o.rel != 0 || o.seg != 0:
			open = false
		}
	}
	return out
}
