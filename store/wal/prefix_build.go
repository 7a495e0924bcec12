package wal

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/etcdpvc/etcdpvc/walread"
)

// maxPinTries bounds how many times the prefix is worked out again with
// the pins of compares found wrong passed over (a compare that names a
// stale revision, a conflict, pins a segment wrong; see solvePrefix).
const maxPinTries = 4

// resolvePrefix works out the prefix (the log's entries the db already
// holds; see prefix.go and prefix_anchor.go) and returns it as a
// replay to put before the rest: with outcomes and revisions where they
// are established, else with the writes unknown and the reason in the
// coverage.
// It fails with an error wrapping ErrOtherCluster when the db holds
// writes the entries cannot have made (foreignDB): nothing the db says
// can then be taken for the log's.
func (w *WAL) resolvePrefix(ctx context.Context, entries []pxEntry, keys *pxKeys, exact bool) (*replay, error) {
	db := boltPrefixDB{b: w.base, states: w.baseStates}
	if db.states != nil {
		// The values of the db's keys the log names are read and hashed
		// on another core while the solver starts.
		want := make([]bool, len(db.states))
		for i := range db.states {
			_, want[i] = keys.ids[db.states[i].Key]
		}
		var stop func()
		db.hashes, stop = readHashes(ctx, w.base, db.states, want)
		defer stop()
	}
	rp, v := solvePrefix(ctx, entries, keys, exact, w.cov.DBRevision, db)
	if v.foreign != "" {
		return nil, fmt.Errorf("%w: %s: %s", ErrOtherCluster, w.base.Path(), v.foreign)
	}
	w.cov.PrefixRevision, w.cov.PrefixUnresolved, w.cov.PrefixUnknown = v.before, v.unresolved, v.unknown
	w.prefixFloor = v.floor
	return rp, nil
}

// prefixVerdict is what solvePrefix established as a whole: the revision
// before the log (0: not established), the stretches of entries whose
// revisions are not established, or why nothing is (unresolved).
type prefixVerdict struct {
	before     int64
	floor      int64 // before, or its highest possible value
	unknown    []WALStretch
	unresolved string
	// foreign says why the db cannot be the one the entries lead to.
	foreign string
}

// maxAnchorPasses bounds how many times a prefix is worked out again with
// the starts the db allows its segments (see anchor). A segment's starts
// are kept only while its writes stay those they were worked out for
// (see staleStarts).
const maxAnchorPasses = 4

// solvePrefix works the prefix out over db, whose revision is dbRev.
func solvePrefix(ctx context.Context, entries []pxEntry, keys *pxKeys, exact bool, dbRev int64, db prefixDB) (*replay, prefixVerdict) {
	// Every entry makes one revision at most: the prefix's lie in the
	// db's last len(entries) revisions.
	x, err := loadDBIndex(ctx, db, keys, dbRev-int64(len(entries)), dbRev)
	if err != nil {
		return unresolvedPrefix(entries, keys, err.Error()), prefixVerdict{unresolved: err.Error()}
	}
	if why := foreignDB(entries, keys, x, dbRev); why != "" {
		return nil, prefixVerdict{foreign: why}
	}
	p, why, _ := solveTries(ctx, entries, keys, exact, dbRev, x, db, nil)
	if p != nil {
		p.challenge(ctx, dbRev, db)
		if err := ctx.Err(); err != nil {
			// A challenge cut short (its other world taken for refuted)
			// leaves claims it did not check: none stand.
			why = "working out the log's entries the db holds was interrupted: " + err.Error()
			return unresolvedPrefix(entries, keys, why), prefixVerdict{unresolved: why}
		}
		return p.replay(), p.verdict()
	}
	return unresolvedPrefix(entries, keys, why), prefixVerdict{unresolved: why}
}

