package wal

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/etcdpvc/etcdpvc/walread"
)

// replay turns what the worlds establish into the prefix's replay
// records and verdict: an entry's outcome and revision, a write's
// revision, create revision and version, where every consistent world
// gives the same; the rest listed, unknown, with what the worlds give.
func (r *worldsResult) replay(entries []pxEntry, keys *pxKeys) (*replay, prefixVerdict) {
	if !r.established() {
		why := r.why
		if r.complete {
			why = "no state before the log leads its entries to the db: " + r.noWorld
		} else if r.settled != nil {
			return r.settledReplay(entries, keys, why)
		}
		return unresolvedPrefix(entries, keys, why), prefixVerdict{unresolved: why}
	}
	rp := newReplay(nil)
	rp.sizeKeys(len(keys.names))
	rp.entries = make([]walEntry, 0, len(entries))
	rp.all = make([]walWrite, 0, len(r.ops)+len(r.dyn)+len(r.lazy))
	// The keys' states by number, looked up once.
	states := make([]*keyState, len(keys.names))
	var v prefixVerdict
	if x, ok := r.x.get(); ok {
		v.before = x
	}
	v.floor = r.x.hi
	// The deletes of keys by revokes and range deletes, by entry, in key
	// order.
	dynOf := map[int32][]int32{}
	for k := range r.dyn {
		dynOf[k[0]] = append(dynOf[k[0]], k[1])
	}
	for k := range r.lazy {
		if r.dyn[k] == nil {
			dynOf[k[0]] = append(dynOf[k[0]], k[1])
		}
	}
	for e := range dynOf {
		slices.SortFunc(dynOf[e], func(a, b int32) int { return strings.Compare(keys.names[a], keys.names[b]) })
	}
	for i := range entries {
		pe := &entries[i]
		c := &r.entries[i]
		idx := int32(i)
		we := WALEntry{Index: pe.index, Term: pe.term, Kind: pe.kind, Other: pe.other, pos: pe.pos}
		o, oOK := c.outcome.get()
		rev, revOK := c.rev.get()
		// The entry's writes: those of its ops, and the keys a revoke or
		// range delete may have deleted. An entry is established only
		// with every write it lists (a consumer takes an applied entry's
		// writes for applied).
		var ws []plannedWrite
		uncertain := !oOK
		var unsure []string
		for b, ops := range [][]pxOp{pe.succ, pe.fail} {
			for j, op := range ops {
				oi := r.opBase[i] + int32(j)
				if b == 1 {
					oi += int32(len(pe.succ))
				}
				w := &r.ops[oi]
				a, ok := w.applied.get()
				if !ok {
					uncertain = true
					unsure = append(unsure, keys.names[op.key])
				}
				// An applied entry lists what it applied; one not applied
				// what it attempted.
				ws = append(ws, plannedWrite{op: op, w: w, all: true, skip: ok && a == 0 && oOK && Outcome(o) == OutcomeApplied})
			}
		}
		for _, k := range dynOf[idx] {
			w := r.dyn[[2]int32{idx, k}]
			attachedByLog := w != nil
			if w == nil {
				w = &xWriteClaim{}
			}
			// A key the log does not attach to the lease, or not only,
			// may have been attached to it before the log: which the
			// worlds do not say alike.
			all := !r.lazy[[2]int32{idx, k}]
			a, ok := w.applied.get()
			if pre, known := r.pre[k].get(); !attachedByLog && pe.kind == walread.KindLeaseRevoke && (!known || pre != 1) {
				// A key the log names that may have existed before the
				// log, attached to this lease, and been deleted by it,
				// and that no write of the log before it attached: like
				// the keys the log never names, not listed (its state
				// before the log is not established, and says so: see
				// preState). One the log attached is listed: else its
				// put would read as live after it.
				we.Reason = "it may also have deleted keys attached to its lease before the log, whose state there is not established"
				continue
			}
			if !all || !ok {
				uncertain = true
				unsure = append(unsure, keys.names[k])
			}
			ws = append(ws, plannedWrite{op: pxOp{key: k, del: true}, w: w, all: all, skip: all && ok && a == 0})
		}
		switch {
		case uncertain:
			we.Outcome, we.Reason = OutcomeUnknown, r.uncertainWhy(c, pe, unsure)
		case Outcome(o) == OutcomeNotApplied:
			we.Outcome, we.Reason = OutcomeNotApplied, notAppliedWhy(c, pe)
		default:
			we.Outcome = Outcome(o)
			switch {
			case Outcome(o) != OutcomeApplied:
			case revOK && rev != 0:
				we.Revision = rev
			case revOK:
				we.Reason = nothingWhy(c, pe)
			default:
				we.Reason = "applied; its revision is not established: " + revWhy(&c.rev)
			}
		}
		rp.counts[pe.kind.String()]++
		for _, pw := range ws {
			if pw.skip && !uncertain {
				// Of the branch it did not take, a delete of a key that
				// was not there, a key it did not delete.
				continue
			}
			ks := states[pw.op.key]
			if ks == nil {
				ks = rp.keyString(keys.names[pw.op.key])
				states[pw.op.key] = ks
			}
			r.addWrite(rp, idx, ks, pw.op, pw.w, pw.all && !uncertain)
		}
		rp.push(we)
	}
	rp.sortApplied()
	v.unknown = r.stretches(entries)
	rp.preState = map[string]int8{}
	for k := range keys.names {
		if st, ok := r.pre[k].get(); ok {
			rp.preState[keys.names[k]] = int8(st)
		}
	}
	return rp, v
}

