package wal

import (
	"math"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// pxState is step's state for the entries the db holds, which does not
// know what was there before the log. It knows the leases the log granted
// or revoked, bounds on the revisions, and, where settle follows them,
// keys' mod revisions and leases.
type pxState struct {
	names *pxKeys
	// cur and keyLease hold, by key, its mod revision, 0 when absent, and
	// its lease, unknownRev where not known; nil when no key is known.
	cur, keyLease []int64
	// leases holds the leases the log granted, true, or revoked, false.
	// A lease the log grants is new: only the keys the log puts with it,
	// putWith, can be attached to it.
	leases  map[int64]bool
	putWith map[int64][]int32
	// at is the revision of the entry step applies, or unknownRev.
	at                                 int64
	revLo, revHi, compactLo, compactHi int64
}

// unknownRev marks a key's mod revision or lease as not known.
const unknownRev = -1

func newPxState(names *pxKeys) *pxState {
	return &pxState{names: names, leases: map[int64]bool{}, revHi: math.MaxInt64, compactLo: -1, compactHi: math.MaxInt64}
}

func (s *pxState) field(key string, t pb.Compare_CompareTarget) (int64, bool) {
	id, ok := s.names.ids[key]
	if !ok || s.cur == nil || s.cur[id] == unknownRev {
		return 0, false
	}
	switch {
	case s.cur[id] == 0:
		return 0, true
	case t == pb.Compare_MOD:
		return s.cur[id], true
	case t == pb.Compare_LEASE && s.keyLease[id] != unknownRev:
		return s.keyLease[id], true
	}
	return 0, false
}

func (s *pxState) value(string) ([]byte, bool) { return nil, false }

func (s *pxState) keysIn(from, end []byte) keySet {
	if len(end) == 0 {
		id, named := s.names.ids[string(from)]
		if !named {
			return keySet{unsure: true, unnamed: true}
		}
		return s.keys([]int32{id}, func(int32) bool { return true })
	}
	// Keys the log never names may be in the range.
	ks := s.keys(s.names.inRange(string(from), string(end)), func(int32) bool { return true })
	ks.unsure, ks.unnamed = true, true
	return ks
}

func (s *pxState) lease(id int64) (exists, known bool) {
	exists, known = s.leases[id]
	return exists, known
}

// leaseKeys: a key whose lease is known to be another is not attached;
// one whose state is not known but whose lease is id is not live after a
// revoke of id.
func (s *pxState) leaseKeys(id int64) keySet {
	ks := s.keys(s.putWith[id], func(k int32) bool { return s.keyLease[k] == id })
	if _, granted := s.leases[id]; !granted {
		// It may be from before the log, with keys the log never names.
		ks.unsure, ks.unnamed = true, true
	}
	return ks
}

// keys sorts the keys of ids: live when known live and attached, gone
// when not known but attached, and unsure where neither is known.
func (s *pxState) keys(ids []int32, attached func(int32) bool) keySet {
	var ks keySet
	for _, k := range ids {
		switch {
		case s.cur == nil || s.cur[k] == unknownRev && !attached(k) && s.keyLease[k] == unknownRev:
			ks.unsure = true
		case s.cur[k] == unknownRev && attached(k):
			ks.gone = append(ks.gone, s.names.names[k])
		case s.cur[k] > 0 && attached(k):
			ks.live = append(ks.live, s.names.names[k])
		}
	}
	slices.Sort(ks.live)
	return ks
}

func (s *pxState) revisions() (revLo, revHi, compactLo, compactHi int64) {
	return s.revLo, s.revHi, s.compactLo, s.compactHi
}

func (s *pxState) put(key string, o op) {
	if s.cur != nil {
		id := s.names.ids[key]
		s.cur[id], s.keyLease[id] = s.at, o.put.Lease
	}
}

func (s *pxState) del(key string, _ op) {
	if s.cur != nil {
		id := s.names.ids[key]
		s.cur[id], s.keyLease[id] = 0, 0
	}
}

func (s *pxState) grant(id int64) { s.leases[id] = true }

// revoke: a key the state knows live with the lease, which step did not
// delete, may have been deleted.
func (s *pxState) revoke(id int64) {
	s.leases[id] = false
	for _, k := range s.putWith[id] {
		if s.cur != nil && s.cur[k] > 0 && s.keyLease[k] == id {
			s.cur[k] = unknownRev
		}
	}
}

func (s *pxState) compact(rev int64) { s.compactLo = max(s.compactLo, rev) }

// request rebuilds what step needs of a prefix entry's request, without
// its values; nil for a nested one or one comparing a value.
func (pe *pxEntry) request(names []string) *pb.InternalRaftRequest {
	switch pe.kind {
	case walfile.KindLeaseGrant:
		return &pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{ID: pe.id}}
	case walfile.KindLeaseRevoke:
		return &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: pe.id}}
	case walfile.KindCompaction:
		return &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: pe.id}}
	}
	if pe.ranged {
		return &pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte(pe.from), RangeEnd: []byte(pe.end)}}
	}
	if pe.nested || pe.unmodelled != "" {
		return nil
	}
	ops := func(pxs []pxOp) []*pb.RequestOp {
		out := make([]*pb.RequestOp, len(pxs))
		for i, o := range pxs {
			key := []byte(names[o.key])
			if o.del {
				out[i] = &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: key}}}
			} else {
				out[i] = &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: key, Lease: o.lease}}}
			}
		}
		return out
	}
	switch pe.kind {
	case walfile.KindPut, walfile.KindDeleteRange:
		return &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: ops(pe.succ)}}
	case walfile.KindTxn:
		t := &pb.TxnRequest{Success: ops(pe.succ), Failure: ops(pe.fail)}
		for _, c := range pe.cmps {
			if c.target == pb.Compare_VALUE || c.ranged {
				return nil
			}
			pc := &pb.Compare{Key: []byte(names[c.key]), Target: c.target, Result: c.result}
			switch c.target {
			case pb.Compare_CREATE:
				pc.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: c.value}
			case pb.Compare_MOD:
				pc.TargetUnion = &pb.Compare_ModRevision{ModRevision: c.value}
			case pb.Compare_VERSION:
				pc.TargetUnion = &pb.Compare_Version{Version: c.value}
			case pb.Compare_LEASE:
				pc.TargetUnion = &pb.Compare_Lease{Lease: c.value}
			}
			t.Compare = append(t.Compare, pc)
		}
		return &pb.InternalRaftRequest{Txn: t}
	}
	return nil
}
