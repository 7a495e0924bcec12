package wal

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// settler works out the prefix, the log's entries the db holds, by local
// proofs alone (settle.go); what it cannot prove is listed unknown. A
// search of every state before the log was tried and removed: on logs of
// a cluster's size it stopped short every time.
type settler struct {
	entries []pxEntry
	names   *pxKeys
	exact   bool
	dbRev   int64
	dbK     int64 // the db's compaction: it holds every revision above
	db      *dbIndex
	// anchors holds, by opIndex, the revision at which the db holds a
	// put's key and value that no other put of the log writes, or 0.
	anchors []int64
	opBase  []int32 // by entry: the index of its first op (opIndex)
	// certain and possible count the entries before each that certainly
	// make a revision, and that may.
	certain, possible []int32
	// putWith lists, by lease, the keys the log puts with it.
	putWith map[int64][]int32
	// live holds, by key, its state in the db, mod 0 for none.
	live []struct{ create, mod, version int64 }
}

// solveSettled works the prefix out over db, at revision dbRev; x holds
// its items at the revisions the prefix may have made; exact says the
// log starts at raft index 1.
func solveSettled(ctx context.Context, entries []pxEntry, names *pxKeys, exact bool, dbRev int64, db prefixDB, x *dbIndex) (*replay, prefixVerdict) {
	unresolved := func(why string) (*replay, prefixVerdict) {
		return unresolvedPrefix(entries, names, why), prefixVerdict{unresolved: why}
	}
	for i := range entries {
		if pe := &entries[i]; pe.unmodelled != "" {
			return unresolved(fmt.Sprintf("entry %d: %s: not modelled", pe.index, pe.unmodelled))
		}
	}
	s := &settler{entries: entries, names: names, exact: exact, dbRev: dbRev, dbK: db.compactRevision(), db: x}
	noWorld, err := s.load(ctx, db)
	if err != nil {
		// Not a verdict on the entries: the db could not be read.
		return unresolved("reading the db: " + err.Error())
	}
	var st *settled
	if noWorld == "" {
		st = s.settle()
		noWorld = st.noWorld
	}
	if noWorld != "" {
		return unresolved("no state before the log leads its entries to the db: " + noWorld)
	}
	rp, v := s.replay(st)
	// The revisions above the one before the log are the entries': the
	// db must hold their writes there, no other.
	if why := notTheLogs(entries, names, x, v.floor+1, dbRev); why != "" {
		return unresolved("no state before the log leads its entries to the db: " + why)
	}
	return rp, v
}