// solveTries works the prefix out (solveOnce), again with the pins of
// compares found wrong passed over, at most maxPinTries times; force is
// passed on (see pxSolver.force). It returns the solved prefix, filled,
// or nil, why none was found and what the try that went furthest took
// on a writer's word (pxSolver.assumed: entries, leaseBit marking a
// lease), in order, for challenge to widen the world it was given.
//
// The tries are breadth first: a try that fails passes over the pins
// certainly wrong (at or below a revision from before the log) in the
// next, else, each in a try of its own, every pin it made that is not
// passed over yet (its own first, then those of its earlier passes). A
// stale compare's pin is seldom the first one: passing over the first
// for good would fail every compare that pinned right after it.
func solveTries(ctx context.Context, entries []pxEntry, keys *pxKeys, exact bool, dbRev int64, x *dbIndex, db prefixDB, force map[int32]bool) (*pxSolver, string, []int32) {
	// The reason given is the one of the try that went furthest (a
	// disagreement with the db says more than a wrong start).
	var why string
	var took []int32
	stage := -1
	queue := []map[int32]bool{{}}
	seen := map[string]bool{"": true}
	for tries := 0; tries < maxPinTries && len(queue) > 0; tries++ {
		veto := queue[0]
		queue = queue[1:]
		p, reached := solveOnce(ctx, entries, keys, exact, dbRev, x, db, veto, force)
		if p.fail == "" {
			p.fill()
			return p, "", nil
		}
		if reached > stage {
			why, stage = p.fail, reached
			took = slices.Sorted(maps.Keys(p.assumed))
		}
		if exact || ctx.Err() != nil {
			break
		}
		var next [][]int32
		if wrong := slices.DeleteFunc(p.wrongPins(), func(e int32) bool { return force[e|keepBit] || veto[e] }); len(wrong) > 0 {
			next = append(next, wrong)
		} else {
			for _, pn := range slices.Concat(p.pins, p.passPins) {
				if !veto[pn.entry] && !force[pn.entry|keepBit] {
					next = append(next, []int32{pn.entry})
				}
			}
		}
		for _, add := range next {
			v := maps.Clone(veto)
			for _, e := range add {
				v[e] = true
			}
			if k := vetoKey(v); !seen[k] {
				seen[k] = true
				queue = append(queue, v)
			}
		}
	}
	return nil, why, took
}

// vetoKey names a set of entries (the pins a try passes over).
func vetoKey(v map[int32]bool) string {
	var b strings.Builder
	for _, e := range slices.Sorted(maps.Keys(v)) {
		b.WriteString(strconv.Itoa(int(e)))
		b.WriteByte(',')
	}
	return b.String()
}