// addWrite lists one write of entry idx to key s: applied with its revision,
// create revision and version where every world gives them (all: every
// world lists it), else without.
func (r *worldsResult) addWrite(rp *replay, idx int32, s *keyState, op pxOp, w *xWriteClaim, all bool) {
	id := rp.newWrite(s, idx, opOf(op), op.del)
	a, ok := w.applied.get()
	if !all || !ok || a != 1 {
		return
	}
	x := &rp.all[id]
	if !op.del {
		if v, ok := w.create.get(); ok {
			x.create = v
		}
		if v, ok := w.version.get(); ok {
			x.version = v
		}
		x.lease = op.lease
	}
	s.last = id
	if m, ok := w.mod.get(); ok {
		x.mod = m
		rp.applied = append(rp.applied, id)
		return
	}
	// Applied in every world, at revisions they do not agree on.
	rp.unplaced[id] = [2]int64{w.mod.lo, w.mod.hi}
}

// plannedWrite is a write an entry lists (see replay): skip when every
// world says it did not apply.
type plannedWrite struct {
	op        pxOp
	w         *xWriteClaim
	all, skip bool
}

// opOf is the replay op of a prefix op (its path in the request).
func opOf(o pxOp) op { return op{path: opPath(o.path, o.inTxn)} }

// notAppliedWhy says why an entry every world leaves not applied was not.
func notAppliedWhy(c *xEntryClaim, pe *pxEntry) string {
	why, ok := c.why.get()
	if !ok {
		return "not applied: its compare failed or a lease it names was not found; the worlds that fit the log and the db differ in which"
	}
	switch uint8(why) {
	case whyCompare:
		return "compare failed (the key changed since it was read)"
	case whyLease:
		if pe.kind == walread.KindLeaseRevoke {
			return fmt.Sprintf("lease %x not found", pe.id)
		}
		for _, op := range slices.Concat(pe.succ, pe.fail) {
			if op.lease != 0 {
				return fmt.Sprintf("lease %x not found (a lease its puts name)", op.lease)
			}
		}
		return "lease not found"
	case whyLeaseExists:
		return "lease already exists"
	case whyCompacted:
		return "already compacted"
	case whyFuture:
		return "a future revision (not compacted)"
	}
	return ""
}

// nothingWhy says why an entry applied in every world made no revision.
func nothingWhy(c *xEntryClaim, pe *pxEntry) string {
	switch {
	case pe.ranged && pe.end != "\x00" && pe.end <= pe.from:
		return "its range is empty: nothing deleted"
	case pe.ranged:
		return "no key of its range existed: nothing deleted"
	case pe.kind == walread.KindLeaseRevoke:
		return "no key attached to the lease was left: nothing deleted"
	case pe.kind == walread.KindDeleteRange:
		return "the key did not exist: nothing deleted"
	case pe.kind == walread.KindTxn && len(pe.succ)+len(pe.fail) > 0:
		return "the branch it took changed nothing (no write in it, or a delete of a key that did not exist)"
	}
	return ""
}

