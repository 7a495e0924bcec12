package wal

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// Settle proves entries' outcomes from the db and the log alone, whatever
// the state before the log. A put whose key and value the db alone holds
// at R made R. The entries between two whose revisions are known made
// exactly the revisions between: where that is all of those that can
// make one, each did, and where it is none, none did. Step over the keys'
// chains of writes decides the rest it can. Each fact feeds the others
// until nothing changes.

// settled holds, by entry, whether it made a revision, made 1 or 0 or -1
// when not known, and which, rev 0 when not known.
type settled struct {
	made []int8
	rev  []int64
	// index is an entry's raft index, for what noWorld says.
	index func(int) uint64
	// noWorld says why no state before the log leads the entries to the
	// db, when the counting shows it.
	noWorld string
	// stepped holds what step said of each entry it stepped.
	stepped map[int]stepResult
}

// kubeShape describes a transaction of kube-apiserver's shape: one compare
// of a key's mod revision, a success branch that puts or deletes that key
// alone, and no write in its failure branch.
func kubeShape(pe *pxEntry) (key int32, r int64, del bool, lease int64, ok bool) {
	if pe.kind != walfile.KindTxn || pe.nested || len(pe.cmps) != 1 || len(pe.succ) != 1 || len(pe.fail) != 0 {
		return 0, 0, false, 0, false
	}
	c, op := pe.cmps[0], pe.succ[0]
	if c.target != pb.Compare_MOD || c.result != pb.Compare_EQUAL || c.ranged || c.key != op.key {
		return 0, 0, false, 0, false
	}
	return c.key, c.value, op.del, op.lease, true
}

// settle works out what the counting and the keys' compare chains fix.
func (s *settler) settle() *settled {
	n := len(s.entries)
	st := &settled{made: make([]int8, n), rev: make([]int64, n), stepped: map[int]stepResult{}, index: func(i int) uint64 {
		if i >= len(s.entries) {
			return s.entries[len(s.entries)-1].index + 1
		}
		return s.entries[i].index
	}}
	for i := range s.entries {
		st.made[i] = -1
		pe := &s.entries[i]
		switch {
		case s.possible[i+1] == s.possible[i]:
			st.made[i] = 0
		case s.certain[i+1] > s.certain[i]:
			st.made[i] = 1
		}
		for b, ops := range [][]pxOp{pe.succ, pe.fail} {
			for j := range ops {
				if r := s.anchors[s.opIndex(int32(i), j, b == 1)]; r != 0 {
					st.made[i], st.rev[i] = 1, r
				}
			}
		}
	}
	for changed := true; changed && st.noWorld == ""; {
		changed = st.count(s.dbRev)
		if st.noWorld == "" && s.chains(st) {
			changed = true
		}
	}
	return st
}

// count settles the entries between two whose revisions are known, the
// db's revision after the last entry, and reports whether it settled any.
func (st *settled) count(dbRev int64) bool {
	n := len(st.made)
	changed := false
	prev, prevRev := -1, int64(0)
	for q := 0; q <= n; q++ {
		var qRev int64
		switch {
		case q == n:
			qRev = dbRev + 1
		case st.rev[q] != 0:
			qRev = st.rev[q]
		default:
			continue
		}
		if prev >= 0 {
			need := qRev - prevRev - 1
			var one, unknown int64
			for i := prev + 1; i < q; i++ {
				switch st.made[i] {
				case 1:
					one++
				case -1:
					unknown++
				}
			}
			switch {
			case need < one || need > one+unknown:
				st.noWorld = fmt.Sprintf("entries %d and %d are at revisions %d and %d (a value the db holds there, a compare that names it, or the db's own revision after the last entry), and the %d entries between them cannot have made the %d revisions between", st.index(prev), st.index(q), prevRev, qRev, q-prev-1, need)
				return false
			case unknown > 0 && (need == one || need == one+unknown):
				v := int8(0)
				if need > one {
					v = 1
				}
				for i := prev + 1; i < q; i++ {
					if st.made[i] == -1 {
						st.made[i] = v
					}
				}
				changed = true
				unknown = 0
			}
			if unknown == 0 {
				r := prevRev
				for i := prev + 1; i < q; i++ {
					if st.made[i] == 1 {
						r++
						if st.rev[i] == 0 {
							st.rev[i] = r
							changed = true
						}
					}
				}
			}
		}
		prev, prevRev = q, qRev
	}
	return changed
}