// solveOnce works the prefix out, its compares' pins refused for the
// entries in veto, anchoring the segments in the db (x) until the starts
// it allows no longer change; then checks the result. It returns the
// solver and how far it got (0: the model, 1: the revisions, 2: the checks
// against the compares and the db).
func solveOnce(ctx context.Context, entries []pxEntry, keys *pxKeys, exact bool, dbRev int64, x *dbIndex, db prefixDB, veto, force map[int32]bool) (*pxSolver, int) {
	var allowed map[int32][]int64
	var sigs map[int32]pxSegSig // the segments allowed was worked out for
	var p *pxSolver
	var passPins []pxPin
	for pass := range maxAnchorPasses {
		for {
			if p != nil {
				passPins = append(passPins, p.pins...)
			}
			p = newPxSolver(entries, keys, exact, x, veto, allowed)
			p.force = force
			p.passPins = passPins
			p.run()
			// The starts a pass allowed a segment hold for the writes it
			// had then: a segment this pass gave other writes (a compare
			// evaluated otherwise, a revision more or less, in it or
			// after it) may start elsewhere, and its old starts, trusted,
			// would refuse the pins that lead to the db, and the world
			// would be taken for refuted. Worked out again without them
			// (each time one fewer: it ends).
			stale := p.staleStarts(allowed, sigs)
			if len(stale) == 0 {
				break
			}
			allowed = maps.Clone(allowed)
			for _, e := range stale {
				delete(allowed, e)
			}
		}
		if p.fail != "" {
			return p, 0
		}
		if wrong := p.wrongPins(); len(wrong) > 0 {
			p.failf("entry %d names a revision at or below one a compare took as a key's state before the log (a stale compare)", p.entries[wrong[0]].index)
			return p, 0
		}
		F, bad := p.anchor(x, dbRev, true)
		if bad >= 0 {
			// A compare pinned a segment where the db allows it no start
			// (a stale compare): work it out again with what the db
			// allows, so that the compare is evaluated, not trusted.
			var dbBad int
			if F, dbBad = p.anchor(x, dbRev, false); dbBad >= 0 {
				p.failf("%s", p.misfit(bad, dbRev))
				return p, 1
			}
			next := p.allowedBy(F)
			if sameStarts(next, allowed) || pass == maxAnchorPasses-1 {
				p.failf("%s", p.misfit(bad, dbRev))
				return p, 1
			}
			allowed, sigs = next, p.segSigs()
			continue
		}
		next := p.allowedBy(F)
		if sameStarts(next, allowed) || pass == maxAnchorPasses-1 {
			p.settle(F)
			break
		}
		allowed, sigs = next, p.segSigs()
	}
	if p.fail != "" {
		return p, 1
	}
	p.checkValues()
	if p.fail == "" {
		p.checkPreStates()
	}
	if p.fail == "" {
		p.checkRefs()
	}
	if p.fail != "" {
		return p, 2
	}
	p.markAmbiguous()
	p.verify(ctx, db)
	return p, 2
}

// wrongPins returns the entries whose compares pinned a segment at a
// revision no write of the log can have made: at or below one known to
// be from before the log (maxPreMod).
func (p *pxSolver) wrongPins() []int32 {
	var out []int32
	for _, pn := range p.pins {
		if pn.want <= p.maxPreMod {
			out = append(out, pn.entry)
		}
	}
	return out
}

// allowedBy keys the possible starts F by the entries that start the
// segments (see pxSolver.allowed).
func (p *pxSolver) allowedBy(F [][]int64) map[int32][]int64 {
	m := make(map[int32][]int64, len(F))
	for j, f := range F {
		m[p.segs[j].revoke] = f
	}
	return m
}

// pxSegSig is what the starts the db allows a segment (see anchor)
// follow from: its span (startRel, end] and the writes it made there.
type pxSegSig struct {
	start, end int64
	writes     uint64 // a hash of the applied writes' revisions, keys, kinds and values
}

// segSigs keys the segments' signatures by the entries that start them,
// as allowedBy keys their starts.
func (p *pxSolver) segSigs() map[int32]pxSegSig {
	m := make(map[int32]pxSegSig, len(p.segs))
	h := make([]uint64, len(p.segs))
	for i := range p.writes {
		if w := &p.writes[i]; w.applied && w.rel > 0 {
			j := p.seg(w.rel)
			del := uint64(0)
			if w.del {
				del = 1
			}
			h[j] = (h[j]^uint64(w.rel)<<40^uint64(w.key)<<1^del^w.hash)*0x100000001b3 + 0x9e3779b97f4a7c15
		}
	}
	for j := range p.segs {
		s, e := p.segSpan(j)
		m[p.segs[j].revoke] = pxSegSig{start: s, end: e, writes: h[j]}
	}
	return m
}

// staleStarts returns the entries whose segments' allowed starts (worked
// out for the segments sigs describes) may no longer hold, or none. A
// segment's starts follow from its own writes and from its neighbours'
// (the count back from the db's revision runs through every segment after
// it, the count on from the log's start through every one before): when
// this run gave any segment other writes, every segment's are stale.
func (p *pxSolver) staleStarts(allowed map[int32][]int64, sigs map[int32]pxSegSig) []int32 {
	if len(allowed) == 0 {
		return nil
	}
	now := p.segSigs()
	same := len(now) == len(sigs)
	for e, sig := range now {
		if old, ok := sigs[e]; !ok || old != sig {
			same = false
			break
		}
	}
	if same {
		return nil
	}
	return slices.Sorted(maps.Keys(allowed))
}

