package wal

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"slices"

	"github.com/etcdpvc/etcdpvc/walread"
)

// The kinds of a put's version in a world (xKey.verKind).
const (
	verAbs  uint8 = iota // verN
	verPre               // the key's version before the log + verN
	verCond              // as verPre if the key existed before the log, else verN
)

// crCond: the create revision of a put of a key whose existence before the
// log was not known (and that no revoke may have deleted): the key's
// create revision before the log if it existed, else X+crV.
const crCond uint8 = 2

// step works out entry e in the current world: the entry itself, then the
// keys it touches last (finalize). It returns the alternatives of a fact
// it needs first, or false when the world is not consistent.
func (s *worlds) step(e int32) ([][]xFact, bool) {
	if s.scratch.phase == 0 {
		if !s.xBounds(e) {
			return nil, false
		}
		alts, ok := s.entry(e)
		if !ok || alts != nil {
			return alts, ok
		}
		// What settle fixed holds in every world.
		if st := s.settled; st != nil && st.made[e] >= 0 {
			r := s.erecs[e]
			if (r.revC > 0) != (st.made[e] == 1) {
				return nil, s.fail("entry %d: made a revision %v, where the counting says %v", s.entries[e].index, r.revC > 0, st.made[e] == 1)
			}
			if st.rev[e] != 0 && !s.restrictX(rEq, st.rev[e]-r.revC) {
				return nil, false
			}
		}
		s.scratch.phase = 1
	}
	keys := s.finKeys[s.finOff[e]:s.finOff[e+1]]
	for int(s.scratch.phase-1) < len(keys) {
		k := keys[s.scratch.phase-1]
		alts, ok := s.finalize(k)
		if !ok || alts != nil {
			return alts, ok
		}
		// What this world says of the key before the log; and the key
		// is no longer part of the state the rest of the log reads.
		s.recs = append(s.recs, xRec{entry: e, key: k, op: opPre, applied: s.keys[k].preExists})
		s.dirtyK = append(s.dirtyK, k)
		s.scratch.phase++
	}
	return nil, true
}

func (s *worlds) entry(e int32) ([][]xFact, bool) {
	pe := &s.entries[e]
	if pe.ranged {
		return s.rangeDelete(e)
	}
	switch pe.kind {
	case walread.KindPut, walread.KindDeleteRange:
		return s.write(e, false)
	case walread.KindTxn:
		return s.write(e, true)
	case walread.KindLeaseGrant:
		return s.grant(e)
	case walread.KindLeaseRevoke:
		return s.revoke(e)
	case walread.KindCompaction:
		return s.compaction(e)
	}
	s.done(e, xERec{outcome: OutcomeSkipped})
	return nil, true
}

// done records what entry e did in this world.
func (s *worlds) done(e int32, r xERec) {
	s.erecs[e] = r
	s.g.made = e + 1
}

// cmpRel is a compare's result as a relation on the compared number.
func cmpRel(res pb.Compare_CompareResult, v int64) (uint8, int64) {
	switch res {
	case pb.Compare_NOT_EQUAL:
		return rNe, v
	case pb.Compare_GREATER:
		return rGe, v + 1
	case pb.Compare_LESS:
		return rLe, v - 1
	}
	return rEq, v
}

