package wal

import (
	"bytes"
	"cmp"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/store"
)

// step applies one raft entry's request as etcd's apply loop does: its
// txn package for puts, deletes and transactions, mvcc for revisions and
// compaction, lease for leases. It is the one place these rules are
// written, as one Step function is in etcd's robustness model. A replay
// from raft index 1 or from a db knows every key, lease and revision; the
// state of the entries the db holds does not know what was before the
// log. Where a rule needs what the state does not know, the outcome is
// unknown: step never guesses. It still applies what holds either way:
// after a range delete, no key of its range is live.

// stepState is what step reads of a keyspace, and how it changes it.
type stepState interface {
	// field returns key's create or mod revision, version or lease, 0
	// where the key does not exist.
	field(key string, t pb.Compare_CompareTarget) (v int64, known bool)
	// value returns a live key's value.
	value(key string) (v []byte, known bool)
	// keysIn says which keys are live in etcd's range [from, end): end
	// empty names the key alone, end "\x00" every key from from on.
	keysIn(from, end []byte) keySet
	// lease reports whether lease id exists.
	lease(id int64) (exists, known bool)
	// leaseKeys says which live keys are attached to lease id.
	leaseKeys(id int64) keySet
	// revisions bounds the current and the compaction revision.
	revisions() (revLo, revHi, compactLo, compactHi int64)

	// put and del change one key at the entry's revision; grant and
	// revoke make the lease exist or not, whatever it was.
	put(key string, o op)
	del(key string, o op)
	grant(id int64)
	revoke(id int64)
	compact(rev int64)
}

// keySet is what a state knows of the keys a range delete or a revoke
// deletes. live lists, in key order, the keys it deletes for certain;
// gone, keys it names that are not live after it whatever they were
// before. unsure says it may delete keys that live does not list;
// unnamed, that some of them may be keys the state cannot name at all.
type keySet struct {
	live, gone      []string
	unsure, unnamed bool
}

// known reports whether live lists every key that was live.
func (ks keySet) known() bool { return !ks.unsure && len(ks.gone) == 0 }

// op is one write an entry asks for; path holds its branchIndex at each
// level of transactions.
type op struct {
	put  *pb.PutRequest
	del  *pb.DeleteRangeRequest
	rng  *pb.RangeRequest
	path []int32
}

// stepResult is what became of one entry.
type stepResult struct {
	outcome Outcome
	reason  string
	// changed says a key changed: the entry made a revision. tried
	// lists the writes asked for that step did not apply.
	changed   bool
	tried     []op
	leases    []store.LeaseChange
	compacted int64
	// lose says why the rules from this entry on are not modelled.
	lose string
	// partial says the request applied and only whether it deleted a
	// key is unknown: that alone makes the outcome unknown. unnamed says
	// it may have deleted keys the state cannot name.
	partial, unnamed bool
}

// etcdMinLeaseTTL is the shortest TTL etcd's lessor keeps with its
// default election timeout, 1.5 × 10 ticks × 100 ms rounded up.
const etcdMinLeaseTTL = 2

// step applies req to st; index names the entry in what it says.
func step(st stepState, req *pb.InternalRaftRequest, index uint64) stepResult {
	var res stepResult
	switch {
	case req == nil:
		res.outcome = OutcomeSkipped
	case req.Put != nil:
		res = stepWrite(st, []op{{put: req.Put}})
	case req.DeleteRange != nil:
		res = stepWrite(st, []op{{del: req.DeleteRange}})
	case req.Txn != nil:
		res = stepTxn(st, req.Txn)
	case req.LeaseGrant != nil:
		res = stepGrant(st, req.LeaseGrant)
	case req.LeaseRevoke != nil:
		res = stepRevoke(st, req.LeaseRevoke.ID)
	case req.Compaction != nil:
		res = stepCompact(st, req.Compaction.Revision)
	default:
		res.outcome = OutcomeSkipped
		switch {
		case req.LeaseCheckpoint != nil:
			for _, c := range req.LeaseCheckpoint.GetCheckpoints() {
				res.leases = append(res.leases, store.LeaseChange{ID: c.ID, Checkpoint: true, Remaining: c.Remaining_TTL})
			}
		case req.AuthEnable != nil:
			res.lose = fmt.Sprintf("entry %d enables authentication: permission checks are not modelled", index)
		case req.Alarm != nil && req.Alarm.Action == pb.AlarmRequest_ACTIVATE:
			res.lose = fmt.Sprintf("entry %d raises the %v alarm: writes refused under it are not modelled", index, req.Alarm.Alarm)
		}
	}
	return res
}

// stepTxn applies a transaction as etcd does: every compare, nested ones
// too, against the state before it, then the path taken checked and
// applied in order.
func stepTxn(st stepState, t *pb.TxnRequest) stepResult {
	ops, ok, known, why := txnPath(st, t, nil)
	if !known {
		return stepResult{outcome: OutcomeUnknown, reason: why, tried: writeOps(requestOps(t, nil))}
	}
	if ok || len(writeOps(ops)) > 0 {
		return stepWrite(st, ops)
	}
	return stepResult{outcome: OutcomeNotApplied, reason: "compare failed (the key changed since it was read)", tried: writeOps(branchOps(t.Success, nil, true))}
}