func sameStarts(a, b map[int32][]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !slices.Equal(v, w) {
			return false
		}
	}
	return true
}

// WALStretch is a run of the log's entries whose revisions are not
// established, and why.
type WALStretch struct {
	FromIndex, ToIndex uint64
	Reason             string
}

// stretchWhy says why segment j's revisions are not established.
func (p *pxSolver) stretchWhy(j int) string {
	var around []string
	one, many := "a delete of a key", "deletes of keys"
	for _, k := range []int{j, j + 1} {
		if k > 0 && k < len(p.segs) {
			e := &p.entries[p.segs[k].revoke]
			around = append(around, strconv.FormatUint(e.index, 10))
			if e.ranged {
				one, many = "a delete of a key or of a range", "deletes of keys or of ranges"
			}
		}
	}
	what := "entry " + strings.Join(around, " and entry ") + " (a revoke of a lease, or " + one + ", from before the log) may or may not have made a revision"
	if len(around) == 2 {
		what = "entries " + strings.Join(around, " and ") + " (revokes of leases, or " + many + ", from before the log) may or may not each have made a revision"
	}
	return fmt.Sprintf("%s, and neither a compare nor the db fixes which: revisions %d to %d fit", what, p.segs[j].lo+1, p.segs[j].hi+p.segLen(j))
}

// segLen is the number of revisions segment j's writes made.
func (p *pxSolver) segLen(j int) int64 {
	s, e := p.segSpan(j)
	return e - s
}

// verdict sums up a solved prefix.
func (p *pxSolver) verdict() prefixVerdict {
	v := prefixVerdict{floor: p.xMax()}
	if p.segs[0].pinned && p.xWhy == "" {
		v.before = p.segs[0].base
	}
	v.unknown = p.vagueStretches()
	first := int32(0)
	for j := range p.segs {
		last := int32(len(p.entries) - 1)
		if j+1 < len(p.segs) {
			last = p.segs[j+1].revoke - 1
		}
		if !p.segs[j].pinned && p.segLen(j) > 0 && last >= first {
			v.unknown = append(v.unknown, WALStretch{FromIndex: p.entries[first].index, ToIndex: p.entries[last].index, Reason: p.stretchWhy(j)})
		}
		first = last + 1
	}
	slices.SortStableFunc(v.unknown, func(a, b WALStretch) int { return cmp.Compare(a.FromIndex, b.FromIndex) })
	return v
}