// compare evaluates c now: 1 holds, 0 fails (-1 with alternatives: a fact
// is needed first; false: no world).
func (s *worlds) compare(c pxCmp) (int8, [][]xFact, bool) {
	k := c.key
	// A compare with 0 (a create's) holds where the key is absent.
	ex, alts := s.exists(k, c.value == 0 && c.result == pb.Compare_EQUAL && c.target != pb.Compare_VALUE && c.target != pb.Compare_LEASE)
	if alts != nil {
		return -1, alts, true
	}
	key := &s.keys[k]
	rel, v := cmpRel(c.result, c.value)
	var (
		a        int64
		sym      *xSym
		sel      uint8
		off      int64
		concrete = true
	)
	symOf := func(which uint8) {
		sel, concrete, sym = which, false, s.preOf(k).sym(which)
	}
	switch c.target {
	case pb.Compare_MOD:
		switch {
		case ex == 0:
		case key.st == xsPresent:
			sym, sel, off, concrete = &s.g.x, selX, key.modC, false
		default:
			symOf(selMod)
		}
	case pb.Compare_VERSION:
		switch {
		case ex == 0:
		case key.st == xsPresent:
			kind := key.verKind
			if kind == verCond {
				if alts := s.preExistsAlts(k); alts != nil {
					return -1, alts, true
				}
				kind = verAbs
				if key.preExists == 1 {
					kind = verPre
				}
			}
			a = key.verN
			if kind == verPre {
				symOf(selVer)
				off = key.verN
			}
		default:
			symOf(selVer)
		}
	case pb.Compare_CREATE:
		switch {
		case ex == 0:
		case key.st == xsPresent:
			kind := key.crKind
			if kind == crCond {
				if alts := s.preExistsAlts(k); alts != nil {
					return -1, alts, true
				}
				kind = crRel
				if key.preExists == 1 {
					kind = crPre
				}
			}
			if kind == crRel {
				sym, sel, off, concrete = &s.g.x, selX, key.crV, false
			} else {
				symOf(selCreate)
			}
		default:
			symOf(selCreate)
		}
	case pb.Compare_LEASE:
		switch {
		case ex == 0:
		case key.st == xsPresent:
			a = key.lease
		default:
			symOf(selLease)
		}
	case pb.Compare_VALUE:
		switch {
		case ex == 0:
			// etcd: a value compare on a missing key fails.
			return 0, nil, true
		case key.st == xsPresent:
			a = int64(key.hash)
		default:
			symOf(selVal)
		}
	}
	var res int8
	if concrete {
		res = b2i(relHolds(rel, a, v))
	} else {
		res = s.symHolds(sym, rel, v-off)
		if res == -1 {
			nrel, nv := negRel(rel, v-off)
			return -1, [][]xFact{{{sel: sel, rel: rel, k: k, v: v - off}}, {{sel: sel, rel: nrel, k: k, v: nv}}}, true
		}
	}
	if c.target == pb.Compare_MOD && c.result == pb.Compare_EQUAL && c.value > 0 {
		// The writer read revision value: made at or before this entry.
		if !s.restrictX(rGe, c.value-s.g.c) {
			return -1, nil, false
		}
		if res == 0 {
			alts, ok := s.readBefore(k, c.value)
			if !ok || alts != nil {
				return -1, alts, ok
			}
		}
	}
	return res, nil, true
}

// preExistsAlts asks whether key k existed before the log, when that is
// not known.
func (s *worlds) preExistsAlts(k int32) [][]xFact {
	if s.keys[k].preExists != -1 {
		return nil
	}
	return [][]xFact{{{sel: selExists, k: k, v: 1}}, {{sel: selExists, k: k, v: 0}}}
}

// readBefore holds a failed compare of key k's mod revision with r
// against what its writer can have read: k was put at revision r before
// the log (r ≤ X), or by a put of the log that applied.
func (s *worlds) readBefore(k int32, r int64) ([][]xFact, bool) {
	if s.g.x.pinned {
		x := s.g.x.v
		if r <= x {
			return nil, s.preLogRevision(k, r)
		}
		for i := s.keys[k].puts; i != xNone; i = s.puts[i].next {
			if x+s.puts[i].v == r {
				return nil, true
			}
		}
		return nil, s.fail("%s: a compare names revision %d, which no put of it made", s.names.names[k], r)
	}
	if r <= s.g.x.lo {
		s.deferred = append(s.deferred, xDeferred{key: k, r: r})
		return nil, true
	}
	alts := [][]xFact{{{sel: selX, rel: rGe, v: r}}}
	for i := s.keys[k].puts; i != xNone; i = s.puts[i].next {
		alts = append(alts, []xFact{{sel: selX, rel: rEq, v: r - s.puts[i].v}})
	}
	return alts, true
}

