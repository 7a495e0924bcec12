package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/walread"
)

// The entries a member's log holds at or below its db's consistent index
// (the "prefix") are already in the db, but the db has usually compacted
// their revisions away: an object deleted an hour ago is in the log and in
// no revision of the db. The prefix is worked out backwards from the db:
//
//   - Every applied write adds one revision; the db's revision is the
//     revision after the prefix's last entry. So the revision before the
//     prefix (X) is the db's revision less the number of applied
//     revision-making entries in it.
//   - The state of a key before the log is not in the log; kube-apiserver
//     writes through transactions that compare the key's mod revision (or,
//     for its compaction key, version) with what it read. The first compare
//     on a key the log has not written is taken to hold, which gives the
//     key's state before the log; every later compare is evaluated.
//   - A lease revoked in the prefix that was granted before the log may
//     have had keys attached before the log: whether its revoke made a
//     revision is not known there. Such a revoke starts a segment whose
//     first revision is fixed by the first compare that names a revision
//     written in the segment (or, at the end, by the db's revision).
//   - The result is then checked against the db: every key the prefix
//     wrote or compared must end as the db holds it (existence, mod and
//     create revision, version, lease, value), no other key may have
//     changed after X, leases and the compaction must agree. Only then are
//     the outcomes and revisions reported as established; otherwise the
//     prefix's writes are listed with an unknown outcome, and why.
//
// A log that starts at raft index 1 needs no assumption: it is replayed
// from an empty keyspace and checked against the db the same way.

// valueSeed hashes values: the prefix keeps a hash of each value, not the
// value (memory bounded by the number of writes, not the log's size).
var valueSeed = maphash.MakeSeed()

func valueHash(v []byte) uint64 { return maphash.Bytes(valueSeed, v) }

// pxEntry is a prefix entry whose puts hold the hash of their value
// instead of the value (see stripValues).
type pxEntry struct {
	e   walread.Entry
	pos walread.Pos
}

// stripValues returns e with each put's value replaced by its 8-byte hash,
// in a copy that shares no memory with the record it was decoded from (so
// that the record's buffer, values included, is not kept).
func stripValues(e walread.Entry) walread.Entry {
	if e.Request == nil {
		return e
	}
	put := func(p *pb.PutRequest) {
		p.Value = binary.LittleEndian.AppendUint64(nil, valueHash(p.Value))
	}
	var txn func(t *pb.TxnRequest)
	txn = func(t *pb.TxnRequest) {
		for _, b := range [][]*pb.RequestOp{t.Success, t.Failure} {
			for _, u := range b {
				switch x := u.Request.(type) {
				case *pb.RequestOp_RequestPut:
					put(x.RequestPut)
				case *pb.RequestOp_RequestTxn:
					txn(x.RequestTxn)
				}
			}
		}
	}
	switch {
	case e.Request.Put != nil:
		put(e.Request.Put)
	case e.Request.Txn != nil:
		txn(e.Request.Txn)
	}
	e.Request = proto.Clone(e.Request).(*pb.InternalRaftRequest)
	return e
}

// putHash is the hash stripValues left in a put.
func putHash(p *pb.PutRequest) uint64 {
	if len(p.Value) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(p.Value)
}

// pxKey is the model of one key in the prefix. Revisions are either
// absolute (assumed from a compare, before the log) or relative: counted
// in the prefix's applied writes (see pxSolver.abs).
type pxKey struct {
	exists int8 // -1 unknown, 0 absent, 1 present
	// pre is what the key was before the log (-1 unknown, 0 absent, 1
	// present), once known.
	pre                    int8
	modKnown, modRel       bool
	mod                    int64
	createKnown, createRel bool
	create                 int64
	verKnown               bool
	version                int64 // with !verKnown: puts since the unknown version
	leaseKnown             bool
	lease                  int64
	valKnown               bool
	val                    uint64
	written                bool
	compared               bool
}

// pxWrite is one write of a key by a prefix entry.
type pxWrite struct {
	entry   int32
	key     string
	path    []int32
	del     bool
	applied bool
	rel     int64 // the relative revision (applied)
	// create: relative when createRel, absolute when known and not.
	create                 int64
	createKnown, createRel bool
	version                int64
	verKnown               bool
	vdelta                 int64 // with !verKnown: puts since the unknown version, this one included
	lease                  int64
}

