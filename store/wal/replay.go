package wal

import (
	"fmt"
	"math"
	"slices"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// Outcome says whether a write the log holds was applied to the keyspace.
type Outcome int

// Outcomes of a logged write.
const (
	// OutcomeUnknown: the log does not tell; WALEntry.Reason says why.
	OutcomeUnknown Outcome = iota
	// OutcomeApplied: the write changed the keyspace.
	OutcomeApplied
	// OutcomeNotApplied: the write was rejected or its transaction took
	// the other branch.
	OutcomeNotApplied
	// OutcomeSkipped: the entry writes no key, lease or compaction. It is
	// counted, not modelled.
	OutcomeSkipped
)

func (o Outcome) String() string {
	switch o {
	case OutcomeApplied:
		return "applied"
	case OutcomeNotApplied:
		return "not applied"
	case OutcomeSkipped:
		return "skipped"
	}
	return "unknown"
}

// WALEntry is one raft entry of the log and what became of it.
type WALEntry struct {
	Index, Term uint64
	Kind        walfile.Kind
	// Other names a KindOther entry's request (see walfile.Entry.Other).
	Other   string
	Outcome Outcome
	// Reason explains OutcomeNotApplied and OutcomeUnknown.
	Reason string
	// Revision is the main revision the entry made, 0 for none or not
	// established.
	Revision int64
	pos      walfile.Pos
}

// walWrite is one write of one key by one entry and, when applied at a
// known revision, the key's state after it. It holds no pointer: a long
// log's index costs the garbage collector nothing to scan.
type walWrite struct {
	mod, create, version, lease int64
	key                         int32 // index into replay.keyNames
	entry                       int32 // index into replay.entries
	valueFrom                   int32 // for a put that kept the value: the write that carried it (-1: none; valueFromBase: the db's value)
	deleted                     bool
	// path locates the op in the entry's request, as op.path; depth -1
	// puts it in replay.deepPaths.
	depth int8
	path  [4]int32
}

// walEntry is WALEntry without pointers; note indexes replay.notes.
type walEntry struct {
	index, term uint64
	revision    int64
	pos         walfile.Pos
	note        int32
	kind        walfile.Kind
	outcome     Outcome
}

type walNote struct{ other, reason string }

// keyState is the replay model of one key, with the writes of it.
type keyState struct {
	exists                      bool
	create, mod, version, lease int64
	id                          int32
	last                        int32 // the applied write that made this state (-1: none)
	writes                      []int32
}

// replay applies the log's committed entries in order with step. From the
// first entry whose outcome is not established on, known is false and
// revisions are no longer derived.
type replay struct {
	known      bool
	stopAt     uint64 // the entry at which revisions stopped being derived
	stopWhy    string
	rev        int64
	compactRev int64
	keys       map[string]*keyState
	keyNames   []string
	// slab holds the key states addKey hands out, sized by sizeKeys.
	slab []keyState
	// leases holds the leases known: true granted, false revoked.
	leases  map[int64]bool
	cur     int32 // the entry step is applying
	effects map[int32]effect
	valueOf func(int32) ([]byte, error)
	// baseValue reads a key's value in the db the replay started from.
	baseValue func(key string) ([]byte, error)

	entries   []walEntry
	notes     []walNote
	all       []walWrite
	deepPaths map[int32][]int32
	applied   []int32 // applied writes with revisions, in revision order
	// unplaced holds the prefix's applied writes whose revision is not
	// established, with the revisions they may have.
	unplaced map[int32][2]int64
	counts   map[string]int
}

func newReplay(valueOf func(int32) ([]byte, error)) *replay {
	return &replay{
		rev:       1, // a new etcd's keyspace starts at revision 1
		keys:      map[string]*keyState{},
		leases:    map[int64]bool{},
		effects:   map[int32]effect{},
		deepPaths: map[int32][]int32{},
		unplaced:  map[int32][2]int64{},
		counts:    map[string]int{},
		valueOf:   valueOf,
		known:     true,
	}
}

// keyString returns key's state, made on first use.
func (r *replay) keyString(key string) *keyState {
	if s := r.keys[key]; s != nil {
		return s
	}
	return r.addKey(key)
}

// sizeKeys makes room for n more keys, before they are added.
func (r *replay) sizeKeys(n int) {
	if len(r.keys) == 0 {
		r.keys = make(map[string]*keyState, n)
	}
	r.keyNames = slices.Grow(r.keyNames, n)
	r.slab = make([]keyState, 0, n)
}

// addKey adds key, which r does not know, and returns its state.
func (r *replay) addKey(key string) *keyState {
	var s *keyState
	if n := len(r.slab); n < cap(r.slab) {
		r.slab = r.slab[:n+1]
		s = &r.slab[n]
	} else {
		s = new(keyState)
	}
	*s = keyState{id: int32(len(r.keyNames)), last: -1}
	r.keys[key] = s
	r.keyNames = append(r.keyNames, key)
	return s
}

// push records an entry.
func (r *replay) push(we WALEntry) {
	e := walEntry{index: we.Index, term: we.Term, revision: we.Revision, pos: we.pos, note: -1, kind: we.Kind, outcome: we.Outcome}
	if we.Other != "" || we.Reason != "" {
		e.note = int32(len(r.notes))
		r.notes = append(r.notes, walNote{other: we.Other, reason: we.Reason})
	}
	r.entries = append(r.entries, e)
}

// entry returns entry i as a WALEntry.
func (r *replay) entry(i int32) WALEntry {
	e := r.entries[i]
	we := WALEntry{Index: e.index, Term: e.term, Kind: e.kind, Outcome: e.outcome, Revision: e.revision, pos: e.pos}
	if e.note >= 0 {
		we.Other, we.Reason = r.notes[e.note].other, r.notes[e.note].reason
	}
	return we
}

// newWrite appends a write of key by entry idx and returns its index.
func (r *replay) newWrite(s *keyState, idx int32, o op, del bool) int32 {
	w := walWrite{key: s.id, entry: idx, valueFrom: -1, deleted: del}
	id := int32(len(r.all))
	if len(o.path) <= len(w.path) {
		w.depth = int8(copy(w.path[:], o.path))
	} else {
		w.depth = -1
		r.deepPaths[id] = o.path
	}
	r.all = append(r.all, w)
	s.writes = append(s.writes, id)
	return id
}

// pathOf returns write i's op path.
func (r *replay) pathOf(i int32) []int32 {
	w := &r.all[i]
	if w.depth < 0 {
		return r.deepPaths[i]
	}
	return w.path[:w.depth]
}

// lose stops deriving revisions from entry index on.
func (r *replay) lose(index uint64, why string) {
	if r.known {
		r.known, r.stopAt, r.stopWhy = false, index, why
	}
}

// apply applies one committed entry with etcd's step and records it.
func (r *replay) apply(e walfile.Entry, pos walfile.Pos) {
	we := WALEntry{Index: e.Index, Term: e.Term, Kind: e.Kind, Other: e.Other, pos: pos}
	r.counts[e.Kind.String()]++
	r.cur = int32(len(r.entries))
	res := step(r, e.Request, e.Index)
	we.Outcome, we.Reason = res.outcome, res.reason
	for _, o := range res.tried {
		r.attempt(r.cur, o)
	}
	switch {
	case res.outcome == OutcomeUnknown:
		r.lose(e.Index, fmt.Sprintf("entry %d: %s", e.Index, res.reason))
	case res.changed && r.known:
		r.rev++
		we.Revision = r.rev
	}
	if res.lose != "" {
		r.lose(e.Index, res.lose)
	}
	if len(res.leases) > 0 || res.compacted != 0 {
		r.effects[r.cur] = effect{leases: res.leases, compacted: res.compacted}
	}
	r.push(we)
}

// effect is what an applied entry changed besides keys.
type effect struct {
	leases    []store.LeaseChange
	compacted int64
}

// The replay is step's concrete state: it knows every key, lease and
// revision until an entry's outcome is not established.

func (r *replay) field(key string, t pb.Compare_CompareTarget) (int64, bool) {
	if !r.known {
		return 0, false
	}
	s := r.keys[key]
	switch {
	case s == nil || !s.exists:
		return 0, true
	case t == pb.Compare_CREATE:
		return s.create, true
	case t == pb.Compare_MOD:
		return s.mod, true
	case t == pb.Compare_VERSION:
		return s.version, true
	}
	return s.lease, true
}

func (r *replay) value(key string) ([]byte, bool) {
	s := r.keys[key]
	var v []byte
	var err error
	switch {
	case !r.known || s == nil:
		return nil, false
	case r.valueOf == nil && s.last >= 0:
		return nil, false
	case s.last >= 0:
		v, err = r.valueOf(s.last)
	case r.baseValue != nil:
		v, err = r.baseValue(key)
	}
	return v, err == nil
}

func (r *replay) keysIn(from, end []byte) keySet {
	if len(end) == 0 && r.known {
		// One key: looked up, not found among every key.
		if s := r.keys[string(from)]; s != nil && s.exists {
			return keySet{live: []string{string(from)}}
		}
		return keySet{}
	}
	all := len(end) == 1 && end[0] == 0
	return r.liveKeys(func(k string, _ *keyState) bool { return k >= string(from) && (all || k < string(end)) })
}

func (r *replay) lease(id int64) (exists, known bool) {
	if v, ok := r.leases[id]; ok {
		return v, true
	}
	return false, r.known
}

func (r *replay) leaseKeys(id int64) keySet {
	return r.liveKeys(func(_ string, s *keyState) bool { return s.lease == id })
}

// liveKeys lists the live keys in, in key order.
func (r *replay) liveKeys(in func(string, *keyState) bool) keySet {
	if !r.known {
		return keySet{unsure: true, unnamed: true}
	}
	var ks keySet
	for k, s := range r.keys {
		if s.exists && in(k, s) {
			ks.live = append(ks.live, k)
		}
	}
	sort.Strings(ks.live)
	return ks
}

// revisions: once not known, the revisions are at least what they were.
func (r *replay) revisions() (revLo, revHi, compactLo, compactHi int64) {
	if !r.known {
		return r.rev, math.MaxInt64, r.compactRev, math.MaxInt64
	}
	return r.rev, r.rev, r.compactRev, r.compactRev
}

func (r *replay) put(key string, o op) {
	if !r.known {
		// Applied, but its revision is not established.
		r.attempt(r.cur, o)
		r.keyString(key).exists = true
		return
	}
	r.record(r.cur, key, o, false)
}

func (r *replay) del(key string, o op) {
	if !r.known {
		r.attempt(r.cur, o)
		return
	}
	r.record(r.cur, key, o, true)
}

func (r *replay) grant(id int64)    { r.leases[id] = true }
func (r *replay) revoke(id int64)   { r.leases[id] = false }
func (r *replay) compact(rev int64) { r.compactRev = rev }

// record applies one key write at revision r.rev+1; apply bumps r.rev.
func (r *replay) record(idx int32, key string, o op, del bool) {
	rev := r.rev + 1
	s := r.keyString(key)
	id := r.newWrite(s, idx, o, del)
	w := &r.all[id]
	if del {
		s.exists, s.create, s.mod, s.version, s.lease = false, 0, rev, 0, 0
		w.mod = rev
	} else {
		p := o.put
		if !s.exists {
			s.create, s.version = rev, 0
		}
		s.exists = true
		s.mod = rev
		s.version++
		if !p.IgnoreLease {
			s.lease = p.Lease
		}
		switch {
		case p.IgnoreValue && s.last >= 0:
			w.valueFrom = s.last
			if from := r.all[s.last].valueFrom; from != -1 {
				w.valueFrom = from
			}
		case p.IgnoreValue && r.baseValue != nil:
			w.valueFrom = valueFromBase
		}
		w.mod, w.create, w.version, w.lease = s.mod, s.create, s.version, s.lease
	}
	s.last = id
	r.applied = append(r.applied, id)
}

// attempt records a write without a revision in the key's story.
func (r *replay) attempt(idx int32, o op) {
	switch {
	case o.put != nil:
		r.newWrite(r.keyString(string(o.put.Key)), idx, o, false)
	case o.del != nil && len(o.del.RangeEnd) == 0:
		r.newWrite(r.keyString(string(o.del.Key)), idx, o, true)
	}
	// A range delete whose keys are not known is in the entry only.
}