// replay turns a solved prefix into replay records.
func (p *pxSolver) replay() *replay {
	rp := newReplay(nil)
	rp.sizeKeys(len(p.names.names))
	rp.all = make([]walWrite, 0, len(p.writes))
	rp.entries = make([]walEntry, 0, len(p.entries))
	wi := 0
	for i, pe := range p.entries {
		o := p.out[i]
		we := WALEntry{Index: pe.index, Term: pe.term, Kind: pe.kind, Other: pe.other, pos: pe.pos, Outcome: o.outcome, Reason: o.reason}
		// unsure: a range delete whose deletes are not all established;
		// tombs: the keys it deleted that the log does not know existed.
		unsure := false
		var tombs map[int32]bool
		switch {
		case pe.ranged:
			tombs, unsure = p.rangeReplay(int32(i), wi, &we)
		case o.ambiguous != "":
			we.Outcome, we.Reason = OutcomeUnknown, o.ambiguous
		case o.rel != 0 && o.vague != "":
			we.Reason = "applied; its revision is not established: " + o.vague
		case o.rel != 0:
			if a, ok := p.relAbsOK(o.rel); ok {
				we.Revision = a
			} else {
				we.Reason = "applied; its revision is not established: " + p.stretchWhy(p.seg(o.rel))
			}
		case o.seg != 0:
			rev, ok := p.revokeRev(o.seg)
			ok = ok && o.vague == ""
			switch {
			case ok && rev != 0:
				we.Revision = rev
			case ok && pe.kind == walread.KindLeaseRevoke:
				// A revoke that deleted nothing: of a lease whose keys were
				// gone, or of one revoked already before the log.
				we.Outcome, we.Reason = OutcomeUnknown, "it made no revision: the lease had no key left, or was revoked already before the log (lease not found); the log does not tell which"
			case ok:
			case pe.kind == walread.KindLeaseRevoke:
				we.Outcome, we.Reason = OutcomeUnknown, "whether the lease still existed, and so whether it deleted keys attached to it before the log (and made a revision), is not established"
			default:
				we.Outcome, we.Reason = OutcomeUnknown, "whether the key existed, and so was deleted, is not established: no compare or revision of the db fixes it"
			}
		}
		rp.counts[pe.kind.String()]++
		idx := int32(len(rp.entries))
		for ; wi < len(p.writes) && p.writes[wi].entry == int32(i); wi++ {
			pw := p.writes[wi]
			mod, placed := p.relAbsOK(pw.rel)
			if pw.maybe && !unsure {
				if !tombs[pw.key] {
					// The key did not exist: nothing deleted.
					continue
				}
				pw.applied = true
				mod, placed = p.rangeRev(int32(i))
			}
			if unsure {
				// Listed, with the entry's outcome unknown.
				rp.newWrite(rp.keyString(p.name(pw.key)), idx, op{path: opPath(pw.path, pw.inTxn)}, pw.del)
				continue
			}
			if pw.lo != 0 {
				placed = false
			}
			if pw.seg != 0 {
				rev, ok := p.revokeRev(pw.seg)
				ok = ok && o.vague == ""
				if ok && rev == 0 {
					// The key did not exist: nothing deleted.
					we.Reason = "the key did not exist: nothing deleted"
					continue
				}
				mod, placed = rev, ok
				if !ok {
					// Whether it deleted the key is not known: listed,
					// with the entry's outcome unknown.
					rp.newWrite(rp.keyString(p.name(pw.key)), idx, op{path: opPath(pw.path, pw.inTxn)}, pw.del)
					continue
				}
			}
			s := rp.keyString(p.name(pw.key))
			id := rp.newWrite(s, idx, op{path: opPath(pw.path, pw.inTxn)}, pw.del)
			if !pw.applied || o.ambiguous != "" {
				continue
			}
			x := &rp.all[id]
			if !pw.del {
				switch {
				case pw.vague:
				case pw.createRel:
					x.create = p.relAbs(pw.create)
				case pw.createKnown:
					x.create = pw.create
				}
				if pw.verKnown && !pw.vague {
					x.version = pw.version
				}
				x.lease = pw.lease
			}
			s.last = id
			if !placed {
				// Applied, after the key's writes before it and before
				// its writes after it; where among the revisions is not
				// established.
				if pw.lo != 0 {
					rp.unplaced[id] = [2]int64{pw.lo, pw.hi}
					continue
				}
				j := p.seg(pw.rel)
				start, _ := p.segSpan(j)
				rp.unplaced[id] = [2]int64{p.segs[j].lo + pw.rel - start, p.segs[j].hi + pw.rel - start}
				continue
			}
			x.mod = mod
			rp.applied = append(rp.applied, id)
		}
		rp.push(we)
	}
	return rp
}

// rangeRev returns the revision range delete idx made (0: none), and
// whether that is established.
func (p *pxSolver) rangeRev(idx int32) (int64, bool) {
	switch o := p.out[idx]; {
	case o.rel != 0:
		return p.relAbsOK(o.rel)
	case o.seg != 0:
		return p.revokeRev(o.seg)
	}
	return 0, true // it deleted nothing: an empty range, or a log from raft index 1
}