// pxSeg is a run of relative revisions whose absolute start is one
// unknown: the prefix's start, or a revoke that may or may not have made
// a revision.
type pxSeg struct {
	startRel int64
	base     int64 // the absolute revision of startRel, once pinned
	pinned   bool
	revoke   int32 // the entry that started it (-1: the prefix's start)
}

type pxEntryOut struct {
	outcome Outcome
	reason  string
	rel     int64 // relative revision made (0: none)
	seg     int32 // for an uncertain revoke: the segment it starts
}

// pxSolver works the prefix out.
type pxSolver struct {
	entries  []pxEntry
	exact    bool // the log starts at raft index 1: an empty keyspace before it
	skipPins int

	keys         map[string]*pxKey
	byLease      map[int64]map[string]bool
	leases       map[int64]int8 // 1 exists, 0 does not; absent: unknown (before the log)
	leaseGranted map[int64]bool
	leaseAssumed map[int64]bool
	leaseRevoked map[int64]bool
	rel          int64
	segs         []pxSeg
	maxPreMod    int64
	writes       []pxWrite
	out          []pxEntryOut
	compactions  []struct {
		entry int32
		rev   int64
		rel   int64
	}
	fail string
	// dbState is the db's create revision and version of the keys
	// present before the log and still in the db (verify keeps them).
	dbState map[string][2]int64
}

func newPxSolver(entries []pxEntry, exact bool, skipPins int) *pxSolver {
	p := &pxSolver{
		entries: entries, exact: exact, skipPins: skipPins,
		keys: map[string]*pxKey{}, byLease: map[int64]map[string]bool{},
		leases: map[int64]int8{}, leaseGranted: map[int64]bool{}, leaseAssumed: map[int64]bool{}, leaseRevoked: map[int64]bool{},
		segs: []pxSeg{{revoke: -1}},
	}
	if exact {
		p.segs[0].pinned, p.segs[0].base = true, 1 // a new etcd's keyspace starts at revision 1
	}
	return p
}

func (p *pxSolver) failf(format string, args ...any) {
	if p.fail == "" {
		p.fail = fmt.Sprintf(format, args...)
	}
}

func (p *pxSolver) key(k string) *pxKey {
	if s := p.keys[k]; s != nil {
		return s
	}
	s := &pxKey{exists: -1, pre: -1}
	if p.exact {
		s.exists, s.pre, s.modKnown, s.createKnown, s.verKnown, s.leaseKnown, s.valKnown = 0, 0, true, true, true, true, true
	}
	p.keys[k] = s
	return s
}

// seg returns the segment holding relative revision rel.
func (p *pxSolver) seg(rel int64) int {
	return sort.Search(len(p.segs), func(i int) bool { return p.segs[i].startRel >= rel }) - 1
}

// abs returns the absolute revision of rel, when its segment is pinned.
func (p *pxSolver) abs(rel int64) (int64, bool) {
	j := p.seg(rel)
	if j < 0 {
		return 0, false
	}
	s := p.segs[j]
	return s.base + rel - s.startRel, s.pinned
}

// pin fixes segment j's start so that rel is revision want, if that agrees
// with its pinned neighbours (a revoke makes one revision or none).
func (p *pxSolver) pin(j int, rel, want int64) bool {
	base := want - (rel - p.segs[j].startRel)
	if j == 0 {
		if base < 1 || base < p.maxPreMod {
			return false
		}
		if p.skipPins > 0 {
			p.skipPins--
			return false
		}
	} else if prev := p.segs[j-1]; prev.pinned {
		if d := base - (prev.base + p.segs[j].startRel - prev.startRel); d != 0 && d != 1 {
			return false
		}
	}
	if j+1 < len(p.segs) && p.segs[j+1].pinned {
		next := p.segs[j+1]
		if d := next.base - (base + next.startRel - p.segs[j].startRel); d != 0 && d != 1 {
			return false
		}
	}
	p.segs[j].base, p.segs[j].pinned = base, true
	return true
}

// x returns the revision before the log, when known.
func (p *pxSolver) x() (int64, bool) { return p.segs[0].base, p.segs[0].pinned }