// write works out a put, a delete of one key, or a transaction.
func (s *worlds) write(e int32, txn bool) ([][]xFact, bool) {
	pe := &s.entries[e]
	succ := true
	if txn {
		for _, c := range pe.cmps {
			r, alts, ok := s.compare(c)
			if !ok || alts != nil {
				return alts, ok
			}
			if r == 0 {
				succ = false
				break
			}
		}
	}
	ops := pe.succ
	if !succ {
		ops = pe.fail
	}
	// etcd checks the leases of the branch's puts before it applies any.
	for _, op := range ops {
		if op.del || op.lease == 0 {
			continue
		}
		li := s.leaseIx[op.lease]
		switch s.leases[li].st {
		case -1:
			return [][]xFact{{{sel: selLeaseExists, k: li, v: 1}}, {{sel: selLeaseExists, k: li, v: 0}}}, true
		case 0:
			return nil, s.notApplied(e, whyLease)
		}
	}
	for _, op := range ops {
		key := &s.keys[op.key]
		if key.st != xsPre {
			continue
		}
		// A delete needs to know whether the key is there; a put only
		// where a revoke may have deleted it (else its create revision
		// and version are worked out once the db is reached: crCond).
		if op.del || key.preExists == 1 || len(s.pending(op.key)) > 0 {
			if _, alts := s.exists(op.key, false); alts != nil {
				return alts, true
			}
		}
	}
	if !succ && len(ops) == 0 {
		return nil, s.notApplied(e, whyCompare)
	}
	rho := s.g.c + 1
	changed := false
	first := len(s.recs)
	for i, op := range ops {
		oi := s.opIndex(e, i, !succ)
		if op.del {
			ex, _ := s.exists(op.key, false)
			if ex == 1 {
				key := s.trailKey(op.key)
				key.st, key.residual = xsAbsent, 0
				s.recs = append(s.recs, xRec{entry: e, key: op.key, op: oi, applied: 1, del: true, modC: rho})
				changed = true
			} else {
				s.recs = append(s.recs, xRec{entry: e, key: op.key, op: oi, del: true})
			}
			continue
		}
		s.recs = append(s.recs, s.put(e, op, oi, rho))
		changed = true
	}
	// The other branch's writes: not applied.
	other, otherFail := pe.fail, true
	if !succ {
		other, otherFail = pe.succ, false
	}
	for i, op := range other {
		oi := s.opIndex(e, i, otherFail)
		if s.anchors[oi] != 0 {
			return nil, s.fail("entry %d: the db holds the value of a put of its other branch", pe.index)
		}
		if !s.notPut(op, oi) {
			return nil, false
		}
		s.recs = append(s.recs, xRec{entry: e, key: op.key, op: oi, del: op.del})
	}
	r := xERec{outcome: OutcomeApplied}
	if !succ {
		// A failure branch that writes (not kube-apiserver's) applies
		// as well; its entry is applied.
		r.why = whyCompare
	}
	if changed {
		s.g.c, r.revC = rho, rho
		if !s.restrictX(rLe, s.dbRev-rho) {
			return nil, false
		}
	}
	s.done(e, r)
	for i, op := range ops {
		if op.del {
			continue
		}
		if R := s.anchors[s.opIndex(e, i, !succ)]; R != 0 && !s.restrictX(rEq, R-rho) {
			return nil, s.fail("entry %d: the db holds its put of %s at revision %d", pe.index, s.names.names[op.key], R)
		}
	}
	if changed && s.g.x.pinned && s.held(s.g.x.v+rho) {
		return nil, s.checkWrites(e, s.recs[first:], rho)
	}
	return nil, true
}

// put applies a put of the current entry at revision X+rho and returns
// its record.
func (s *worlds) put(e int32, op pxOp, oi int32, rho int64) xRec {
	key := s.trailKey(op.key)
	rec := xRec{entry: e, key: op.key, op: oi, applied: 1, modC: rho, hash: op.hash}
	switch key.st {
	case xsPresent:
		rec.crKind, rec.crV, rec.verKind, rec.verN = key.crKind, key.crV, key.verKind, key.verN+1
	case xsAbsent:
		rec.crKind, rec.crV, rec.verKind, rec.verN = crRel, rho, verAbs, 1
	default:
		switch key.preExists {
		case 1: // and no revoke may have deleted it (see write)
			rec.crKind, rec.verKind, rec.verN = crPre, verPre, 1
		case 0:
			rec.crKind, rec.crV, rec.verKind, rec.verN = crRel, rho, verAbs, 1
		default:
			rec.crKind, rec.crV, rec.verKind, rec.verN = crCond, rho, verCond, 1
		}
	}
	key.st, key.modC, key.crKind, key.crV, key.verKind, key.verN = xsPresent, rho, rec.crKind, rec.crV, rec.verKind, rec.verN
	key.lease, key.hash, key.residual = op.lease, op.hash, 0
	s.puts = append(s.puts, xNode{v: rho, next: key.puts})
	key.puts = int32(len(s.puts) - 1)
	key.putsH = mix64(key.putsH, uint64(rho))
	if op.lease != 0 {
		l := s.trailLease(s.leaseIx[op.lease])
		s.att = append(s.att, xNode{v: int64(op.key), next: l.att})
		l.att = int32(len(s.att) - 1)
		l.attH = mix64(l.attH, uint64(op.key))
	}
	return rec
}

// notApplied records entry e as not applied (why), none of its writes
// made; a put the db holds the value of cannot then be explained.
func (s *worlds) notApplied(e int32, why uint8) bool {
	pe := &s.entries[e]
	for b, ops := range [][]pxOp{pe.succ, pe.fail} {
		for i, op := range ops {
			oi := s.opIndex(e, i, b == 1)
			if s.anchors[oi] != 0 {
				return s.fail("entry %d: not applied, yet the db holds the value of its put of %s", pe.index, s.names.names[op.key])
			}
			if !s.notPut(op, oi) {
				return false
			}
			s.recs = append(s.recs, xRec{entry: e, key: op.key, op: oi, del: op.del})
		}
	}
	s.done(e, xERec{outcome: OutcomeNotApplied, why: why})
	return true
}

