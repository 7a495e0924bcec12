package wal

import (
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// TestPrefixScenarios works out written histories of a purged log over
// the member's db, each about one way the log leaves the state before it
// open: the writes before the log are applied to the model, the log's
// entries after them; every claim is checked against the truth (no wrong
// claim), and what each entry must have established, or must not, is
// stated. The revisions are the model's: a new keyspace is at revision 1.
func TestPrefixScenarios(t *testing.T) {
	grant := func(id int64) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{ID: id, TTL: 60}}
	}
	revoke := func(id int64) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: id}}
	}
	del := func(key string) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte(key)}}
	}
	compact := func(rev int64) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: rev}}
	}
	delRange := func(from, end string) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte(from), RangeEnd: []byte(end)}}
	}
	// readIf reads key whether its mod revision is mod or not: a
	// compare that writes nothing either way.
	readIf := func(key string, mod int64) *pb.InternalRaftRequest {
		rd := &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(key)}}}
		return &pb.InternalRaftRequest{Txn: &pb.TxnRequest{
			Compare: []*pb.Compare{{Key: []byte(key), Target: pb.Compare_MOD, Result: pb.Compare_EQUAL,
				TargetUnion: &pb.Compare_ModRevision{ModRevision: mod}}},
			Success: []*pb.RequestOp{rd}, Failure: []*pb.RequestOp{rd}}}
	}
	// nested puts /n inside a transaction inside one, if /n does not
	// exist (its compare evaluated before the entry, as etcd does).
	nested := &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte("/n"), Target: pb.Compare_MOD, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_ModRevision{}}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/n"), Value: []byte("x")}}}},
	}}}}}}
	// rangeIf puts /r/x if no key under /r/ exists yet: a compare of
	// the version of every key in a range, as etcdctl txn can write it.
	rangeIf := &pb.InternalRaftRequest{Txn: &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte("/r/"), RangeEnd: []byte("/r0"), Target: pb.Compare_VERSION, Result: pb.Compare_LESS,
			TargetUnion: &pb.Compare_Version{Version: 1}}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/r/x"), Value: []byte("x")}}}},
	}}
	// valueAbove puts /v if /a's value is above "1": a compare of a
	// value's order.
	valueAbove := &pb.InternalRaftRequest{Txn: &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte("/a"), Target: pb.Compare_VALUE, Result: pb.Compare_GREATER,
			TargetUnion: &pb.Compare_Value{Value: []byte("1")}}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/v"), Value: []byte("v")}}}},
	}}
	tests := []struct {
		name     string
		keepTomb bool
		pre, log []*pb.InternalRaftRequest
		// want: per log entry, E (its outcome, and the revision it
		// made, established) or U (not established), by settle's
		// proofs: a revoke's outcome is not among them, nor a compare
		// chain that starts before the log.
		want string
	}{{
		name: "a chain of compares fixes every revision",
		// /a at 2 before the log; the log's writes at 3 to 6.
		pre:  []*pb.InternalRaftRequest{txnReq("/a", 0, "1")},
		log:  []*pb.InternalRaftRequest{txnReq("/b", 0, "1"), txnReq("/a", 2, "2"), txnReq("/a", 4, "3"), txnReq("/a", 5, ""), compact(6)},
		want: "EEEEE",
	}, {
		name: "a conflicting write is not applied",
		// The db holds /a's value at 3: the first write applied there.
		pre:  []*pb.InternalRaftRequest{txnReq("/a", 0, "1")},
		log:  []*pb.InternalRaftRequest{txnReq("/a", 2, "2"), txnReq("/a", 2, "3"), txnReq("/a", 3, "4")},
		want: "EEE",
	}, {
		name: "the same, revision 3 compacted: the first write may have read a stale /a and failed",
		// /a at 3 before the log (version 2), both first writes
		// failed, the third applied at 4: that world leads to the same
		// db.
		pre:  []*pb.InternalRaftRequest{txnReq("/a", 0, "1")},
		log:  []*pb.InternalRaftRequest{txnReq("/a", 2, "2"), txnReq("/a", 2, "3"), txnReq("/a", 3, "4"), compact(4)},
		want: "UUEE",
	}, {
		name: "a stale first compare, the value after it compacted: which of the two first writes applied is not established",
		// /c at 5 before the log. The first write read a stale 3 and
		// failed, the second applied at 6, the third at 7. Had the
		// first held (/c at 3, the revision before the log 4), it
		// would have made 5, the second 6 and the third 7: both worlds
		// lead to the db's /c at 7, and the compaction took the value
		// at 6 that tells them apart.
		pre:  []*pb.InternalRaftRequest{txnReq("/c", 0, "1"), txnReq("/c", 2, "2"), txnReq("/c", 3, "3"), txnReq("/c", 4, "4")},
		log:  []*pb.InternalRaftRequest{txnReq("/c", 3, "5"), txnReq("/c", 5, "6"), txnReq("/c", 6, "7"), compact(7)},
		want: "UUEE",
	}, {
		name: "the same, the db still holds the value at 6: it fixes the second write, and so the first",
		pre:  []*pb.InternalRaftRequest{txnReq("/c", 0, "1"), txnReq("/c", 2, "2"), txnReq("/c", 3, "3"), txnReq("/c", 4, "4")},
		log:  []*pb.InternalRaftRequest{txnReq("/c", 3, "5"), txnReq("/c", 5, "6"), txnReq("/c", 6, "7")},
		want: "UEE",
	}, {
		name: "a revoke of a lease from before the log that deleted a key, between two chains",
		// lease 9 holds /e: its revoke makes revision 5.
		pre:  []*pb.InternalRaftRequest{grant(9), txnReq("/r", 0, "1"), leasePutReq("/e", "x", 9), txnReq("/s", 0, "1")},
		log:  []*pb.InternalRaftRequest{txnReq("/r", 2, "2"), revoke(9), txnReq("/s", 4, "2"), txnReq("/s", 7, "3"), compact(8)},
		want: "EUEEE",
	}, {
		name: "a revoke of a lease from before the log that deleted nothing, between two chains",
		// It made no revision; whether the lease still existed (no key
		// left) or was revoked already is not established.
		pre:  []*pb.InternalRaftRequest{grant(9), txnReq("/r", 0, "1"), txnReq("/s", 0, "1")},
		log:  []*pb.InternalRaftRequest{txnReq("/r", 2, "2"), revoke(9), txnReq("/s", 3, "2"), txnReq("/s", 5, "3"), compact(6)},
		want: "EUEEE",
	}, {
		name: "nothing fixes the revision before an uncertain revoke: only the entries before it are not established",
		// /p's blind put, deleted and compacted, made revision 4 or 5:
		// the revoke may or may not have deleted something (/e, whose
		// tombstone the compaction took; or /e was deleted before the
		// log, at 4). The chain on /s and the count back from the db
		// fix the rest. (Had /p stayed, its create revision and
		// version in the db would fix its put.)
		pre:  []*pb.InternalRaftRequest{grant(9), leasePutReq("/e", "x", 9), txnReq("/s", 0, "1")},
		log:  []*pb.InternalRaftRequest{putReq("/p", "1"), revoke(9), txnReq("/s", 3, "2"), txnReq("/s", 6, "3"), del("/p"), compact(8)},
		want: "UUUEEE",
	}, {
		name: "a delete without a compare of a key from before the log (etcdctl del) between two chains",
		pre:  []*pb.InternalRaftRequest{txnReq("/a", 0, "1"), txnReq("/p", 0, "1")},
		log:  []*pb.InternalRaftRequest{txnReq("/a", 2, "2"), del("/p"), txnReq("/b", 0, "1"), txnReq("/b", 6, "2"), compact(7)},
		want: "EEEEE",
	}, {
		name: "the same, with nothing to fix the revision before it: whether it deleted /p is not established, the put after it is",
		pre:  []*pb.InternalRaftRequest{txnReq("/a", 0, "1"), txnReq("/p", 0, "1")},
		log:  []*pb.InternalRaftRequest{del("/p"), putReq("/c", "1"), compact(5)},
		want: "UEE",
	}, {
		name: "a lease granted in the log: its revoke deletes the keys the log attached",
		pre:  []*pb.InternalRaftRequest{txnReq("/a", 0, "1")},
		log:  []*pb.InternalRaftRequest{txnReq("/a", 2, "2"), grant(5), leasePutReq("/e", "x", 5), txnReq("/a", 3, "3"), revoke(5)},
		want: "EEEEE",
	}, {
		name: "a range delete of a key a revoke of a lease from before the log may have deleted before it",
		// /d/k existed before the log (its compare says so); the revoke
		// of lease 9 may have deleted it as far as the log tells, and
		// the db's tombstone at the range delete's revision, once the
		// revisions are known, shows the range delete did: no revoke
		// need have. The search once refuted the true world here and
		// claimed the lease puts and the revoke not applied; nothing is
		// established now (the two puts of one value anchor neither,
		// and a world with lease 9 gone before the log fits too).
		pre:  []*pb.InternalRaftRequest{grant(9), putReq("/d/k", "v")},
		log:  []*pb.InternalRaftRequest{leasePutReq("/e", "x", 9), leasePutReq("/e", "x", 9), readIf("/d/k", 2), revoke(9), delRange("/d/", "/d0")},
		want: "UUUUU",
	}, {
		name:     "the same, the tombstone at the compaction revision kept",
		keepTomb: true,
		pre:      []*pb.InternalRaftRequest{grant(9), putReq("/d/k", "v")},
		log:      []*pb.InternalRaftRequest{leasePutReq("/e", "x", 9), leasePutReq("/e", "x", 9), readIf("/d/k", 2), revoke(9), delRange("/d/", "/d0")},
		want:     "UUUUU",
	}, {
		name: "a delete if the key does not exist: applied with nothing to delete",
		// Its compare (mod revision 0) held: the key was absent. The
		// plain delete before it leaves /k absent whatever it found, so
		// step proves that compare held; the plain delete's own outcome
		// is applied, whether it deleted /k is not established.
		pre:  []*pb.InternalRaftRequest{txnReq("/a", 0, "1")},
		log:  []*pb.InternalRaftRequest{del("/k"), txnReq("/k", 0, ""), txnReq("/a", 2, "2")},
		want: "UEE",
	}, {
		name: "a nested transaction leaves the keys it may write unknown, not the log",
		// /a at 2 before the log; the nested transaction puts /n at 4.
		pre:  []*pb.InternalRaftRequest{txnReq("/a", 0, "1")},
		log:  []*pb.InternalRaftRequest{txnReq("/a", 2, "2"), nested, txnReq("/a", 3, "3"), txnReq("/b", 0, "1")},
		want: "EUEE",
	}, {
		name: "a compare over a key range leaves its own outcome unknown, not the log",
		// /a at 2 before the log; /r/x put at 4, /a at 3 and 5.
		pre:  []*pb.InternalRaftRequest{txnReq("/a", 0, "1")},
		log:  []*pb.InternalRaftRequest{txnReq("/a", 2, "2"), rangeIf, txnReq("/a", 4, "3"), txnReq("/b", 0, "1")},
		want: "EUEE",
	}, {
		name: "a compare of a value's order leaves its own outcome unknown, not the log",
		// /a at 2 before the log; /v put at 4, /a at 3 and 5.
		pre:  []*pb.InternalRaftRequest{txnReq("/a", 0, "1")},
		log:  []*pb.InternalRaftRequest{txnReq("/a", 2, "2"), valueAbove, txnReq("/a", 4, "3"), txnReq("/b", 0, "1")},
		want: "EUEE",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &modelGen{m: newMVCCModel(tc.keepTomb), past: map[string][]int64{}}
			for _, req := range tc.pre {
				g.add(req, "before the log")
			}
			cut := len(g.steps)
			for _, req := range tc.log {
				g.add(req, "in the log")
			}
			mc := g.caseAt(cut)
			_, v, wrong := mc.run(t, false)
			for _, w := range wrong {
				t.Errorf("wrong claim: %s", w)
			}
			if v.unresolved != "" {
				t.Fatalf("unresolved: %s", v.unresolved)
			}
			rp, v := mc.solve(t, false)
			var got strings.Builder
			for i, e := range rp.entries {
				tr := mc.steps[cut+i].truth
				if e.outcome != OutcomeUnknown && (tr.rev == 0 || e.revision == tr.rev) {
					got.WriteByte('E')
				} else {
					got.WriteByte('U')
				}
			}
			if got.String() != tc.want {
				t.Errorf("established %s, want %s (E: outcome and revision; U: not); unknown stretches %+v", got.String(), tc.want, v.unknown)
			}
		})
	}
}