// compare evaluates c against the state before the current entry; a
// compare on a key's state before the log is taken to hold (see the
// package comment above).
func (p *pxSolver) compare(c *pb.Compare) bool {
	if len(c.RangeEnd) != 0 {
		p.failf("a compare over a key range (%q): not modelled", c.Key)
		return false
	}
	s := p.key(string(c.Key))
	s.compared = true
	eq := c.Result == pb.Compare_EQUAL
	switch c.Target {
	case pb.Compare_MOD:
		r := c.GetModRevision()
		if s.exists == 0 {
			return compareInts(c.Result, 0, r)
		}
		if s.exists == 1 && s.modKnown {
			m := s.mod
			if s.modRel {
				a, ok := p.abs(m)
				if !ok {
					if !eq {
						p.failf("compare on %s: its revision is not established there", c.Key)
						return false
					}
					return p.pin(p.seg(m), m, r)
				}
				m = a
			}
			return compareInts(c.Result, m, r)
		}
		if !eq {
			p.failf("compare on %s before the log: not modelled", c.Key)
			return false
		}
		if r == 0 {
			if s.exists == 1 {
				return false
			}
			p.setAbsent(s)
			return true
		}
		if x, ok := p.x(); ok && r > x {
			// Read at a revision after the log's start that no write
			// of the log made.
			p.failf("entry compares %s with revision %d, after the log's start (revision %d), and no write of the log made it", c.Key, r, x)
			return false
		}
		s.exists, s.modKnown, s.modRel, s.mod = 1, true, false, r
		if s.pre == -1 {
			s.pre = 1
		}
		p.maxPreMod = max(p.maxPreMod, r)
		return true
	case pb.Compare_VERSION:
		v := c.GetVersion()
		if s.exists == 0 {
			return compareInts(c.Result, 0, v)
		}
		if s.verKnown {
			return compareInts(c.Result, s.version, v)
		}
		if !eq {
			p.failf("compare on %s before the log: not modelled", c.Key)
			return false
		}
		if v == 0 {
			if s.exists == 1 {
				return false
			}
			p.setAbsent(s)
			return true
		}
		if v-s.version < 1 {
			if s.written {
				p.failf("compare on the version of %s: its state before the log is not modelled", c.Key)
			}
			return false
		}
		s.verKnown, s.version = true, v
		if s.exists == -1 {
			s.exists = 1
			if s.pre == -1 {
				s.pre = 1
			}
		}
		return true
	case pb.Compare_CREATE:
		if s.exists == 0 {
			return compareInts(c.Result, 0, c.GetCreateRevision())
		}
		if s.exists == 1 && s.createKnown {
			cr := s.create
			if s.createRel {
				a, ok := p.abs(cr)
				if !ok {
					p.failf("compare on %s: its create revision is not established there", c.Key)
					return false
				}
				cr = a
			}
			return compareInts(c.Result, cr, c.GetCreateRevision())
		}
	case pb.Compare_LEASE:
		if s.exists == 0 {
			return compareInts(c.Result, 0, c.GetLease())
		}
		if s.exists == 1 && s.leaseKnown {
			return compareInts(c.Result, s.lease, c.GetLease())
		}
	case pb.Compare_VALUE:
		if s.exists == 0 {
			return false
		}
		if s.exists == 1 && s.valKnown && (c.Result == pb.Compare_EQUAL || c.Result == pb.Compare_NOT_EQUAL) {
			same := s.val == valueHash(c.GetValue())
			return same == (c.Result == pb.Compare_EQUAL)
		}
	}
	p.failf("compare on %s before the log: not modelled", c.Key)
	return false
}

func compareInts(res pb.Compare_CompareResult, a, b int64) bool {
	switch res {
	case pb.Compare_EQUAL:
		return a == b
	case pb.Compare_NOT_EQUAL:
		return a != b
	case pb.Compare_GREATER:
		return a > b
	case pb.Compare_LESS:
		return a < b
	}
	return false
}

func (p *pxSolver) setAbsent(s *pxKey) {
	s.exists, s.modKnown, s.createKnown, s.verKnown, s.leaseKnown, s.valKnown = 0, true, true, true, true, true
	s.mod, s.create, s.version, s.lease = 0, 0, 0, 0
	if s.pre == -1 {
		s.pre = 0
	}
}

