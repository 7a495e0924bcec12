package wal

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/walread"
)

// Outcome says whether a write the log holds was applied to the keyspace.
type Outcome int

// Outcomes of a logged write.
const (
	// OutcomeUnknown: the log alone does not tell (a compare on a key whose
	// state before the log is unknown, an entry past the last commit index
	// the log records, ...). WALEntry.Reason says why.
	OutcomeUnknown Outcome = iota
	// OutcomeApplied: the write changed the keyspace.
	OutcomeApplied
	// OutcomeNotApplied: the write was rejected or its transaction took the
	// other branch; WALEntry.Reason says why.
	OutcomeNotApplied
	// OutcomeSkipped: the entry does not write keys, leases or compaction
	// (membership, cluster version, auth, alarms, empty entries): it is
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
	Kind        walread.Kind
	// Other names a KindOther entry's request (see walread.Entry.Other).
	Other   string
	Outcome Outcome
	// Reason explains OutcomeNotApplied and OutcomeUnknown.
	Reason string
	// Revision is the main revision the entry's writes got (0 when it
	// wrote nothing or its revision is not established).
	Revision int64
	pos      walread.Pos
}

// walWrite is one write of one key by one entry: what the entry asked, and,
// when applied with a known revision, the key's state after it. It holds no
// pointer, so that the index of a long log costs the garbage collector
// nothing to scan.
type walWrite struct {
	mod, create, version, lease int64
	key                         int32 // index into replay.keyNames
	entry                       int32 // index into replay.entries
	valueFrom                   int32 // for a put that kept the value: the write that carried it (-1: none; valueFromBase: the db's value)
	deleted                     bool
	// path locates the PutRequest inside the entry's request: transaction
	// op indices, success branch op i as i, failure branch op i as -i-1.
	// depth -1: the path is in replay.deepPaths.
	depth int8
	path  [4]int32
}