// uncertainWhy says why an entry's outcome, or which keys it changed, is
// not established; unsure names the keys whose writes are not.
func (r *worldsResult) uncertainWhy(c *xEntryClaim, pe *pxEntry, unsure []string) string {
	o, oOK := c.outcome.get()
	if !oOK || Outcome(o) != OutcomeApplied {
		return r.outcomeWhy(c, pe)
	}
	what := "its revision is not established"
	if rev, ok := c.rev.get(); ok && rev != 0 {
		what = fmt.Sprintf("it applied at revision %d", rev)
	} else if ok {
		what = "it made no revision"
	}
	switch {
	case pe.ranged:
		return fmt.Sprintf("a range delete: which keys it deleted is not established (%s): the log does not tell whether %s existed then", what, strings.Join(unsure, " or "))
	case pe.kind == walread.KindLeaseRevoke:
		return fmt.Sprintf("a revoke of a lease from before the log: which keys attached to it there it deleted is not established (%s): %s may have been", what, strings.Join(unsure, " or "))
	case len(unsure) == 1:
		return fmt.Sprintf("whether the key existed, and so was deleted, is not established (%s): %s", unsure[0], revWhy(&c.rev))
	}
	return r.outcomeWhy(c, pe)
}

// outcomeWhy says why an entry's outcome is not established.
func (r *worldsResult) outcomeWhy(c *xEntryClaim, pe *pxEntry) string {
	if c.outcome.open && c.outcome.n == 0 && pe.kind == walread.KindLeaseRevoke {
		return "it made no revision: the lease had no key left, or was revoked already before the log (lease not found); the log does not tell which"
	}
	var in []string
	if c.outcome.n > 0 {
		in = append(in, outcomeWord(Outcome(c.outcome.v), c.rev.v))
		if c.outcome.diff && !c.outcome.open {
			in = append(in, outcomeWord(Outcome(c.outcome.alt), 0))
		}
	}
	switch {
	case c.outcome.open && pe.kind == walread.KindCompaction:
		in = append(in, "refused in one: the db may have been compacted at or above its revision before the log")
	case c.outcome.open:
		in = append(in, "a revoke that made no revision (its lease gone already, or with no key left)")
	}
	return "not established: the worlds that fit the log and the db differ (" + strings.Join(in, "; ") + ")"
}

func outcomeWord(o Outcome, rev int64) string {
	switch {
	case o == OutcomeApplied && rev != 0:
		return fmt.Sprintf("applied at revision %d in one", rev)
	case o == OutcomeApplied:
		return "applied in one"
	case o == OutcomeNotApplied:
		return "not applied in another"
	}
	return o.String()
}

// revWhy says which revisions the worlds give an entry applied in all.
func revWhy(c *xClaim) string {
	if c.lowPos == c.hi {
		return fmt.Sprintf("revision %d in some worlds that fit the log and the db, none in others", c.hi)
	}
	if c.lo == 0 {
		return fmt.Sprintf("the worlds that fit the log and the db give it revisions %d to %d, or none", c.lowPos, c.hi)
	}
	return fmt.Sprintf("the worlds that fit the log and the db give it revisions %d to %d", c.lowPos, c.hi)
}