// pxOp is one write an entry asks for.
type pxOp struct {
	put  *pb.PutRequest
	del  *pb.DeleteRangeRequest
	path []int32
	hash uint64
}

// ops lists the writes of a transaction's branch.
func (p *pxSolver) ops(pe *pxEntry, branch []*pb.RequestOp, succ bool) []pxOp {
	var out []pxOp
	for i, u := range branch {
		path := []int32{branchIndex(i, succ)}
		switch x := u.Request.(type) {
		case *pb.RequestOp_RequestPut:
			out = append(out, pxOp{put: x.RequestPut, path: path, hash: putHash(x.RequestPut)})
		case *pb.RequestOp_RequestDeleteRange:
			out = append(out, pxOp{del: x.RequestDeleteRange, path: path})
		case *pb.RequestOp_RequestTxn:
			p.failf("entry %d: a nested transaction: not modelled", pe.e.Index)
		}
	}
	return out
}

// run works through the prefix once.
func (p *pxSolver) run() {
	p.out = make([]pxEntryOut, len(p.entries))
	for i := range p.entries {
		if p.fail != "" {
			return
		}
		p.entry(int32(i))
	}
}

func (p *pxSolver) entry(idx int32) {
	pe := &p.entries[idx]
	e := pe.e
	o := &p.out[idx]
	switch e.Kind {
	case walread.KindPut:
		p.write(idx, []pxOp{{put: e.Request.Put, hash: putHash(e.Request.Put)}})
	case walread.KindDeleteRange:
		p.write(idx, []pxOp{{del: e.Request.DeleteRange}})
	case walread.KindTxn:
		t := e.Request.Txn
		succ := true
		for _, c := range t.Compare {
			if !p.compare(c) {
				succ = false
				break
			}
		}
		if p.fail != "" {
			return
		}
		branch := t.Success
		if !succ {
			branch = t.Failure
		}
		ops := p.ops(pe, branch, succ)
		if !succ && len(ops) == 0 {
			o.outcome, o.reason = OutcomeNotApplied, "compare failed (the key changed since it was read)"
			p.attempts(idx, p.ops(pe, t.Success, true))
			return
		}
		p.write(idx, ops)
	case walread.KindLeaseGrant:
		id := e.Request.LeaseGrant.ID
		if p.leases[id] == 1 {
			o.outcome, o.reason = OutcomeNotApplied, "lease already exists"
			return
		}
		p.leases[id], p.leaseGranted[id] = 1, true
		o.outcome = OutcomeApplied
	case walread.KindLeaseRevoke:
		p.revoke(idx, e.Request.LeaseRevoke.ID)
	case walread.KindCompaction:
		o.outcome = OutcomeApplied
		p.compactions = append(p.compactions, struct {
			entry int32
			rev   int64
			rel   int64
		}{idx, e.Request.Compaction.Revision, p.rel})
	default:
		o.outcome = OutcomeSkipped
		if req := e.Request; req != nil {
			switch {
			case req.AuthEnable != nil:
				p.failf("entry %d enables authentication: permission checks are not modelled", e.Index)
			case req.Alarm != nil && req.Alarm.Action == pb.AlarmRequest_ACTIVATE:
				p.failf("entry %d raises the %v alarm: writes refused under it are not modelled", e.Index, req.Alarm.Alarm)
			}
		}
	}
}

// attempts records writes that were not applied.
func (p *pxSolver) attempts(idx int32, ops []pxOp) {
	for _, o := range ops {
		switch {
		case o.put != nil:
			p.writes = append(p.writes, pxWrite{entry: idx, key: string(o.put.Key), path: o.path})
		case len(o.del.RangeEnd) == 0:
			p.writes = append(p.writes, pxWrite{entry: idx, key: string(o.del.Key), path: o.path, del: true})
		}
	}
}