// notPut takes op (a put) not to have applied: with no put of its key
// applied by the log so far, the compares of the key up to its next put
// name revisions from before the log (see lookAhead).
func (s *worlds) notPut(op pxOp, oi int32) bool {
	if op.del || s.keys[op.key].puts != xNone || s.lookR[oi] == 0 {
		return true
	}
	return s.restrictX(rGe, s.lookR[oi])
}

// checkWrites holds the writes recs an entry made at revision X+rho
// against the db's items there (X known, the revision held): the same
// keys, puts and tombstones, and values.
func (s *worlds) checkWrites(e int32, recs []xRec, rho int64) bool {
	rev := s.g.x.v + rho
	items := s.db.at(rev)
	n := 0
	for _, r := range recs {
		if r.applied != 1 || r.entry != e {
			continue
		}
		n++
		found := false
		for _, it := range items {
			if it.key == r.key && it.tomb == r.del && (r.del || it.hash == r.hash) {
				found = true
				break
			}
		}
		if !found {
			return s.fail("entry %d: the db's revision %d does not hold its write of %s", s.entries[e].index, rev, s.names.names[r.key])
		}
	}
	if n != len(items) {
		return s.fail("entry %d: the db's revision %d holds %d items, the entry wrote %d", s.entries[e].index, rev, len(items), n)
	}
	return true
}

// grant works out a lease grant.
func (s *worlds) grant(e int32) ([][]xFact, bool) {
	li := s.leaseIx[s.entries[e].id]
	// A lease the log has not used yet did not exist: etcd gives a grant
	// an id of its own that no lease has (a request naming an id that
	// exists is refused, and no client names one).
	if s.leases[li].st == 1 {
		return nil, s.notApplied(e, whyLeaseExists)
	}
	l := s.trailLease(li)
	l.st, l.pre, l.att = 1, false, xNone
	s.done(e, xERec{outcome: OutcomeApplied})
	return nil, true
}

// attached lists the keys the log attached to lease li that are there.
func (s *worlds) attached(li int32) []int32 {
	id := s.leases[li].id
	var out []int32
	for i := s.leases[li].att; i != xNone; i = s.att[i].next {
		k := int32(s.att[i].v)
		if key := &s.keys[k]; key.st == xsPresent && key.lease == id {
			dup := false
			for _, o := range out {
				if o == k {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, k)
			}
		}
	}
	return out
}

// revoke works out a lease revoke: it deletes the keys attached to the
// lease, in one revision (none when it deletes nothing). A lease from
// before the log may have had keys attached there, the log's or others:
// whether it made a revision is then a branch, unless a key the log
// attached is there.
func (s *worlds) revoke(e int32) ([][]xFact, bool) {
	id := s.entries[e].id
	li := s.leaseIx[id]
	switch s.leases[li].st {
	case -1:
		if s.scratch.delta != -2 {
			// It existed and deleted keys attached to it before the log;
			// or it made no revision: it was gone already (lease not
			// found), or had no key left. The last two are one branch:
			// they differ in nothing else.
			return [][]xFact{{{sel: selLeaseExists, k: li, v: 1}, {sel: selDelta, v: 1}}, {{sel: selRevokeNone, k: li}}}, true
		}
		l := s.trailLease(li)
		l.st, l.att = 0, xNone
		s.revokeRecords(e, id, nil, 0)
		s.done(e, xERec{outcome: OutcomeUnknown, open: true})
		return nil, true
	case 0:
		s.revokeRecords(e, id, nil, 0)
		return nil, s.notApplied(e, whyLease)
	}
	att := s.attached(li)
	pre := s.leases[li].pre
	delta := int8(0)
	switch {
	case len(att) > 0:
		delta = 1
	case pre && !s.exact:
		if s.scratch.delta == -1 {
			return [][]xFact{{{sel: selDelta, v: 1}}, {{sel: selDelta, v: 0}}}, true
		}
		delta = s.scratch.delta
	}
	rho := s.g.c + 1
	for _, k := range att {
		key := s.trailKey(k)
		key.st, key.residual = xsAbsent, 0
	}
	s.revokeRecords(e, id, att, rho)
	l := s.trailLease(li)
	l.st, l.att = 0, xNone
	r := xERec{outcome: OutcomeApplied}
	if delta == 1 {
		s.g.c, r.revC = rho, rho
		if !s.restrictX(rLe, s.dbRev-rho) {
			return nil, false
		}
	}
	s.done(e, r)
	if delta == 1 && pre {
		s.revokes = append(s.revokes, xRevoke{entry: e, c: rho, lease: id})
		s.g.revH = mix64(mix64(mix64(s.g.revH, uint64(e)), uint64(rho)), uint64(id))
		if s.g.x.pinned && !s.held(s.g.x.v+rho) {
			s.g.firstHeld = int32(len(s.revokes))
		}
	}
	if delta == 1 && s.g.x.pinned && s.held(s.g.x.v+rho) {
		return nil, s.checkRevoke(e, rho, pre)
	}
	return nil, true
}