// stretches lists the runs of entries whose revisions (or outcomes) are
// not established, entries that make no revision in any world joining
// the runs around them; each says which entries may or may not have made
// a revision (in the run or just after it).
func (r *worldsResult) stretches(entries []pxEntry) []WALStretch {
	var out []WALStretch
	open := -1
	var lo, hi int64
	last := -1
	flush := func(next int) {
		if open < 0 {
			return
		}
		var causes []string
		kinds := map[string]bool{}
		for i := open; i <= min(next, len(entries)-1); i++ {
			c := &r.entries[i].rev
			if c.lo == 0 && c.hi > 0 || r.entries[i].outcome.open {
				causes = append(causes, fmt.Sprint(entries[i].index))
				kinds[uncertainKind(&entries[i])] = true
			}
		}
		why := "the worlds that fit the log and the db give them other revisions"
		if len(causes) > 0 {
			what := slices.Sorted(maps.Keys(kinds))
			if len(causes) == 1 {
				why = fmt.Sprintf("entry %s (%s) may or may not have made a revision", causes[0], strings.Join(what, ", or "))
			} else {
				why = fmt.Sprintf("entries %s (%s) may or may not each have made a revision", strings.Join(causes, " and "), strings.Join(what, ", or "))
			}
			why += ", and neither a compare nor the db fixes which"
		}
		out = append(out, WALStretch{FromIndex: entries[open].index, ToIndex: entries[last].index, Reason: fmt.Sprintf("%s: revisions %d to %d fit", why, lo, hi)})
		open = -1
	}
	for i := range entries {
		c := &r.entries[i]
		if _, revOK := c.rev.get(); revOK {
			if c.rev.v != 0 {
				flush(i)
			}
			continue
		}
		if open < 0 {
			open, lo, hi = i, 0, 0
		}
		if c.rev.lowPos > 0 && (lo == 0 || c.rev.lowPos < lo) {
			lo = c.rev.lowPos
		}
		hi = max(hi, c.rev.hi)
		last = i
	}
	flush(len(entries))
	return out
}

// uncertainKind says what an entry that may or may not have made a
// revision is.
func uncertainKind(pe *pxEntry) string {
	switch {
	case pe.ranged:
		return "a delete of a range"
	case pe.kind == walread.KindLeaseRevoke:
		return "a revoke of a lease from before the log"
	case pe.kind == walread.KindDeleteRange:
		return "a delete of a key from before the log"
	case pe.kind == walread.KindPut:
		return "a put with a lease from before the log"
	}
	return "a transaction whose compare may not have held (a stale read)"
}

