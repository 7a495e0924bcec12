package wal

import (
	"context"
	"fmt"

	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// resolvePrefix works out the prefix and returns it as a replay to put
// before the rest. It fails with an error wrapping ErrOtherCluster when
// the db holds writes the entries cannot have made.
func (w *WAL) resolvePrefix(ctx context.Context, entries []pxEntry, keys *pxKeys, exact bool, xr *dbIndexRead) (*replay, error) {
	// The db's values are hashed on another core meanwhile.
	db := boltPrefixDB{b: w.base, states: w.baseStates, ids: stateIDs(w.baseStates, keys)}
	var stop func()
	db.hashes, stop = readHashes(ctx, w.base, db.states, db.ids)
	defer stop()
	rp, v := solvePrefixRead(ctx, entries, keys, exact, w.cov.DBRevision, db, xr)
	if err := ctx.Err(); err != nil {
		// Interrupted: the reads of the db stopped, and so does this.
		return nil, fmt.Errorf("work out the entries before the db's revision: %w", err)
	}
	if v.foreign != "" {
		return nil, fmt.Errorf("%w: %s: %s", ErrOtherCluster, w.base.Path(), v.foreign)
	}
	w.cov.PrefixRevision, w.cov.PrefixUnresolved, w.cov.PrefixUnknown = v.before, v.unresolved, v.unknown
	w.prefixFloor, w.prefixLowest = v.floor, v.lowest
	if v.unresolved != "" {
		// Each entry made a revision at most.
		w.prefixLowest = w.cov.DBRevision - int64(len(entries))
	}
	return rp, nil
}

// prefixVerdict is what solvePrefix established as a whole: the revision
// before the log, 0 when not established, the stretches not established,
// or why nothing is.
type prefixVerdict struct {
	before     int64
	floor      int64 // before, or its highest possible value
	lowest     int64 // before, or its lowest possible value
	unknown    []WALStretch
	unresolved string
	// foreign says why the db cannot be the one the entries lead to.
	foreign string
}

// solvePrefixRead works the prefix out over db, whose revision is dbRev,
// with the db's last revisions read by xr.
func solvePrefixRead(ctx context.Context, entries []pxEntry, keys *pxKeys, exact bool, dbRev int64, db prefixDB, xr *dbIndexRead) (*replay, prefixVerdict) {
	x, err := xr.wait()
	if err != nil {
		return unresolvedPrefix(entries, keys, err.Error()), prefixVerdict{unresolved: err.Error()}
	}
	if why := foreignDB(entries, keys, x, dbRev); why != "" {
		return nil, prefixVerdict{foreign: why}
	}
	return solveSettled(ctx, entries, keys, exact, dbRev, db, x)
}

// dbIndexRead is the db's revisions the prefix may have made, read in a
// goroutine of its own.
type dbIndexRead struct {
	done chan struct{}
	x    *dbIndex
	err  error
}

// readDBIndex starts reading the db's last len(entries) revisions: each
// entry made one at most. keys must not change meanwhile.
func readDBIndex(ctx context.Context, db prefixDB, entries []pxEntry, keys *pxKeys, dbRev int64) *dbIndexRead {
	r := &dbIndexRead{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.x, r.err = loadDBIndex(ctx, db, keys, dbRev-int64(len(entries)), dbRev)
	}()
	return r
}

// wait waits for the read (it ends with ctx).
func (r *dbIndexRead) wait() (*dbIndex, error) {
	<-r.done
	return r.x, r.err
}

// WALStretch is a run of the log's entries whose revisions are not
// established, and why.
type WALStretch struct {
	FromIndex, ToIndex uint64
	Reason             string
}

// unresolvedPrefix lists the prefix's entries with an unknown outcome and
// what each would have written.
func unresolvedPrefix(entries []pxEntry, keys *pxKeys, why string) *replay {
	rp := newReplay(nil)
	reason := "in the db; its outcome is not established: " + why
	for _, pe := range entries {
		we := WALEntry{Index: pe.index, Term: pe.term, Kind: pe.kind, Other: pe.other, pos: pe.pos, Outcome: OutcomeUnknown, Reason: reason}
		rp.counts[pe.kind.String()]++
		switch pe.kind {
		case walfile.KindPut, walfile.KindDeleteRange, walfile.KindTxn, walfile.KindLeaseGrant, walfile.KindLeaseRevoke, walfile.KindCompaction:
		default:
			we.Outcome, we.Reason = OutcomeSkipped, ""
		}
		idx := int32(len(rp.entries))
		for _, ops := range [][]pxOp{pe.succ, pe.fail} {
			for _, o := range ops {
				rp.newWrite(rp.keyString(keys.names[o.key]), idx, op{path: opPath(o)}, o.del)
			}
		}
		if pe.ranged {
			// Every key of its range the log names, in key order.
			for _, k := range keys.inRange(pe.from, pe.end) {
				rp.newWrite(rp.keyString(keys.names[k]), idx, op{}, true)
			}
		}
		rp.push(we)
	}
	return rp
}

// prepend puts p's entries and writes, the prefix's, in front of r's. r
// keeps its key states.
func (r *replay) prepend(p *replay) {
	ne, nw, nn := int32(len(p.entries)), int32(len(p.all)), int32(len(p.notes))
	for i := range r.entries {
		if r.entries[i].note >= 0 {
			r.entries[i].note += nn
		}
	}
	r.entries = append(p.entries, r.entries...)
	r.notes = append(p.notes, r.notes...)

	// r's key ids stay, p's are mapped to them; p's writes keep their
	// numbers and r's follow them.
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
	effects := p.effects
	for i, e := range r.effects {
		effects[i+ne] = e
	}
	r.effects = effects
}