// revokeRecords records, for each key the log puts with lease id, whether
// revoke e deleted it (those in deleted, at revision X+rho).
func (s *worlds) revokeRecords(e int32, id int64, deleted []int32, rho int64) {
	pre := s.leases[s.leaseIx[id]].pre
	for _, k := range s.putWith[id] {
		r := xRec{entry: e, key: k, op: opDyn, del: true}
		key := &s.keys[k]
		switch {
		case slices.Contains(deleted, k):
			r.applied, r.modC = 1, rho
		case pre && key.st == xsPre && key.preExists != 0 && !key.final && s.leaseFits(k, id):
			// Attached to the lease before the log, it may have been
			// deleted with it.
			r.applied = -1
		}
		s.recs = append(s.recs, r)
	}
}

// checkRevoke holds a revoke's revision X+rho against the db's items
// there (X known, the revision held): only tombstones; every key the log
// attached to the lease that was there; keys the log never names; and,
// for a lease from before the log, keys whose lease the log does not
// know, which it then deleted (now, or at the time X became known: then
// as the branches took them).
func (s *worlds) checkRevoke(e int32, rho int64, pre bool) bool {
	rev := s.g.x.v + rho
	items := s.db.at(rev)
	if len(items) == 0 {
		return s.fail("entry %d: a revoke that deleted keys at revision %d, which the db holds empty", s.entries[e].index, rev)
	}
	gi := int32(-1)
	if pre {
		for i := range s.revokes {
			if s.revokes[i].entry == e {
				gi = int32(i)
			}
		}
	}
	deleted := map[int32]bool{}
	for _, r := range s.recs {
		if r.entry == e && r.del && r.applied == 1 {
			deleted[r.key] = true
		}
	}
	matched := 0
	tomb := map[int32]bool{}
	for _, it := range items {
		if !it.tomb {
			return s.fail("entry %d: the db's revision %d holds a put; the entry is a revoke", s.entries[e].index, rev)
		}
		if it.key < 0 {
			continue
		}
		tomb[it.key] = true
		if deleted[it.key] {
			matched++
			continue
		}
		k := it.key
		key := &s.keys[k]
		switch {
		case gi >= 0 && key.goneTo > 0 && !key.goneSure && key.goneFrom <= gi && gi < key.goneTo:
			// Taken absent since, whether it existed or one of these
			// revokes deleted it: this one did.
			key = s.trailKey(k)
			for j := key.goneFrom; j < key.goneTo; j++ {
				if j != gi {
					s.recs = append(s.recs, xRec{entry: s.revokes[j].entry, key: k, op: opLazy, del: true})
				}
			}
			key.goneFrom, key.goneTo, key.goneSure = gi, gi+1, true
			s.recs = append(s.recs, xRec{entry: e, key: k, op: opLazy, applied: 1, del: true, modC: rho})
			if !s.setPreExists(k, 1) || !s.restrictPre(k, selLease, rEq, s.entries[e].id) {
				return false
			}
		case gi >= 0 && key.st == xsPre && key.preExists != 0 && !key.final && key.confirmed <= gi && s.leaseFits(k, s.entries[e].id):
			// A key whose lease the log does not know, there before the
			// log and since: the revoke deleted it.
			key = s.trailKey(k)
			key.confirmed = gi
			if !s.lazyGone(k, gi) {
				return false
			}
		default:
			return s.fail("entry %d: the db's revision %d deletes %s, which the revoke did not delete", s.entries[e].index, rev, s.names.names[k])
		}
		matched++
	}
	if matched < len(deleted) {
		return s.fail("entry %d: the db's revision %d lacks a deletion the revoke made", s.entries[e].index, rev)
	}
	// Keys taken absent whose deletion this revoke may have been: it was
	// not.
	for _, k := range s.gone {
		if key := &s.keys[k]; gi >= 0 && !tomb[k] && !key.goneSure && key.goneFrom <= gi && gi < key.goneTo {
			s.recs = append(s.recs, xRec{entry: e, key: k, op: opLazy, del: true})
		}
	}
	return true
}