// write applies a branch's writes.
func (p *pxSolver) write(idx int32, ops []pxOp) {
	o := &p.out[idx]
	for _, op := range ops {
		if op.put != nil {
			if op.put.IgnoreValue || op.put.IgnoreLease {
				p.failf("entry %d: a put keeping the value or lease: not modelled", p.entries[idx].e.Index)
				return
			}
			if l := op.put.Lease; l != 0 {
				st, known := p.leases[l]
				switch {
				case known && st == 0, !known && p.exact:
					o.outcome, o.reason = OutcomeNotApplied, fmt.Sprintf("lease %x not found", l)
					p.attempts(idx, ops)
					return
				case !known:
					p.leases[l], p.leaseAssumed[l] = 1, true
				}
			}
			continue
		}
		if len(op.del.RangeEnd) != 0 {
			p.failf("entry %d: a range delete: not modelled", p.entries[idx].e.Index)
			return
		}
		if s := p.key(string(op.del.Key)); s.exists == -1 {
			p.failf("entry %d deletes %s, whose existence before the log is unknown", p.entries[idx].e.Index, op.del.Key)
			return
		}
	}
	rel := p.rel + 1
	changed := false
	for _, op := range ops {
		if op.put != nil {
			p.recordPut(idx, op, rel)
			changed = true
			continue
		}
		s := p.key(string(op.del.Key))
		if s.exists == 1 {
			p.recordDelete(idx, string(op.del.Key), op.path, rel)
			changed = true
		}
	}
	o.outcome = OutcomeApplied
	if changed {
		p.rel = rel
		o.rel = rel
	}
}

func (p *pxSolver) recordPut(idx int32, op pxOp, rel int64) {
	k := string(op.put.Key)
	s := p.key(k)
	switch s.exists {
	case 0:
		s.createKnown, s.createRel, s.create = true, true, rel
		s.verKnown, s.version = true, 1
	case 1:
		s.version++
	default:
		s.createKnown, s.verKnown, s.version = false, false, s.version+1
	}
	if s.pre == -1 && s.exists != -1 {
		s.pre = s.exists
	}
	if s.leaseKnown && s.exists == 1 && s.lease != 0 {
		delete(p.byLease[s.lease], k)
	}
	s.exists, s.modKnown, s.modRel, s.mod = 1, true, true, rel
	s.leaseKnown, s.lease = true, op.put.Lease
	s.valKnown, s.val = true, op.hash
	s.written = true
	if l := op.put.Lease; l != 0 {
		if p.byLease[l] == nil {
			p.byLease[l] = map[string]bool{}
		}
		p.byLease[l][k] = true
	}
	w := pxWrite{entry: idx, key: k, path: op.path, applied: true, rel: rel, lease: op.put.Lease,
		create: s.create, createKnown: s.createKnown, createRel: s.createRel, verKnown: s.verKnown}
	if s.verKnown {
		w.version = s.version
	} else {
		w.vdelta = s.version
	}
	p.writes = append(p.writes, w)
}

func (p *pxSolver) recordDelete(idx int32, k string, path []int32, rel int64) {
	s := p.key(k)
	if s.leaseKnown && s.lease != 0 {
		delete(p.byLease[s.lease], k)
	}
	p.setAbsent(s)
	s.written = true
	p.writes = append(p.writes, pxWrite{entry: idx, key: k, path: path, del: true, applied: true, rel: rel})
}

func (p *pxSolver) revoke(idx int32, id int64) {
	o := &p.out[idx]
	st, known := p.leases[id]
	if (known && st == 0) || (!known && p.exact) {
		o.outcome, o.reason = OutcomeNotApplied, "lease not found"
		return
	}
	p.leases[id] = 0
	p.leaseRevoked[id] = true
	o.outcome = OutcomeApplied
	attached := make([]string, 0, len(p.byLease[id]))
	for k := range p.byLease[id] {
		attached = append(attached, k)
	}
	sort.Strings(attached)
	delete(p.byLease, id)
	switch {
	case len(attached) > 0:
		rel := p.rel + 1
		for _, k := range attached {
			p.recordDelete(idx, k, nil, rel)
		}
		p.rel, o.rel = rel, rel
	case p.leaseGranted[id] || p.exact:
		// Granted in the log: no key attached before it; none now.
	default:
		// Keys attached before the log may have been deleted (one
		// revision) or not: a new segment.
		o.seg = int32(len(p.segs))
		p.segs = append(p.segs, pxSeg{startRel: p.rel, revoke: idx})
	}
}