// txnPath evaluates t's compares and returns the ops of the path taken,
// nested transactions' included; ok is whether t's own compares held.
func txnPath(st stepState, t *pb.TxnRequest, path []int32) (ops []op, ok, known bool, why string) {
	ok = true
	for _, c := range t.Compare {
		res, k := compare(st, c)
		if !k {
			return nil, false, false, fmt.Sprintf("compare on %s: the key's state is unknown here", c.Key)
		}
		if !res {
			ok = false
			break
		}
	}
	branch := t.Failure
	if ok {
		branch = t.Success
	}
	for i, u := range branch {
		p := append(append([]int32(nil), path...), branchIndex(i, ok))
		if x, nested := u.Request.(*pb.RequestOp_RequestTxn); nested {
			sub, _, k, w := txnPath(st, x.RequestTxn, p)
			if !k {
				return nil, false, false, w
			}
			ops = append(ops, sub...)
			continue
		}
		ops = append(ops, leafOp(u, p)...)
	}
	return ops, ok, true, ""
}

// stepWrite checks and applies a request's writes. A delete whose keys
// the state does not all know deletes those it knows; unless a key
// changed, the outcome is then unknown.
func stepWrite(st stepState, ops []op) stepResult {
	if why, known := check(st, ops); !known {
		return stepResult{outcome: OutcomeUnknown, reason: why, tried: writeOps(ops)}
	} else if why != "" {
		return stepResult{outcome: OutcomeNotApplied, reason: why, tried: writeOps(ops)}
	}
	res := stepResult{outcome: OutcomeApplied}
	unsure := false
	for _, o := range ops {
		switch {
		case o.put != nil:
			st.put(string(o.put.Key), o)
			res.changed = true
		case o.del != nil:
			ks := st.keysIn(o.del.Key, o.del.RangeEnd)
			res.changed = deleteKeys(st, ks, o) || res.changed
			if !ks.known() {
				unsure, res.unnamed = true, res.unnamed || ks.unnamed
				res.tried = append(res.tried, o)
			}
		}
	}
	if unsure && !res.changed {
		res.outcome, res.reason, res.partial = OutcomeUnknown, "the keys it deletes are not all known here", true
	}
	return res
}

// deleteKeys deletes ks's keys and reports whether any was live.
func deleteKeys(st stepState, ks keySet, o op) bool {
	for _, k := range ks.live {
		st.del(k, o)
	}
	for _, k := range ks.gone {
		st.del(k, o)
	}
	return len(ks.live) > 0
}

// check makes etcd's checks before a write: a range reads no future or
// compacted revision, a put's lease exists, a put that keeps the value or
// lease finds its key. why is "" when the write may go ahead.
func check(st stepState, ops []op) (why string, known bool) {
	revLo, revHi, compactLo, compactHi := st.revisions()
	for _, o := range ops {
		switch {
		case o.rng != nil && o.rng.Revision != 0:
			switch r := o.rng.Revision; {
			case r > revHi:
				return "a range in the transaction reads a future revision", true
			case r < compactLo:
				// etcd reads at the compaction revision itself.
				return "a range in the transaction reads a compacted revision", true
			case r > revLo || r < compactHi:
				return "a range in the transaction reads a revision that may be future or compacted", false
			}
		case o.put != nil:
			p := o.put
			if p.Lease != 0 {
				switch exists, k := st.lease(p.Lease); {
				case !k:
					return fmt.Sprintf("lease %x may exist from before the log", p.Lease), false
				case !exists:
					return fmt.Sprintf("lease %x not found", p.Lease), true
				}
			}
			if p.IgnoreLease || p.IgnoreValue {
				switch mod, k := st.field(string(p.Key), pb.Compare_MOD); {
				case !k:
					return "the state of the keys before the log is unknown", false
				case mod == 0:
					return "key not found (put ignoring value or lease)", true
				}
			}
		}
	}
	return "", true
}

// compare evaluates a compare as etcd does: over every live key of its
// range; on no key as on a key with every field 0, but a value compare
// fails.
func compare(st stepState, c *pb.Compare) (result, known bool) {
	ks := st.keysIn(c.Key, c.RangeEnd)
	if !ks.known() {
		return false, false
	}
	keys := ks.live
	if len(keys) == 0 {
		return c.Target != pb.Compare_VALUE && compareResult(c.Result, cmp.Compare(0, compareOperand(c))), true
	}
	for _, key := range keys {
		var res int
		if c.Target == pb.Compare_VALUE {
			v, k := st.value(key)
			if !k {
				return false, false
			}
			res = bytes.Compare(v, c.GetValue())
		} else {
			v, k := st.field(key, c.Target)
			if !k {
				return false, false
			}
			res = cmp.Compare(v, compareOperand(c))
		}
		if !compareResult(c.Result, res) {
			return false, true
		}
	}
	return true, true
}