// rangeDelete works out a range delete outside a transaction (etcdctl del
// --prefix): it deletes every key of its range that is there, in one
// revision (none when none is). A key the log never names may have been
// there: whether it made a revision is a branch unless a key the log
// names is certainly there, and which of the keys whose existence is not
// known it deleted is not established unless the db holds its revision.
func (s *worlds) rangeDelete(e int32) ([][]xFact, bool) {
	keys := s.ranged[e]
	sure := false
	for _, k := range keys {
		key := &s.keys[k]
		switch {
		case key.st == xsPresent:
			sure = true
		case key.st == xsPre && key.preExists == 1 && len(s.pending(k)) == 0:
			sure = true
		}
	}
	delta := b2i(sure)
	if !sure && !s.exact {
		if s.scratch.delta == -1 {
			return [][]xFact{{{sel: selDelta, v: 1}}, {{sel: selDelta, v: 0}}}, true
		}
		delta = s.scratch.delta
	}
	pe := &s.entries[e]
	if pe.end != "\x00" && pe.end <= pe.from {
		delta = 0
	}
	rho := s.g.c + 1
	// Where the db holds the revision, its tombstones say which keys
	// whose existence there is not known it deleted.
	var tombs map[int32]bool
	if delta == 1 && s.g.x.pinned && s.held(s.g.x.v+rho) {
		tombs = map[int32]bool{}
		for _, it := range s.db.at(s.g.x.v + rho) {
			if it.tomb && it.key >= 0 {
				tombs[it.key] = true
			}
		}
	}
	for _, k := range keys {
		key := &s.keys[k]
		rec := xRec{entry: e, key: k, op: opDyn, del: true}
		switch {
		case key.st == xsPresent, key.st == xsPre && key.preExists == 1 && len(s.pending(k)) == 0:
			rec.applied, rec.modC = 1, rho
		case key.st == xsAbsent, key.st == xsPre && key.preExists == 0:
		case delta == 0:
			// Nothing deleted: not there.
			if key.preExists == -1 && len(s.pending(k)) == 0 && !s.setPreExists(k, 0) {
				return nil, false
			}
		case tombs != nil && tombs[k]:
			rec.applied, rec.modC = 1, rho
		case tombs != nil:
			// Not there then.
		default:
			rec.applied, rec.modC = -1, rho
		}
		s.recs = append(s.recs, rec)
		pend := key.st == xsPre && key.preExists != 0 && len(s.pending(k)) > 0
		if rec.applied != 1 && pend {
			// A revoke since the log's start may have deleted it
			// before: which of them did, if one did, is not established.
			for _, j := range s.pending(k) {
				s.recs = append(s.recs, xRec{entry: s.revokes[j].entry, key: k, op: opLazy, applied: -1, del: true})
			}
		}
		key = s.trailKey(k)
		if pend && rec.applied != 1 {
			// Absent now, whether this delete or one of those revokes
			// deleted it (or it never existed): as lazyGone takes it, so
			// that the db's tombstone at one of their revisions, once
			// known, is taken for that revoke's.
			key.goneFrom, key.goneTo = key.confirmed, int32(len(s.revokes))
			s.gone = append(s.gone, k)
		}
		key.st, key.residual = xsAbsent, 0
	}
	r := xERec{outcome: OutcomeApplied}
	if delta == 1 {
		s.g.c, r.revC = rho, rho
		if !s.restrictX(rLe, s.dbRev-rho) {
			return nil, false
		}
	} else {
		r.why = whyNothing
	}
	s.done(e, r)
	if delta == 1 && s.g.x.pinned && s.held(s.g.x.v+rho) {
		return nil, s.checkRange(e, rho)
	}
	return nil, true
}

// checkRange holds a range delete's revision X+rho against the db's items
// there (X known, the revision held): only tombstones, every key it
// certainly deleted among them; for each key whose existence was not
// known, whether it deleted it is recorded too (the record made before,
// when it was not known, still leaves the claim open: see recordSegment).
func (s *worlds) checkRange(e int32, rho int64) bool {
	rev := s.g.x.v + rho
	items := s.db.at(rev)
	if len(items) == 0 {
		return s.fail("entry %d: a range delete that deleted keys at revision %d, which the db holds empty", s.entries[e].index, rev)
	}
	tomb := map[int32]bool{}
	for _, it := range items {
		if !it.tomb {
			return s.fail("entry %d: the db's revision %d holds a put; the entry is a range delete", s.entries[e].index, rev)
		}
		if it.key >= 0 {
			tomb[it.key] = true
		}
	}
	// The latest record of each key of the entry decides.
	state := map[int32]int8{}
	for _, r := range s.recs {
		if r.entry == e && r.op == opDyn {
			state[r.key] = r.applied
		}
	}
	for k := range tomb {
		st, ok := state[k]
		if !ok || st == 0 {
			return s.fail("entry %d: the db's revision %d deletes %s, which the range delete did not delete", s.entries[e].index, rev, s.names.names[k])
		}
		if st == -1 {
			s.recs = append(s.recs, xRec{entry: e, key: k, op: opDyn, applied: 1, del: true, modC: rho})
			if key := &s.keys[k]; key.goneTo > 0 && !key.goneSure {
				// The range delete deleted it: no revoke before it
				// need have (see goneOK).
				s.trailKey(k).goneSure = true
			}
		}
	}
	for k, st := range state {
		switch {
		case st == 1 && !tomb[k]:
			return s.fail("entry %d: the db's revision %d lacks its deletion of %s", s.entries[e].index, rev, s.names.names[k])
		case st == -1 && !tomb[k]:
			s.recs = append(s.recs, xRec{entry: e, key: k, op: opDyn, del: true})
		}
	}
	return true
}