// solve fixes the segments' starts from the db's revision: the last
// segment ends at dbRev; a segment not pinned by a compare is fixed by its
// neighbours when only one answer fits.
func (p *pxSolver) solve(dbRev int64) {
	n := len(p.segs)
	end := func(j int) int64 { // relative revisions in segment j
		if j+1 < n {
			return p.segs[j+1].startRel - p.segs[j].startRel
		}
		return p.rel - p.segs[j].startRel
	}
	last := &p.segs[n-1]
	if last.pinned {
		if last.base+end(n-1) != dbRev {
			p.failf("the log's writes do not lead to the db's revision %d (they lead to %d)", dbRev, last.base+end(n-1))
			return
		}
	} else {
		last.base, last.pinned = dbRev-end(n-1), true
		if n > 1 && p.segs[n-2].pinned {
			if d := last.base - (p.segs[n-2].base + end(n-2)); d != 0 && d != 1 {
				p.failf("the log's writes do not lead to the db's revision %d", dbRev)
				return
			}
		}
	}
	// Runs of segments not pinned, between pinned ones (or the start).
	for j := n - 2; j >= 0; j-- {
		if p.segs[j].pinned {
			if d := p.segs[j+1].base - (p.segs[j].base + end(j)); d != 0 && d != 1 {
				p.failf("the log's writes do not lead to the db's revision %d", dbRev)
				return
			}
			continue
		}
		// j is not pinned: find the run j-k..j.
		lo := j
		for lo > 0 && !p.segs[lo-1].pinned {
			lo--
		}
		total := int64(0) // relative revisions in the run
		for i := lo; i <= j; i++ {
			total += end(i)
		}
		boundaries := int64(j - lo + 2) // the revokes starting segments lo..j+1
		if lo == 0 {
			// The start is free: only a run without revoke inside fits one way.
			if j != 0 {
				p.failf("the revision before the log is not established (revokes of leases granted before it, and no compare names a revision between them)")
				return
			}
			// segment 0 alone, before segment 1: the revoke starting
			// segment 1 made a revision or not.
			p.failf("the revision before the log is not established (a revoke of a lease granted before it, and no compare names a revision before it)")
			return
		}
		gap := p.segs[j+1].base - (p.segs[lo-1].base + end(lo-1)) - total
		var d int64
		switch gap {
		case 0:
			d = 0
		case boundaries:
			d = 1
		default:
			p.failf("revoke at entry %d: whether it made a revision is not established", p.entries[p.segs[lo].revoke].e.Index)
			return
		}
		base := p.segs[lo-1].base + end(lo-1)
		for i := lo; i <= j; i++ {
			base += d
			p.segs[i].base, p.segs[i].pinned = base, true
			base += end(i)
		}
		j = lo
	}
	x := p.segs[0].base
	if x < p.maxPreMod {
		p.failf("a compare names revision %d before the log, past the revision %d the log starts after", p.maxPreMod, x)
		return
	}
	for _, c := range p.compactions {
		if a := p.relAbs(c.rel); c.rev > a {
			p.failf("entry %d compacts revision %d, past the derived revision %d", p.entries[c.entry].e.Index, c.rev, p.relAbs(c.rel))
			return
		}
	}
}

// revokeRev returns the revision an uncertain revoke made (0: none).
func (p *pxSolver) revokeRev(seg int32) int64 {
	s := p.segs[seg]
	prev := p.segs[seg-1]
	if s.base == prev.base+s.startRel-prev.startRel {
		return 0
	}
	return s.base
}

// relAbs is abs for a solved prefix (rel 0 is the revision before it).
func (p *pxSolver) relAbs(rel int64) int64 {
	if rel == 0 {
		return p.segs[0].base
	}
	a, _ := p.abs(rel)
	return a
}