// rangeTombs returns the keys the log names that range delete idx
// deleted, of those whose existence there the log does not tell
// (pxWrite.maybe), and whether that is established: not when the entry's
// revision is not, or when the db compacted it (its tombstones are gone);
// else the db holds every tombstone that revision made (none: it made
// none).
func (p *pxSolver) rangeTombs(idx int32) (map[int32]bool, bool) {
	rev, ok := p.rangeRev(idx)
	switch {
	case !ok:
		return nil, false
	case rev == 0:
		return nil, true
	case !p.db.held(rev):
		return nil, false
	}
	tombs := map[int32]bool{}
	for _, it := range p.db.at(rev) {
		if it.tomb && it.key >= 0 {
			tombs[it.key] = true
		}
	}
	return tombs, true
}

// rangeReplay sets range delete idx's outcome, revision and reason in we;
// its writes are p.writes from first on. It returns the keys it deleted
// that the log does not know existed (rangeTombs), and whether which keys
// it deleted is not established (its writes are then listed with the
// outcome unknown).
func (p *pxSolver) rangeReplay(idx int32, first int, we *WALEntry) (map[int32]bool, bool) {
	// A world a challenge found in which it deleted other keys, or made
	// another revision or none: what it deleted is not established (its
	// writes listed, with its outcome unknown).
	switch o := p.out[idx]; {
	case o.ambiguous != "":
		we.Outcome, we.Reason = OutcomeUnknown, o.ambiguous
		return nil, true
	case o.vague != "":
		we.Outcome, we.Reason = OutcomeUnknown, "a range delete: which keys it deleted, and whether it made a revision, is not established: "+o.vague
		return nil, true
	case o.keysVague != "":
		what := "its revision is not established"
		if rev, ok := p.rangeRev(idx); ok && rev != 0 {
			what = fmt.Sprintf("it applied at revision %d", rev)
		}
		we.Outcome, we.Reason = OutcomeUnknown, fmt.Sprintf("a range delete: which keys it deleted is not established (%s): %s", what, o.keysVague)
		return nil, true
	}
	tombs, known := p.rangeTombs(idx)
	var unsure []string
	for i := first; !known && i < len(p.writes) && p.writes[i].entry == idx; i++ {
		if w := &p.writes[i]; w.maybe {
			unsure = append(unsure, p.name(w.key))
		}
	}
	rev, ok := p.rangeRev(idx)
	o, pe := p.out[idx], &p.entries[idx]
	switch {
	case len(unsure) > 0:
		what := "its revision is not established"
		switch {
		case ok && rev != 0:
			what = fmt.Sprintf("it applied at revision %d, which the db compacted", rev)
		case ok:
			what = "it made no revision"
		}
		we.Outcome, we.Reason = OutcomeUnknown, fmt.Sprintf("a range delete: which keys it deleted is not established (%s): the log does not tell whether %s existed then", what, strings.Join(unsure, " or "))
	case ok && rev != 0:
		we.Revision = rev
	case ok && pe.end != "\x00" && pe.end <= pe.from:
		we.Reason = "its range is empty: nothing deleted"
	case ok:
		we.Reason = "no key of its range existed: nothing deleted"
	case o.rel != 0:
		we.Reason = "applied; its revision is not established: " + p.stretchWhy(p.seg(o.rel))
	default:
		we.Outcome, we.Reason = OutcomeUnknown, "whether a key of its range existed, and so whether it deleted keys (and made a revision), is not established: no compare or revision of the db fixes it"
	}
	return tombs, len(unsure) > 0
}

