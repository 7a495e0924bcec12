package store

import (
	"context"

	"github.com/etcdpvc/etcdpvc/walread"
)

// maxPinTries bounds how many times the prefix is worked out again with
// its first compares on a revision of the prefix passed over (a first
// compare that names a stale revision, a conflict, pins the start wrong).
const maxPinTries = 4

// resolvePrefix works out the prefix (the log's entries the db already
// holds; see wal_prefix.go) and returns it as a replay to put before the
// rest: with outcomes and revisions where they are established, else with
// the writes unknown and the reason in the coverage.
func (w *WAL) resolvePrefix(ctx context.Context, entries []pxEntry, keys *pxKeys, exact bool) *replay {
	rp, v := solvePrefix(ctx, entries, keys, exact, w.cov.DBRevision, boltPrefixDB{w.base})
	w.cov.PrefixRevision, w.cov.PrefixUnresolved = v.before, v.unresolved
	return rp
}

// prefixVerdict is what solvePrefix established as a whole: the revision
// before the log (when established), or why nothing is (unresolved).
type prefixVerdict struct {
	before     int64
	unresolved string
}

// solvePrefix works the prefix out over db, whose revision is dbRev.
func solvePrefix(ctx context.Context, entries []pxEntry, keys *pxKeys, exact bool, dbRev int64, db prefixDB) (*replay, prefixVerdict) {
	// The reason given is the one of the try that went furthest (a
	// disagreement with the db says more than a wrong start).
	var why string
	stage := -1
	for try := range maxPinTries {
		p := newPxSolver(entries, keys, exact, try)
		p.run()
		reached := 0
		if p.fail == "" {
			reached = 1
			p.solve(dbRev)
		}
		if p.fail == "" {
			reached = 2
			p.checkRefs()
		}
		if p.fail == "" {
			p.markAmbiguous()
			p.verify(ctx, db)
		}
		if p.fail == "" {
			p.fill()
			return p.replay(), prefixVerdict{before: p.segs[0].base}
		}
		if reached > stage {
			why, stage = p.fail, reached
		}
		if exact || ctx.Err() != nil {
			break
		}
	}
	return unresolvedPrefix(entries, keys, why), prefixVerdict{unresolved: why}
}

// replay turns a solved prefix into replay records.
func (p *pxSolver) replay() *replay {
	rp := newReplay(nil)
	wi := 0
	for i, pe := range p.entries {
		o := p.out[i]
		we := WALEntry{Index: pe.index, Term: pe.term, Kind: pe.kind, Other: pe.other, pos: pe.pos, Outcome: o.outcome, Reason: o.reason}
		switch {
		case o.ambiguous != "":
			we.Outcome, we.Reason = OutcomeUnknown, o.ambiguous
		case o.rel != 0:
			we.Revision = p.relAbs(o.rel)
		case o.seg != 0:
			we.Revision = p.revokeRev(o.seg)
		}
		rp.counts[pe.kind.String()]++
		idx := int32(len(rp.entries))
		for ; wi < len(p.writes) && p.writes[wi].entry == int32(i); wi++ {
			pw := p.writes[wi]
			mod := p.relAbs(pw.rel)
			if pw.seg != 0 {
				if mod = p.revokeRev(pw.seg); mod == 0 {
					// The key did not exist: nothing deleted.
					we.Reason = "the key did not exist: nothing deleted"
					continue
				}
			}
			s := rp.key([]byte(p.name(pw.key)))
			id := rp.newWrite(s, idx, op{path: opPath(pw.path, pw.inTxn)}, pw.del)
			if !pw.applied || o.ambiguous != "" {
				continue
			}
			x := &rp.all[id]
			x.mod = mod
			if !pw.del {
				switch {
				case pw.createRel:
					x.create = p.relAbs(pw.create)
				case pw.createKnown:
					x.create = pw.create
				}
				if pw.verKnown {
					x.version = pw.version
				}
				x.lease = pw.lease
			}
			s.last = id
			rp.applied = append(rp.applied, id)
		}
		rp.push(we)
	}
	return rp
}

// unresolvedPrefix lists the prefix's entries with an unknown outcome, and
// what each would have written, for the keys' stories.
func unresolvedPrefix(entries []pxEntry, keys *pxKeys, why string) *replay {
	rp := newReplay(nil)
	reason := "in the db; its outcome is not established: " + why
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
				rp.newWrite(rp.key([]byte(keys.names[o.key])), idx, op{path: opPath(o.path, o.inTxn)}, o.del)
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

	// Key ids: p's first, then r's others.
	names := append([]string(nil), p.keyNames...)
	remap := make([]int32, len(r.keyNames))
	for i, k := range r.keyNames {
		if ps := p.keys[k]; ps != nil {
			remap[i] = ps.id
			continue
		}
		remap[i] = int32(len(names))
		names = append(names, k)
	}
	for i := range r.all {
		x := &r.all[i]
		x.entry += ne
		x.key = remap[x.key]
		if x.valueFrom >= 0 {
			x.valueFrom += nw
		}
	}
	deep := p.deepPaths
	for id, path := range r.deepPaths {
		deep[id+nw] = path
	}
	r.deepPaths = deep
	r.all = append(p.all, r.all...)
	for k, s := range r.keys {
		for i := range s.writes {
			s.writes[i] += nw
		}
		if s.last >= 0 {
			s.last += nw
		}
		s.id = remap[s.id]
		if ps := p.keys[k]; ps != nil {
			s.writes = append(append([]int32(nil), ps.writes...), s.writes...)
		}
	}
	for k, ps := range p.keys {
		if r.keys[k] == nil {
			// Not in the db and not written after it: absent.
			r.keys[k] = &keyState{id: ps.id, last: -1, writes: ps.writes}
		}
	}
	r.keyNames = names
	applied := make([]int32, 0, len(p.applied)+len(r.applied))
	applied = append(applied, p.applied...)
	for _, id := range r.applied {
		applied = append(applied, id+nw)
	}
	r.applied = applied
	for k, n := range p.counts {
		r.counts[k] += n
	}
}