// verify checks the model against the db (see the comment above), in
// one pass over the db's keys, and keeps what fill needs.
func (p *pxSolver) verify(ctx context.Context, b *Bolt) {
	x := p.segs[0].base
	seen := make(map[string]bool, len(p.keys))
	p.dbState = map[string][2]int64{}
	_, err := b.List(ctx, "", ListOptions{}, func(kv *KeyValue) error {
		s := p.keys[kv.Key]
		if s == nil || s.exists == -1 {
			if kv.ModRevision > x && (s == nil || !s.written) {
				return fmt.Errorf("%s: changed at revision %d in the db, after the log's start (revision %d), by no write of the log", kv.Key, kv.ModRevision, x)
			}
			return nil
		}
		seen[kv.Key] = true
		if why := p.check(kv.Key, s, kv, x); why != "" {
			return errors.New(why)
		}
		if s.exists == 1 && s.pre == 1 {
			p.dbState[kv.Key] = [2]int64{kv.CreateRevision, kv.Version}
		}
		return nil
	})
	if err != nil {
		p.failf("%v", err)
		return
	}
	for k, s := range p.keys {
		if s.exists == 1 && !seen[k] {
			p.failf("%s: the log's writes end with it present, the db does not hold it", k)
			return
		}
	}
	ids, err := b.leaseIDs()
	if err != nil {
		p.failf("%v", err)
		return
	}
	inDB := map[int64]bool{}
	for _, id := range ids {
		inDB[id] = true
	}
	for id, st := range p.leases {
		switch {
		case st == 1 && !inDB[id]:
			p.failf("lease %x: granted (or used) in the log and never revoked there, not in the db", id)
			return
		case st == 0 && p.leaseRevoked[id] && inDB[id]:
			p.failf("lease %x: revoked in the log, still in the db", id)
			return
		}
	}
	if len(p.compactions) > 0 {
		var top int64
		for _, c := range p.compactions {
			top = max(top, c.rev)
		}
		if k := b.compactRevision(); top > k {
			p.failf("the log compacts revision %d, the db only %d", top, k)
		}
	} else if k := b.compactRevision(); k > x {
		p.failf("the db is compacted at revision %d, after the log's start (revision %d), by no entry of the log", k, x)
	}
}

// check compares a key's model with the db's live kv; it returns why they
// disagree ("" when they agree).
func (p *pxSolver) check(k string, s *pxKey, kv *KeyValue, x int64) string {
	if s.exists == 0 {
		return fmt.Sprintf("%s: the log's writes end with it absent, the db holds it", k)
	}
	mod := s.mod
	if s.modRel {
		mod = p.relAbs(s.mod)
	}
	switch {
	case s.modKnown && mod != kv.ModRevision:
		return fmt.Sprintf("%s: the log's writes end at revision %d, the db holds revision %d", k, mod, kv.ModRevision)
	case !s.modKnown && kv.ModRevision > x:
		return fmt.Sprintf("%s: changed at revision %d in the db, after the log's start, by no write of the log", k, kv.ModRevision)
	}
	if s.createKnown {
		cr := s.create
		if s.createRel {
			cr = p.relAbs(s.create)
		}
		if cr != kv.CreateRevision {
			return fmt.Sprintf("%s: created at revision %d by the log, at %d in the db", k, cr, kv.CreateRevision)
		}
	} else if kv.CreateRevision > x {
		return fmt.Sprintf("%s: created at revision %d in the db, after the log's start, by no write of the log", k, kv.CreateRevision)
	}
	if s.verKnown && s.version != kv.Version || !s.verKnown && kv.Version-s.version < 1 {
		return fmt.Sprintf("%s: version %d in the db does not follow from the log's writes", k, kv.Version)
	}
	if s.leaseKnown && s.lease != kv.Lease {
		return fmt.Sprintf("%s: lease %x in the db, %x from the log's writes", k, kv.Lease, s.lease)
	}
	if s.valKnown && s.val != valueHash(kv.Value) {
		return fmt.Sprintf("%s: the db's value is not the one the log's last write of it holds", k)
	}
	return ""
}

// fill completes, once verified, what the model left unknown: the create
// revision and version of keys that existed before the log and still
// exist in the db.
func (p *pxSolver) fill() {
	deleted := map[string]bool{}
	for _, w := range p.writes {
		if w.applied && w.del {
			deleted[w.key] = true
		}
	}
	for i := range p.writes {
		w := &p.writes[i]
		if !w.applied || w.del || w.createKnown && w.verKnown || deleted[w.key] {
			continue
		}
		// Known only for a key present before the log and never deleted
		// in it.
		db, ok := p.dbState[w.key]
		if !ok {
			continue
		}
		if !w.createKnown {
			w.create, w.createKnown, w.createRel = db[0], true, false
		}
		if s := p.keys[w.key]; !w.verKnown && !s.verKnown {
			w.version, w.verKnown = db[1]-s.version+w.vdelta, true
		}
	}
}