// compaction works out a compaction: etcd refuses a revision already
// compacted, or one after the current revision. The compaction revision
// before the log (K0) is not in the log: one at or above r refuses it,
// and nothing else tells the two apart but the db's compaction revision
// at the end (whichever applied, etcd's compaction revision is then the
// higher of K0 and r). So it is no branch: the entry applied exactly when
// K0 < r, established where K0's bounds decide that (see record).
func (s *worlds) compaction(e int32) ([][]xFact, bool) {
	r := s.entries[e].id
	// r > X + c: a future revision.
	switch s.symHolds(&s.g.x, rLe, r-s.g.c-1) {
	case 1:
		return nil, s.notApplied(e, whyFuture)
	case -1:
		return [][]xFact{{{sel: selX, rel: rGe, v: r - s.g.c}}, {{sel: selX, rel: rLe, v: r - s.g.c - 1}}}, true
	}
	if r <= s.g.kLog {
		return nil, s.notApplied(e, whyCompacted)
	}
	s.g.kLog = r
	switch s.symHolds(&s.g.k0, rLe, r-1) {
	case 1:
		s.done(e, xERec{outcome: OutcomeApplied})
	case 0:
		return nil, s.notApplied(e, whyCompacted)
	default:
		s.done(e, xERec{outcome: OutcomeApplied, dep: r})
	}
	return nil, true
}

// finalize holds key k against the db once the log's last entry that can
// change it is worked out: its state must be the db's.
func (s *worlds) finalize(k int32) ([][]xFact, bool) {
	dl := &s.live[k]
	key := &s.keys[k]
	name := s.names.names[k]
	switch key.st {
	case xsAbsent:
		if dl.present {
			return nil, s.fail("%s: the log's writes end with it absent, the db holds it", name)
		}
		return nil, true
	case xsPresent:
		if !dl.present {
			return nil, s.fail("%s: the log's writes end with it present, the db does not hold it", name)
		}
		if key.hash != dl.hash {
			return nil, s.fail("%s: the db's value is not the one the log's last write of it holds", name)
		}
		if key.lease != dl.lease {
			return nil, s.fail("%s: lease %x in the db, %x from the log's writes", name, dl.lease, key.lease)
		}
		if !s.restrictX(rEq, dl.mod-key.modC) {
			return nil, s.fail("%s: its last write in the log cannot be the db's revision %d", name, dl.mod)
		}
		crKind, verKind := key.crKind, key.verKind
		if crKind == crCond || verKind == verCond {
			if key.preExists == -1 {
				if !s.g.x.pinned {
					return s.preExistsAlts(k), true
				}
				// Created by the log exactly when its create revision is
				// the one that put made.
				if !s.setPreExists(k, int8(b2i(s.g.x.v+key.crV != dl.create))) {
					return nil, false
				}
			}
			if crKind == crCond {
				crKind = crRel
				if key.preExists == 1 {
					crKind = crPre
				}
			}
			if verKind == verCond {
				verKind = verAbs
				if key.preExists == 1 {
					verKind = verPre
				}
			}
		}
		switch crKind {
		case crRel:
			if !s.restrictX(rEq, dl.create-key.crV) {
				return nil, s.fail("%s: created at revision %d in the db, not by the log's put", name, dl.create)
			}
		case crPre:
			if !s.restrictPre(k, selCreate, rEq, dl.create) {
				return nil, false
			}
		}
		switch verKind {
		case verAbs:
			if key.verN != dl.version {
				return nil, s.fail("%s: version %d in the db does not follow from the log's writes", name, dl.version)
			}
		case verPre:
			if !s.restrictPre(k, selVer, rEq, dl.version-key.verN) {
				return nil, false
			}
		}
		key = s.trailKey(k)
		key.final = true
		return nil, true
	}
	// As it was before the log.
	if !dl.present {
		if key.preExists != 0 {
			// A revoke of its lease from before the log deleted it, since
			// the last one it is known to have outlived (if it existed:
			// see end).
			key = s.trailKey(k)
			key.residual = 1 + key.confirmed
			s.resid = append(s.resid, k)
		}
		return nil, true
	}
	if !s.setPreExists(k, 1) {
		return nil, false
	}
	for _, f := range []xFact{
		{sel: selMod, rel: rEq, k: k, v: dl.mod}, {sel: selCreate, rel: rEq, k: k, v: dl.create},
		{sel: selVer, rel: rEq, k: k, v: dl.version}, {sel: selLease, rel: rEq, k: k, v: dl.lease},
		{sel: selVal, rel: rEq, k: k, v: int64(dl.hash)},
	} {
		if !s.apply(f) {
			return nil, false
		}
	}
	key = s.trailKey(k)
	key.final = true
	return nil, true
}