// compareOperand is the revision, version or lease c compares with.
func compareOperand(c *pb.Compare) int64 {
	switch c.Target {
	case pb.Compare_CREATE:
		return c.GetCreateRevision()
	case pb.Compare_MOD:
		return c.GetModRevision()
	case pb.Compare_VERSION:
		return c.GetVersion()
	case pb.Compare_LEASE:
		return c.GetLease()
	}
	return 0
}

// compareResult reports whether the sign res satisfies r.
func compareResult(r pb.Compare_CompareResult, res int) bool {
	switch r {
	case pb.Compare_EQUAL:
		return res == 0
	case pb.Compare_NOT_EQUAL:
		return res != 0
	case pb.Compare_GREATER, pb.Compare_LESS:
		return res != 0 && res > 0 == (r == pb.Compare_GREATER)
	}
	// etcd takes a result it does not know for true.
	return true
}

// stepGrant grants a lease; etcd refuses an id that exists.
func stepGrant(st stepState, g *pb.LeaseGrantRequest) stepResult {
	exists, known := st.lease(g.ID)
	st.grant(g.ID)
	switch {
	case !known:
		return stepResult{outcome: OutcomeUnknown, reason: "lease may exist from before the log"}
	case exists:
		return stepResult{outcome: OutcomeNotApplied, reason: "lease already exists"}
	}
	lc := store.LeaseChange{ID: g.ID, TTL: g.TTL}
	if g.TTL < etcdMinLeaseTTL {
		lc.TTL, lc.AskedTTL = etcdMinLeaseTTL, g.TTL
	}
	return stepResult{outcome: OutcomeApplied, leases: []store.LeaseChange{lc}}
}

// stepRevoke revokes a lease, deleting its keys in one revision. The
// lease does not exist after it, whatever it found.
func stepRevoke(st stepState, id int64) stepResult {
	exists, known := st.lease(id)
	ks := st.leaseKeys(id)
	res := stepResult{outcome: OutcomeUnknown, reason: "lease may exist from before the log", unnamed: ks.unnamed}
	switch {
	case known && !exists:
		res = stepResult{outcome: OutcomeNotApplied, reason: "lease not found"}
	case known:
		res = stepResult{outcome: OutcomeApplied, changed: deleteKeys(st, ks, op{}), unnamed: ks.unnamed}
		if !ks.known() && !res.changed {
			res.outcome, res.reason, res.partial = OutcomeUnknown, "keys attached to the lease before the log are unknown", true
		} else {
			res.leases = []store.LeaseChange{{ID: id, Revoke: true}}
		}
	}
	st.revoke(id)
	return res
}

// stepCompact compacts to rev; etcd refuses a future revision and one
// compacted already.
func stepCompact(st stepState, rev int64) stepResult {
	revLo, revHi, compactLo, compactHi := st.revisions()
	switch {
	case rev > revHi:
		return stepResult{outcome: OutcomeNotApplied, reason: "compaction revision in the future"}
	case rev <= compactLo:
		return stepResult{outcome: OutcomeNotApplied, reason: "already compacted"}
	case rev > revLo || rev <= compactHi:
		return stepResult{outcome: OutcomeUnknown, reason: "revisions are not established here"}
	}
	st.compact(rev)
	return stepResult{outcome: OutcomeApplied, compacted: rev}
}

func branchIndex(i int, succ bool) int32 {
	if succ {
		return int32(i)
	}
	return int32(-i - 1)
}

// leafOp is the op of a put, delete or range, with its path.
func leafOp(u *pb.RequestOp, path []int32) []op {
	switch x := u.Request.(type) {
	case *pb.RequestOp_RequestPut:
		return []op{{put: x.RequestPut, path: path}}
	case *pb.RequestOp_RequestDeleteRange:
		return []op{{del: x.RequestDeleteRange, path: path}}
	case *pb.RequestOp_RequestRange:
		return []op{{rng: x.RequestRange, path: path}}
	}
	return nil
}

// branchOps lists every op of a branch, in both branches of each nested
// transaction.
func branchOps(branch []*pb.RequestOp, path []int32, succ bool) []op {
	var ops []op
	for i, u := range branch {
		p := append(append([]int32(nil), path...), branchIndex(i, succ))
		if x, nested := u.Request.(*pb.RequestOp_RequestTxn); nested {
			ops = append(ops, requestOps(x.RequestTxn, p)...)
			continue
		}
		ops = append(ops, leafOp(u, p)...)
	}
	return ops
}

// requestOps lists every op of a transaction in both its branches.
func requestOps(t *pb.TxnRequest, path []int32) []op {
	return append(branchOps(t.Success, path, true), branchOps(t.Failure, path, false)...)
}

// entryOps lists every write a request may make, in every branch.
func entryOps(req *pb.InternalRaftRequest) []op {
	switch {
	case req == nil:
	case req.Put != nil:
		return []op{{put: req.Put}}
	case req.DeleteRange != nil:
		return []op{{del: req.DeleteRange}}
	case req.Txn != nil:
		return writeOps(requestOps(req.Txn, nil))
	}
	return nil
}

// writeOps keeps the puts and deletes of ops.
func writeOps(ops []op) []op {
	out := ops[:0:0]
	for _, o := range ops {
		if o.rng == nil {
			out = append(out, o)
		}
	}
	return out
}