// unresolvedPrefix lists the prefix's entries with an unknown outcome, and
// what each would have written, for the keys' stories.
func unresolvedPrefix(entries []pxEntry, keys *pxKeys, why string) *replay {
	rp := newReplay(nil)
	reason := "in the db; its outcome is not established: " + why
	var sorted []string // the keys' names, sorted, for range deletes
	for _, pe := range entries {
		we := WALEntry{Index: pe.index, Term: pe.term, Kind: pe.kind, Other: pe.other, pos: pe.pos, Outcome: OutcomeUnknown, Reason: reason}
		rp.counts[pe.kind.String()]++
		switch pe.kind {
		case walread.KindPut, walread.KindDeleteRange, walread.KindTxn, walread.KindLeaseGrant, walread.KindLeaseRevoke, walread.KindCompaction:
		default:
			we.Outcome, we.Reason = OutcomeSkipped, ""
		}
		idx := int32(len(rp.entries))
		for _, ops := range [][]pxOp{pe.succ, pe.fail} {
			for _, o := range ops {
				rp.newWrite(rp.keyString(keys.names[o.key]), idx, op{path: opPath(o.path, o.inTxn)}, o.del)
			}
		}
		if pe.ranged {
			// Every key of its range the log names, in key order.
			if sorted == nil {
				sorted = slices.Clone(keys.names)
				slices.Sort(sorted)
			}
			i, _ := slices.BinarySearch(sorted, pe.from)
			for ; i < len(sorted) && pe.inRange(sorted[i]); i++ {
				rp.newWrite(rp.keyString(sorted[i]), idx, op{}, true)
			}
		}
		rp.push(we)
	}
	return rp
}

// prepend puts p's entries and writes (the log's entries before r's) in
// front of r's. r keeps its key states (the db's, then its own writes).
func (r *replay) prepend(p *replay) {
	ne, nw, nn := int32(len(p.entries)), int32(len(p.all)), int32(len(p.notes))
	for i := range r.entries {
		if r.entries[i].note >= 0 {
			r.entries[i].note += nn
		}
	}
	r.entries = append(p.entries, r.entries...)
	r.notes = append(p.notes, r.notes...)

	// Key ids: r's keep theirs (every key of the db, which are not walked
	// here), p's are mapped to them, and p's keys r does not know added.
	// Writes: p's keep their numbers, r's follow them.
	for i := range r.all {
		x := &r.all[i]
		x.entry += ne
		if x.valueFrom >= 0 {
			x.valueFrom += nw
		}
	}
	shifted := make(map[int32]bool)
	for i := range r.all {
		id := r.all[i].key
		if shifted[id] {
			continue
		}
		shifted[id] = true
		s := r.keys[r.keyNames[id]]
		for j := range s.writes {
			s.writes[j] += nw
		}
		if s.last >= 0 {
			s.last += nw
		}
	}
	remap := make([]int32, len(p.keyNames))
	for i, k := range p.keyNames {
		ps := p.keys[k]
		if s := r.keys[k]; s != nil {
			remap[i] = s.id
			s.writes = append(append([]int32(nil), ps.writes...), s.writes...)
			continue
		}
		// Not in the db and not written after it: absent.
		remap[i] = int32(len(r.keyNames))
		r.keyNames = append(r.keyNames, k)
		r.keys[k] = &keyState{id: remap[i], last: -1, writes: ps.writes}
	}
	for i := range p.all {
		p.all[i].key = remap[p.all[i].key]
	}
	deep := p.deepPaths
	for id, path := range r.deepPaths {
		deep[id+nw] = path
	}
	r.deepPaths = deep
	r.all = append(p.all, r.all...)
	applied := make([]int32, 0, len(p.applied)+len(r.applied))
	applied = append(applied, p.applied...)
	for _, id := range r.applied {
		applied = append(applied, id+nw)
	}
	r.applied = applied
	// p's writes keep their numbers: they come first.
	for id, span := range p.unplaced {
		r.unplaced[id] = span
	}
	for k, n := range p.counts {
		r.counts[k] += n
	}
}