// load reads what settle needs of the db and the entries: the puts'
// anchors, the keys put with each lease, the counts of entries that may
// make a revision. It returns why no state before the log leads the
// entries to the db, when the db says so at once.
func (s *settler) load(ctx context.Context, db prefixDB) (string, error) {
	names := s.names.names
	n := int32(len(s.entries))
	// The puts, sorted by key and value hash: no map, a log may hold a
	// million.
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
	byKeyHash := func(a, b put) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.hash, b.hash)
	}
	slices.SortFunc(puts, byKeyHash)
	s.anchors = make([]int64, s.opBase[n])
	// hold notes that the db holds key's value hash at rev: the one put
	// of the log that writes them made it.
	hold := func(key int32, hash uint64, rev int64) {
		i, found := slices.BinarySearchFunc(puts, put{key: key, hash: hash}, byKeyHash)
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
	}
	// The db's live keys the log names anchor their puts.
	s.live = make([]struct{ create, mod, version int64 }, len(names))
	var unnamedX int64 // the highest mod revision of a live key the log never names
	var unnamedRanged string
	ranges := rangeUnion(s.entries)
	err := db.live(ctx, s.names, func(v *store.KeyValue, k int32, hash uint64) error {
		if k < 0 {
			unnamedX = max(unnamedX, v.ModRevision)
			if unnamedRanged == "" && ranges.has(v.Key) {
				unnamedRanged = v.Key
			}
			return nil
		}
		s.live[k].create, s.live[k].mod, s.live[k].version = v.CreateRevision, v.ModRevision, v.Version
		hold(k, hash, v.ModRevision)
		return nil
	})
	if err != nil {
		return "", err
	}
	if unnamedRanged != "" {
		return fmt.Sprintf("%s: in the db from before the log, yet a range delete of the log deletes every key of its range", unnamedRanged), nil
	}
	if s.exact && unnamedX > 1 {
		return fmt.Sprintf("the db holds keys the log never writes (changed at revision %d), yet the log starts at raft index 1", unnamedX), nil
	}
	for i, a := range s.anchors {
		if a < 0 {
			s.anchors[i] = 0
		}
	}
	s.countBounds()
	// The keys put with each lease.
	putWith := map[int64][]int32{}
	for i := range s.entries {
		for _, ops := range [][]pxOp{s.entries[i].succ, s.entries[i].fail} {
			for _, op := range ops {
				if !op.del && op.lease != 0 {
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
	return "", nil
}

// countBounds counts, before each entry, the entries that certainly make
// a revision, anchored or certainRevision, and those that may.
func (s *settler) countBounds() {
	n := len(s.entries)
	s.certain = make([]int32, n+1)
	s.possible = make([]int32, n+1)
	for i := range s.entries {
		pe := &s.entries[i]
		sure, writes := false, pe.ranged || pe.kind == walfile.KindLeaseRevoke
		for b, ops := range [][]pxOp{pe.succ, pe.fail} {
			for j := range ops {
				writes = true
				sure = sure || s.anchors[s.opIndex(int32(i), j, b == 1)] != 0
			}
		}
		sure = sure || certainRevision(pe, s.names)
		s.certain[i+1] = s.certain[i] + int32(b2i(sure))
		s.possible[i+1] = s.possible[i] + int32(b2i(writes))
	}
}

// tombstones lists the keys the log names that the db holds deleted at
// revision rev.
func (s *settler) tombstones(rev int64) []int32 {
	var out []int32
	for _, it := range s.db.at(rev) {
		if it.tomb && it.key >= 0 {
			out = append(out, it.key)
		}
	}
	return out
}

// opIndex numbers op i of entry e's success or failure branch.
func (s *settler) opIndex(e int32, i int, fail bool) int32 {
	if fail {
		return s.opBase[e] + int32(len(s.entries[e].succ)) + int32(i)
	}
	return s.opBase[e] + int32(i)
}

func b2i(b bool) int8 {
	if b {
		return 1
	}
	return 0
}

// replay is the prefix's replay from what settle fixed; every entry it
// does not fix is listed unknown.
func (s *settler) replay(st *settled) (*replay, prefixVerdict) {
	entries, keys := s.entries, s.names
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
	next := s.dbRev + 1
	for i := n - 1; i >= 0; i-- {
		nextRev[i] = next
		if st.rev[i] != 0 {
			next = st.rev[i]
		}
	}
	// firstRev is the first revision the log made that is known, made by
	// entry f; compactedHi bounds the log's compactions so far.
	f, firstRev := n, s.dbRev+1
	for i := range n {
		if st.rev[i] != 0 {
			f, firstRev = i, st.rev[i]
			break
		}
	}
	// ps knows the leases and bounds the revisions, for step.
	ps := newPxState(keys)
	var compactedHi int64
	// track follows each key's state while every write is established,
	// from the log's start where it is known.
	track := make([]struct {
		known, exists   bool
		create, version int64
	}, len(keys.names))
	for k := range track {
		track[k].known = s.exact
	}
	// attached holds the keys put with each lease since its last revoke.
	attached := map[int64][]int32{}
	const unknown = "not established: the counting between the revisions the db anchors and the keys' chains of compares do not fix it"
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
		var deleted, revoked []int32
		_, cmpRev, del, lease, kube := kubeShape(pe)
		plain := pe.kind == walfile.KindPut || pe.kind == walfile.KindDeleteRange && !pe.ranged
		unnamed := pe.ranged || pe.kind == walfile.KindLeaseRevoke
		res := st.stepped[i]
		switch {
		case pe.kind == walfile.KindLeaseGrant:
			if _, seen := ps.lease(pe.id); !seen {
				// A lease the log grants is new: etcd makes its id.
				ps.revoke(pe.id)
			}
			res := step(ps, pe.request(keys.names), pe.index)
			we.Outcome, we.Reason = res.outcome, res.reason
		case pe.kind == walfile.KindCompaction:
			// The revision lies between those known around it; the
			// compaction is at most an earlier one of the log, or below
			// the first revision the log made.
			ps.revLo, ps.revHi, ps.compactHi = prevRev[i], nextRev[i]-1, max(compactedHi, firstRev-1)
			res := step(ps, pe.request(keys.names), pe.index)
			we.Outcome, we.Reason = res.outcome, res.reason
			if res.outcome == OutcomeUnknown {
				we.Reason = unknown
			}
			compactedHi = max(compactedHi, pe.id)
		case !unnamed && pe.kind != walfile.KindPut && pe.kind != walfile.KindDeleteRange && pe.kind != walfile.KindTxn:
			we.Outcome, we.Reason = OutcomeSkipped, ""
		case made == 0 && res.partial:
			// It applied; step knew all but whether it deleted a key.
			we.Outcome, we.Reason = OutcomeApplied, "it changed no key"
		case made == 0 && res.outcome != OutcomeUnknown:
			we.Outcome, we.Reason = res.outcome, res.reason
			if res.outcome == OutcomeApplied {
				we.Reason = "it changed no key"
			}
		case unnamed && made == 1 && rev > s.dbK:
			// The db holds what it deleted: its tombstones there.
			we.Outcome, we.Reason, deleted = OutcomeApplied, "", s.tombstones(rev)
		case unnamed:
			// Which keys it deleted is not established: each it may have
			// deleted that the log names is listed, not applied.
			ks := attached[pe.id]
			if pe.ranged {
				ks = keys.inRange(pe.from, pe.end)
			}
			for _, k := range ks {
				rp.newWrite(rp.keyString(keys.names[k]), idx, op{}, true)
			}
		case !kube && !plain:
		case made == 1:
			we.Outcome, we.Reason = OutcomeApplied, ""
			if rev != 0 {
				we.Revision = rev
			} else {
				we.Reason = fmt.Sprintf("applied; its revision is not established: between %d and %d", prevRev[i]+1, nextRev[i]-1)
			}
		case made == 0 && pe.kind == walfile.KindPut:
			// Step knew all but whether its lease exists.
			we.Outcome, we.Reason = OutcomeNotApplied, fmt.Sprintf("lease %x not found (a lease its puts name)", pe.succ[0].lease)
		case made == 0 && kube && del && cmpRev == 0:
			// A delete if the key does not exist: its compare held on
			// an absent key or failed, which is not established.
		case made == 0 && lease != 0:
			we.Outcome, we.Reason = OutcomeNotApplied, "compare failed (the key changed since it was read), or the lease its put names was not found"
		case made == 0:
			we.Outcome, we.Reason = OutcomeNotApplied, "compare failed (the key changed since it was read)"
		}
		if pe.kind == walfile.KindLeaseRevoke {
			ps.revoke(pe.id)
			revoked = attached[pe.id]
			delete(attached, pe.id)
		}
		// A lease grant or a compaction makes no revision, known or not.
		noRev := pe.kind == walfile.KindLeaseGrant || pe.kind == walfile.KindCompaction
		if we.Outcome == OutcomeUnknown && !noRev || made == 1 && rev == 0 {
			if open < 0 {
				open = i
			}
		} else if rev != 0 {
			flush(i - 1)
		}
		rp.counts[pe.kind.String()]++
		for _, ops := range [][]pxOp{pe.succ, pe.fail} {
			for _, op := range ops {
				t := &track[op.key]
				switch {
				case we.Outcome == OutcomeNotApplied, we.Outcome == OutcomeApplied && made == 0:
				case we.Outcome != OutcomeApplied || rev == 0:
					t.known = false
				case op.del:
					t.exists = false
				case !t.exists:
					t.exists, t.create, t.version = true, rev, 1
				default:
					t.version++
				}
				if op.lease != 0 && !op.del && !slices.Contains(attached[op.lease], op.key) {
					attached[op.lease] = append(attached[op.lease], op.key)
				}
				ks := rp.keyString(keys.names[op.key])
				id := rp.newWrite(ks, idx, opOf(op), op.del)
				if we.Outcome != OutcomeApplied || made != 1 {
					continue
				}
				x := &rp.all[id]
				if !op.del {
					x.lease = op.lease
				}
				ks.last = id
				if rev != 0 {
					x.mod = rev
					// The db's live state names the create revision and
					// version of the put that made it.
					switch l := s.live[op.key]; {
					case op.del:
					case t.known:
						x.create, x.version = t.create, t.version
					case l.mod == rev:
						x.create, x.version = l.create, l.version
					case l.create == rev:
						x.create, x.version = rev, 1
					}
					rp.applied = append(rp.applied, id)
				} else {
					rp.unplaced[id] = [2]int64{prevRev[i] + 1, nextRev[i] - 1}
				}
			}
		}
		switch {
		case pe.ranged && deleted == nil && we.Outcome != OutcomeApplied:
			for _, k := range keys.inRange(pe.from, pe.end) {
				track[k].known = false
			}
		case pe.kind == walfile.KindLeaseRevoke && deleted == nil && we.Outcome != OutcomeApplied:
			for _, k := range revoked {
				track[k].known = false
			}
		}
		for _, k := range deleted {
			track[k].exists = false
			ks := rp.keyString(keys.names[k])
			id := rp.newWrite(ks, idx, op{}, true)
			rp.all[id].mod = rev
			ks.last = id
			rp.applied = append(rp.applied, id)
		}
		if made == 1 && rev != 0 && we.Outcome == OutcomeApplied && (pe.ranged || pe.kind == walfile.KindLeaseRevoke) {
			we.Revision = rev
		}
		rp.push(we)
	}
	flush(n - 1)
	rp.sortApplied()
	// The revision before the log, counted back from the first revision
	// known over the entries before it; where some may or may not have
	// made one, only its bounds are: floor and lowest.
	var made, maybe int64
	for _, m := range st.made[:f] {
		made += int64(b2i(m == 1))
		maybe += int64(b2i(m != 0))
	}
	v.floor, v.lowest = firstRev-1-made, firstRev-1-maybe
	if made == maybe {
		v.before = v.floor
	}
	return rp, v
}

// sortApplied puts the applied writes in revision order.
func (r *replay) sortApplied() {
	slices.SortStableFunc(r.applied, func(a, b int32) int { return cmp.Compare(r.all[a].mod, r.all[b].mod) })
}

// opOf is the replay op of a prefix op (its path in the request).
func opOf(o pxOp) op { return op{path: opPath(o)} }