// chains settles entries along their keys' chains of writes, stepping
// each over a state that follows the keys' mod revisions and leases where
// they are known. It reports whether it settled any.
func (s *settler) chains(st *settled) bool {
	const unknown = unknownRev
	nk := len(s.names.names)
	ps := newPxState(s.names)
	ps.putWith = s.putWith
	ps.cur, ps.keyLease = make([]int64, nk), make([]int64, nk)
	cur, lease := ps.cur, ps.keyLease
	for i := range cur {
		cur[i], lease[i] = unknown, unknown
	}
	// puts lists, by key, the entries so far that put it and may have
	// applied; minRev is the lowest revision known.
	puts := make([][]int32, nk)
	otherPuts := make([]bool, nk) // keys put by an entry not in puts
	minRev := int64(0)
	for _, r := range st.rev {
		if r != 0 && (minRev == 0 || r < minRev) {
			minRev = r
		}
	}
	changed := false
	for i := range s.entries {
		pe := &s.entries[i]
		k, _, del, _, ok := kubeShape(pe)
		// An entry that made no revision changed no key; a delete or a
		// lease change is stepped whatever it made.
		if st.made[i] != 0 || pe.kind != walfile.KindPut && pe.kind != walfile.KindTxn {
			ps.at = st.rev[i]
			if ps.at == 0 {
				ps.at = unknown
			}
			res := stepResult{outcome: OutcomeUnknown}
			if req := pe.request(s.names.names); req != nil {
				res = step(ps, req, pe.index)
			}
			st.stepped[i] = res
			switch {
			case st.made[i] == 0 && res.changed:
				st.noWorld = fmt.Sprintf("entry %d changed a key, yet the counting shows it made no revision", pe.index)
				return false
			case res.outcome == OutcomeApplied && (res.changed || st.made[i] == 1):
				st.made[i], changed = 1, changed || st.made[i] == -1
			case st.made[i] != 1 && res.outcome != OutcomeUnknown:
				changed = changed || st.made[i] == -1
				st.made[i] = 0
			case pe.kind == walfile.KindDeleteRange:
				// Step deleted what it could: not live after it.
			case st.made[i] == 1 && !pe.nested && len(pe.fail) == 0:
				// It made a revision and its failure branch writes
				// nothing: its success branch applied.
				for _, o := range pe.succ {
					if o.del {
						ps.del(s.names.names[o.key], op{})
					} else {
						ps.put(s.names.names[o.key], op{put: &pb.PutRequest{Lease: o.lease}})
					}
				}
			default:
				// Its keys are not known after it.
				for _, ops := range [][]pxOp{pe.succ, pe.fail} {
					for _, op := range ops {
						cur[op.key], lease[op.key] = unknown, unknown
					}
				}
			}
		}
		// A kube-apiserver compare of a key's mod revision names the
		// revision it read the key at: one at or above a revision the log
		// made was made by a put of the log before it; where one such
		// put's revision is not known, and no other's is that, it is this
		// one's.
		for _, c := range pe.cmps {
			if !ok || c.target != pb.Compare_MOD || c.result != pb.Compare_EQUAL || minRev == 0 || c.value < minRev {
				continue
			}
			cand, named := int32(-1), false
			if otherPuts[c.key] {
				continue // a put whose revision cannot be told from
			}
			for _, e := range puts[c.key] {
				switch {
				case st.rev[e] == c.value:
					named = true
				case st.rev[e] == 0 && st.made[e] != 0:
					if cand >= 0 {
						cand = -2
					}
					if cand == -1 {
						cand = e
					}
				}
			}
			if !named && cand >= 0 {
				st.made[cand], st.rev[cand] = 1, c.value
				changed = true
			}
		}
		// The puts a revision can be told from: a kube-apiserver
		// transaction's or a plain put's.
		switch {
		case ok && !del && st.made[i] != 0:
			puts[k] = append(puts[k], int32(i))
		case pe.kind == walfile.KindPut && st.made[i] != 0:
			puts[pe.succ[0].key] = append(puts[pe.succ[0].key], int32(i))
		case !ok && st.made[i] != 0:
			for _, ops := range [][]pxOp{pe.succ, pe.fail} {
				for _, op := range ops {
					if !op.del {
						otherPuts[op.key] = true
					}
				}
			}
		}
	}
	return changed
}