// end holds the world against the db once every entry is worked out.
func (s *worlds) end() ([][]xFact, bool) {
	// The db's revision is the last the entries made.
	if !s.restrictX(rEq, s.dbRev-s.g.c) {
		return nil, s.fail("the log's writes do not lead to the db's revision %d", s.dbRev)
	}
	for _, k := range s.gone {
		if !s.goneOK(k) {
			return nil, s.fail("%s: there before the log, then absent, and no revoke that the db does not show can have deleted it", s.names.names[k])
		}
	}
	for _, k := range s.resid {
		key := &s.keys[k]
		if key.st != xsPre || key.residual == 0 {
			continue
		}
		found := false
		for j := key.residual - 1; j < s.pendingEnd(); j++ {
			if s.leaseFits(k, s.revokes[j].lease) {
				found = true
				if key.preExists != 1 {
					break // not listed (see lazyGone)
				}
				// Which of them deleted it is not established.
				s.recs = append(s.recs, xRec{entry: s.revokes[j].entry, key: k, op: opLazy, applied: -1, del: true})
			}
		}
		if !found && key.preExists == 1 {
			return nil, s.fail("%s: there before the log and not deleted by it, the db does not hold it", s.names.names[k])
		}
	}
	for i := range s.leases {
		l := &s.leases[i]
		if l.st == -1 {
			continue
		}
		if in := s.dbLeases[l.id]; in != (l.st == 1) {
			return nil, s.fail("lease %x: the log's entries leave it %v, the db %v", l.id, l.st == 1, in)
		}
	}
	// etcd's compaction revision is the higher of K0 and the log's last
	// (each of which etcd refuses at or below the one before).
	switch {
	case s.g.kLog > s.dbK:
		return nil, s.fail("the log compacts revision %d, the db only %d", s.g.kLog, s.dbK)
	case s.g.kLog == s.dbK:
		if !s.restrict(&s.g.k0, rLe, s.dbK) {
			return nil, s.fail("the compaction revision before the log is above the db's")
		}
	default:
		if !s.restrict(&s.g.k0, rEq, s.dbK) {
			return nil, s.fail("the db is compacted at revision %d, which no compaction of the log made", s.dbK)
		}
	}
	// Compacted before the log: at or below the revision then.
	if s.g.k0.lo > s.g.x.v {
		return nil, s.fail("the db is compacted at revision %d, which no compaction of the log made, after the log's start (revision %d)", s.g.k0.lo, s.g.x.v)
	}
	return nil, true
}

// checkMadeSoFar holds the revisions the entries worked out so far made
// against the db once X is known (see pinned).
func (s *worlds) checkMadeSoFar() bool {
	x := s.g.x.v
	var byEntry map[int32][]xRec
	for e := int32(0); e < s.g.made; e++ {
		r := s.erecs[e]
		if r.revC == 0 || !s.held(x+r.revC) {
			continue
		}
		pe := &s.entries[e]
		switch {
		case pe.ranged:
			if !s.checkRange(e, r.revC) {
				return false
			}
		case pe.kind == walread.KindLeaseRevoke:
			if !s.checkRevoke(e, r.revC, s.leaseWasPre(e)) {
				return false
			}
		default:
			if byEntry == nil {
				byEntry = map[int32][]xRec{}
				for _, rec := range s.recs {
					if rec.applied == 1 && rec.op >= 0 && s.erecs[rec.entry].revC != 0 && s.held(x+s.erecs[rec.entry].revC) {
						byEntry[rec.entry] = append(byEntry[rec.entry], rec)
					}
				}
			}
			if !s.checkWrites(e, byEntry[e], r.revC) {
				return false
			}
		}
	}
	return true
}

// leaseWasPre reports whether revoke e's lease existed before the log in
// this world (its revoke is in s.revokes).
func (s *worlds) leaseWasPre(e int32) bool {
	for _, rv := range s.revokes {
		if rv.entry == e {
			return true
		}
	}
	return false
}