// settledReplay is the prefix's replay from what settle fixed alone, for a
// search that did not finish (why): an entry settle fixes is established
// (a kube-apiserver transaction, a plain put or delete: applied at its
// revision, or not), every other one is listed unknown.
func (r *worldsResult) settledReplay(entries []pxEntry, keys *pxKeys, why string) (*replay, prefixVerdict) {
	st := r.settled
	rp := newReplay(nil)
	rp.sizeKeys(len(keys.names))
	rp.entries = make([]walEntry, 0, len(entries))
	var v prefixVerdict
	n := len(entries)
	// The revisions known around each entry bound those not known.
	prevRev := make([]int64, n)
	var last int64
	for i := range n {
		prevRev[i] = last
		if st.rev[i] != 0 {
			last = st.rev[i]
		}
	}
	nextRev := make([]int64, n)
	next := r.dbRev + 1
	for i := n - 1; i >= 0; i-- {
		nextRev[i] = next
		if st.rev[i] != 0 {
			next = st.rev[i]
		}
	}
	granted := map[int64]bool{}
	// attached: the keys the log's puts named with each lease since its
	// last revoke, which a revoke of it may have deleted.
	attached := map[int64][]int32{}
	unknown := "not established: " + why + "; the counting between the revisions the db anchors and the keys' chains of compares do not fix it"
	var open int = -1
	flush := func(end int) {
		if open >= 0 {
			v.unknown = append(v.unknown, WALStretch{FromIndex: entries[open].index, ToIndex: entries[end].index, Reason: unknown})
			open = -1
		}
	}
	for i := range entries {
		pe := &entries[i]
		idx := int32(i)
		we := WALEntry{Index: pe.index, Term: pe.term, Kind: pe.kind, Other: pe.other, pos: pe.pos, Outcome: OutcomeUnknown, Reason: unknown}
		made, rev := st.made[i], st.rev[i]
		_, cmpRev, del, lease, kube := kubeShape(pe)
		plain := pe.kind == walread.KindPut || pe.kind == walread.KindDeleteRange && !pe.ranged
		switch {
		case pe.kind == walread.KindLeaseGrant:
			if !granted[pe.id] {
				we.Outcome, we.Reason = OutcomeApplied, ""
			}
			granted[pe.id] = true
		case pe.kind == walread.KindLeaseRevoke:
			delete(granted, pe.id)
			// Its outcome is not established, nor so which keys it
			// deleted: each listed, not applied.
			for _, k := range attached[pe.id] {
				rp.newWrite(rp.keyString(keys.names[k]), idx, op{}, true)
			}
			delete(attached, pe.id)
		case pe.kind == walread.KindCompaction, pe.ranged:
		case !kube && !plain && (pe.kind == walread.KindPut || pe.kind == walread.KindDeleteRange || pe.kind == walread.KindTxn):
		case pe.kind != walread.KindPut && pe.kind != walread.KindDeleteRange && pe.kind != walread.KindTxn:
			we.Outcome, we.Reason = OutcomeSkipped, ""
		case made == 1:
			we.Outcome, we.Reason = OutcomeApplied, ""
			if rev != 0 {
				we.Revision = rev
			} else {
				we.Reason = fmt.Sprintf("applied; its revision is not established: between %d and %d", prevRev[i]+1, nextRev[i]-1)
			}
		case made == 0 && pe.kind == walread.KindDeleteRange:
			we.Outcome, we.Reason = OutcomeApplied, "the key did not exist: nothing deleted"
		case made == 0 && pe.kind == walread.KindPut:
			we.Outcome, we.Reason = OutcomeNotApplied, fmt.Sprintf("lease %x not found (a lease its puts name)", pe.succ[0].lease)
		case made == 0 && kube && del && cmpRev == 0:
			// A delete if the key does not exist (mod revision 0):
			// its compare held on an absent key (applied, nothing
			// deleted) or failed; which is not established.
		case made == 0 && lease != 0:
			we.Outcome, we.Reason = OutcomeNotApplied, "compare failed (the key changed since it was read), or the lease its put names was not found"
		case made == 0:
			we.Outcome, we.Reason = OutcomeNotApplied, "compare failed (the key changed since it was read)"
		}
		if we.Outcome == OutcomeUnknown || made == 1 && rev == 0 {
			if open < 0 {
				open = i
			}
		} else if rev != 0 {
			flush(i - 1)
		}
		rp.counts[pe.kind.String()]++
		for _, ops := range [][]pxOp{pe.succ, pe.fail} {
			for _, op := range ops {
				if op.lease != 0 && !op.del && !slices.Contains(attached[op.lease], op.key) {
					attached[op.lease] = append(attached[op.lease], op.key)
				}
				s := rp.keyString(keys.names[op.key])
				id := rp.newWrite(s, idx, opOf(op), op.del)
				if we.Outcome != OutcomeApplied || made != 1 {
					continue
				}
				x := &rp.all[id]
				if !op.del {
					x.lease = op.lease
				}
				s.last = id
				if rev != 0 {
					x.mod = rev
					rp.applied = append(rp.applied, id)
				} else {
					rp.unplaced[id] = [2]int64{prevRev[i] + 1, nextRev[i] - 1}
				}
			}
		}
		if pe.ranged {
			for _, k := range r.rangedKeys[idx] {
				rp.newWrite(rp.keyString(keys.names[k]), idx, op{}, true)
			}
		}
		rp.push(we)
	}
	flush(n - 1)
	rp.sortApplied()
	// The revision before the log, where the entries before the first
	// known revision are all settled.
	v.floor = r.dbRev
	for i := range n {
		if st.made[i] == -1 {
			break
		}
		if st.rev[i] != 0 {
			made := int64(0)
			for j := range i {
				made += int64(b2i(st.made[j] == 1))
			}
			v.before = st.rev[i] - 1 - made
			v.floor = v.before
			break
		}
	}
	if n > 0 && st.rev[n-1] == 0 && st.made[n-1] != -1 {
		// Only settled entries and no revision known: counted back from
		// the db's revision.
		all := true
		made := int64(0)
		for i := range n {
			all = all && st.made[i] != -1
			made += int64(b2i(st.made[i] == 1))
		}
		if all && v.before == 0 {
			v.before, v.floor = r.dbRev-made, r.dbRev-made
		}
	}
	return rp, v
}

// sortApplied puts the applied writes in revision order (a revision's
// writes in the log's order).
func (r *replay) sortApplied() {
	slices.SortStableFunc(r.applied, func(a, b int32) int { return cmp.Compare(r.all[a].mod, r.all[b].mod) })
}