// walEntry is WALEntry without pointers; note indexes replay.notes.
type walEntry struct {
	index, term uint64
	revision    int64
	pos         walread.Pos
	note        int32
	kind        walread.Kind
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

// replay applies the log's committed entries in order over a key-state
// model. Started from an empty keyspace (a log that begins at raft index
// 1), every outcome is determined and every applied write gets its
// revision; from the first entry whose outcome cannot be determined on,
// revisions are no longer derived (known turns false).
type replay struct {
	known    bool
	stopAt   uint64 // the entry at which revisions stopped being derived
	stopWhy  string
	rev      int64
	compact  int64
	keys     map[string]*keyState
	keyNames []string
	// slab, when sized (sizeKeys), holds the key states addKey hands out
	// (one allocation for the db's keys, not one each).
	slab    []keyState
	leases  map[int64]bool // granted and not revoked
	valueOf func(int32) ([]byte, error)
	// baseValue, when not nil, reads a key's value in the db the replay
	// started from (for a key the log has not written yet).
	baseValue func(key string) ([]byte, error)

	entries   []walEntry
	notes     []walNote
	all       []walWrite
	deepPaths map[int32][]int32
	applied   []int32 // applied writes with revisions, in revision order
	// unplaced holds the applied writes whose revision is not established
	// (a stretch of the log's entries the db holds that nothing anchors),
	// with the revisions they may have: their order among the key's
	// writes is the log's.
	unplaced map[int32][2]int64
	counts   map[string]int
}

func newReplay(valueOf func(int32) ([]byte, error)) *replay {
	return &replay{
		rev:       1, // a new etcd's keyspace starts at revision 1
		keys:      map[string]*keyState{},
		leases:    map[int64]bool{},
		deepPaths: map[int32][]int32{},
		unplaced:  map[int32][2]int64{},
		counts:    map[string]int{},
		valueOf:   valueOf,
		known:     true,
	}
}

// key returns key's state, made on first use.
func (r *replay) key(key []byte) *keyState {
	if s := r.keys[string(key)]; s != nil {
		return s
	}
	return r.addKey(string(key))
}

// keyString is key with the key as a string (not copied again).
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

// op is one write an entry asks for, with where its put lives.
type op struct {
	put  *pb.PutRequest
	del  *pb.DeleteRangeRequest
	path []int32
}

// apply applies one committed entry and records it.
func (r *replay) apply(e walread.Entry, pos walread.Pos) {
	we := WALEntry{Index: e.Index, Term: e.Term, Kind: e.Kind, Other: e.Other, pos: pos}
	r.counts[e.Kind.String()]++
	idx := int32(len(r.entries))
	switch e.Kind {
	case walread.KindPut, walread.KindDeleteRange, walread.KindTxn:
		r.applyWrite(&we, idx, e.Request)
	case walread.KindLeaseGrant:
		id := e.Request.LeaseGrant.ID
		switch {
		case r.leases[id]:
			we.Outcome, we.Reason = OutcomeNotApplied, "lease already exists"
		case !r.known:
			we.Outcome, we.Reason = OutcomeUnknown, "lease may exist from before the log"
			r.leases[id] = true
		default:
			we.Outcome = OutcomeApplied
			r.leases[id] = true
		}
	case walread.KindLeaseRevoke:
		id := e.Request.LeaseRevoke.ID
		if !r.leases[id] {
			if r.known {
				we.Outcome, we.Reason = OutcomeNotApplied, "lease not found"
			} else {
				we.Outcome, we.Reason = OutcomeUnknown, "lease may exist from before the log"
			}
			break
		}
		delete(r.leases, id)
		if !r.known {
			we.Outcome, we.Reason = OutcomeUnknown, "keys attached to the lease before the log are unknown"
			break
		}
		var keys []string
		for k, s := range r.keys {
			if s.exists && s.lease == id {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		we.Outcome = OutcomeApplied
		if len(keys) > 0 {
			for _, k := range keys {
				r.record(idx, k, op{}, true)
			}
			r.rev++
			we.Revision = r.rev
		}
	case walread.KindCompaction:
		c := e.Request.Compaction.Revision
		switch {
		case !r.known:
			we.Outcome, we.Reason = OutcomeUnknown, "revisions are not established here"
		case c > r.rev:
			we.Outcome, we.Reason = OutcomeNotApplied, "compaction revision in the future"
		case c <= r.compact:
			we.Outcome, we.Reason = OutcomeNotApplied, "already compacted"
		default:
			we.Outcome = OutcomeApplied
			r.compact = c
		}
	default:
		we.Outcome = OutcomeSkipped
		if req := e.Request; req != nil {
			// Apply rules these change are not modelled: stop deriving
			// revisions rather than guess.
			switch {
			case req.AuthEnable != nil:
				r.lose(e.Index, fmt.Sprintf("entry %d enables authentication: permission checks are not modelled", e.Index))
			case req.Alarm != nil && req.Alarm.Action == pb.AlarmRequest_ACTIVATE:
				r.lose(e.Index, fmt.Sprintf("entry %d raises the %v alarm: writes refused under it are not modelled", e.Index, req.Alarm.Alarm))
			}
		}
	}
	r.push(we)
}

// applyWrite applies a Put, DeleteRange or Txn.
func (r *replay) applyWrite(we *WALEntry, idx int32, req *pb.InternalRaftRequest) {
	var ops []op
	var why string
	ok := true
	decided := true
	switch {
	case req.Put != nil:
		ops = []op{{put: req.Put}}
	case req.DeleteRange != nil:
		ops = []op{{del: req.DeleteRange}}
	default:
		ops, ok, decided, why = r.txnOps(req.Txn, nil, r.rev)
	}
	if decided && ok {
		if err := r.check(ops); err != "" {
			ok, why = false, err
		} else if !r.known && !r.unconditional(ops) {
			decided, why = false, "the state of the keys before the log is unknown"
		}
	}
	if !decided {
		we.Outcome, we.Reason = OutcomeUnknown, why
		// Record what the entry would have written, for the key's story.
		for _, o := range ops {
			r.attempt(idx, o)
		}
		r.lose(we.Index, fmt.Sprintf("entry %d: %s", we.Index, why))
		return
	}
	if !ok {
		we.Outcome, we.Reason = OutcomeNotApplied, why
		for _, o := range ops {
			r.attempt(idx, o)
		}
		return
	}
	we.Outcome = OutcomeApplied
	if !r.known {
		// Applied, but its revision is not established.
		for _, o := range ops {
			r.attempt(idx, o)
			if o.put != nil {
				r.key(o.put.Key).exists = true
			}
		}
		return
	}
	rev := r.rev + 1
	changed := false
	for _, o := range ops {
		if o.put != nil {
			r.record(idx, string(o.put.Key), o, false)
			changed = true
			continue
		}
		for _, k := range r.rangeKeys(o.del.Key, o.del.RangeEnd) {
			r.record(idx, k, o, true)
			changed = true
		}
	}
	if changed {
		r.rev = rev
		we.Revision = rev
	}
}

// unconditional reports whether ops apply whatever the keys' prior state
// (plain puts; the lease check was made).
func (r *replay) unconditional(ops []op) bool {
	for _, o := range ops {
		if o.put == nil || o.put.IgnoreLease || o.put.IgnoreValue || (o.put.Lease != 0 && !r.leases[o.put.Lease]) {
			return false
		}
	}
	return true
}

// txnOps evaluates a transaction's compares (all against the state before
// the transaction, as etcd does) and returns the writes of the branch taken.
// decided is false when a compare cannot be evaluated; then ops are the
// writes of both branches.
func (r *replay) txnOps(t *pb.TxnRequest, path []int32, rev int64) (ops []op, ok, decided bool, why string) {
	succ := true
	for _, c := range t.Compare {
		res, known := r.compare(c)
		if !known {
			all := r.branchOps(t.Success, path, true)
			all = append(all, r.branchOps(t.Failure, path, false)...)
			return all, false, false, fmt.Sprintf("compare on %s: the key's state is unknown here", c.Key)
		}
		if !res {
			succ = false
			break
		}
	}
	branch := t.Success
	if !succ {
		branch = t.Failure
	}
	for i, u := range branch {
		p := append(append([]int32(nil), path...), branchIndex(i, succ))
		switch x := u.Request.(type) {
		case *pb.RequestOp_RequestPut:
			ops = append(ops, op{put: x.RequestPut, path: p})
		case *pb.RequestOp_RequestDeleteRange:
			ops = append(ops, op{del: x.RequestDeleteRange, path: p})
		case *pb.RequestOp_RequestRange:
			rr := x.RequestRange
			if rr.Revision > rev {
				return nil, false, true, "a range in the transaction reads a future revision"
			}
			if rr.Revision > 0 && rr.Revision < r.compact {
				// etcd reads at the compaction revision itself.
				return nil, false, true, "a range in the transaction reads a compacted revision"
			}
		case *pb.RequestOp_RequestTxn:
			sub, subOK, subDecided, subWhy := r.txnOps(x.RequestTxn, p, rev)
			if !subDecided || !subOK {
				return append(ops, sub...), subOK, subDecided, subWhy
			}
			ops = append(ops, sub...)
		}
	}
	if !succ {
		// The success branch's writes are what the transaction meant to
		// do: record them as not applied unless the failure branch writes.
		if len(ops) == 0 {
			return r.branchOps(t.Success, path, true), false, true, "compare failed (the key changed since it was read)"
		}
	}
	return ops, true, true, ""
}

func branchIndex(i int, succ bool) int32 {
	if succ {
		return int32(i)
	}
	return int32(-i - 1)
}

// branchOps lists a branch's writes without evaluating anything.
func (r *replay) branchOps(branch []*pb.RequestOp, path []int32, succ bool) []op {
	var ops []op
	for i, u := range branch {
		p := append(append([]int32(nil), path...), branchIndex(i, succ))
		switch x := u.Request.(type) {
		case *pb.RequestOp_RequestPut:
			ops = append(ops, op{put: x.RequestPut, path: p})
		case *pb.RequestOp_RequestDeleteRange:
			ops = append(ops, op{del: x.RequestDeleteRange, path: p})
		case *pb.RequestOp_RequestTxn:
			ops = append(ops, r.branchOps(x.RequestTxn.Success, p, true)...)
			ops = append(ops, r.branchOps(x.RequestTxn.Failure, p, false)...)
		}
	}
	return ops
}

// check applies etcd's checks before a write: a put's lease must exist, and
// a put that keeps the value or lease needs the key to exist.
func (r *replay) check(ops []op) string {
	for _, o := range ops {
		if o.put == nil {
			continue
		}
		if o.put.Lease != 0 && !o.put.IgnoreLease && !r.leases[o.put.Lease] {
			if !r.known {
				continue // may have been granted before the log; unconditional() decides
			}
			return fmt.Sprintf("lease %x not found", o.put.Lease)
		}
		if o.put.IgnoreLease || o.put.IgnoreValue {
			if s := r.keys[string(o.put.Key)]; r.known && (s == nil || !s.exists) {
				return "key not found (put ignoring value or lease)"
			}
		}
	}
	return ""
}

// compare evaluates one compare; known is false when it cannot.
func (r *replay) compare(c *pb.Compare) (result, known bool) {
	if !r.known {
		return false, false
	}
	keys := r.rangeKeys(c.Key, c.RangeEnd)
	if len(keys) == 0 {
		if c.Target == pb.Compare_VALUE {
			return false, true
		}
		return compareState(c, &keyState{}, nil), true
	}
	for _, k := range keys {
		s := r.keys[k]
		var v []byte
		if c.Target == pb.Compare_VALUE {
			var err error
			switch {
			case r.valueOf == nil && s.last >= 0:
				return false, false
			case s.last >= 0:
				v, err = r.valueOf(s.last)
			case r.baseValue != nil:
				v, err = r.baseValue(k)
			}
			if err != nil {
				return false, false
			}
		}
		if !compareState(c, s, v) {
			return false, true
		}
	}
	return true, true
}

func compareState(c *pb.Compare, s *keyState, value []byte) bool {
	var res int
	cmp := func(a, b int64) int {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	switch c.Target {
	case pb.Compare_VALUE:
		res = bytes.Compare(value, c.GetValue())
	case pb.Compare_CREATE:
		res = cmp(s.create, c.GetCreateRevision())
	case pb.Compare_MOD:
		res = cmp(s.mod, c.GetModRevision())
	case pb.Compare_VERSION:
		res = cmp(s.version, c.GetVersion())
	case pb.Compare_LEASE:
		res = cmp(s.lease, c.GetLease())
	}
	switch c.Result {
	case pb.Compare_EQUAL:
		return res == 0
	case pb.Compare_NOT_EQUAL:
		return res != 0
	case pb.Compare_GREATER:
		return res > 0
	case pb.Compare_LESS:
		return res < 0
	}
	return true
}

// rangeKeys lists the existing keys in [key, end) (end empty: key alone;
// end "\x00": every key from key on), sorted.
func (r *replay) rangeKeys(key, end []byte) []string {
	if len(end) == 0 {
		if s := r.keys[string(key)]; s != nil && s.exists {
			return []string{string(key)}
		}
		return nil
	}
	all := len(end) == 1 && end[0] == 0
	var keys []string
	for k, s := range r.keys {
		if s.exists && k >= string(key) && (all || k < string(end)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// record applies one key write at revision r.rev+1 (the caller bumps
// r.rev afterwards) and appends it to the key's writes.
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

// attempt records a write that was not applied, or whose outcome or
// revision is unknown, in the key's story (no revision).
func (r *replay) attempt(idx int32, o op) {
	switch {
	case o.put != nil:
		r.newWrite(r.key(o.put.Key), idx, o, false)
	case len(o.del.RangeEnd) == 0:
		r.newWrite(r.key(o.del.Key), idx, o, true)
	}
	// A range delete whose keys are not known is in the entry only.
}