// TestNestedOpPaths: each write of a nested transaction is listed with
// its whole path, which names its own put in the request (the value a
// listed write shows is read through it).
func TestNestedOpPaths(t *testing.T) {
	put := func(k, v string) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte(v)}}}
	}
	txn := func(succ, fail []*pb.RequestOp) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: succ, Failure: fail}}}
	}
	req := &pb.InternalRaftRequest{Txn: &pb.TxnRequest{
		Success: []*pb.RequestOp{put("/a", "1"), txn([]*pb.RequestOp{put("/b", "2")}, []*pb.RequestOp{put("/c", "3"), txn(nil, []*pb.RequestOp{put("/d", "4")})})},
		Failure: []*pb.RequestOp{txn([]*pb.RequestOp{put("/e", "5")}, nil)},
	}}
	keys := newPxKeys()
	pe := compactEntry(mustEntry(t, 1, req), walfile.Pos{}, keys)
	if !pe.nested || pe.unmodelled != "" {
		t.Fatalf("nested %v, unmodelled %q", pe.nested, pe.unmodelled)
	}
	var got []string
	for _, ops := range [][]pxOp{pe.succ, pe.fail} {
		for _, o := range ops {
			p := putAt(req, opPath(o))
			if p == nil || string(p.Key) != keys.names[o.key] {
				t.Errorf("%s: path %v names %v", keys.names[o.key], opPath(o), p)
				continue
			}
			got = append(got, string(p.Key)+"="+string(p.Value))
		}
	}
	if want := "/a=1 /b=2 /c=3 /d=4 /e=5"; strings.Join(got, " ") != want {
		t.Errorf("writes %q, want %q", strings.Join(got, " "), want)
	}
}
