package inspect

import (
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/store"
)

// TestMembersDecide: each reason an outcome can have, decided from the
// counts and hashes alone, and MembersVerdict's words for it.
func TestMembersDecide(t *testing.T) {
	h := func(hash uint32, compact int64) *store.HashKV {
		return &store.HashKV{Hash: hash, CompactRevision: compact, Revision: 9}
	}
	m := func(name string, hk *store.HashKV, minority int) *MemberResult {
		r := &MemberResult{Member: name, HashKV: hk, Minority: minority, read: true}
		if hk == nil {
			r.HashError = "no answer"
		}
		return r
	}
	for _, tc := range []struct {
		keys, differ, noMajority int
		members                  []*MemberResult
		outcome, reason, words   string
	}{
		{5, 0, 0, []*MemberResult{m("a", h(1, 2), 0), m("b", h(2, 2), 0), m("c", h(1, 2), 0)}, MembersDiffer, ReasonHashDiffers,
			"but etcd's hashkv differs (a 00000001, b 00000002 (not the majority's), c 00000001)"},
		{5, 0, 0, []*MemberResult{m("a", h(1, 2), 0), m("b", nil, 0), m("c", h(1, 2), 0)}, MembersAgree, ReasonHashNotCompared,
			"etcd's hashkv not compared: no hashkv of b (no answer)"},
		{5, 0, 0, []*MemberResult{m("a", h(1, 2), 0), m("b", h(1, 3), 0)}, MembersAgree, ReasonHashNotCompared,
			"hash different compactions and cannot be compared"},
		{5, 2, 1, []*MemberResult{m("a", h(1, 2), 1), m("b", h(2, 2), 0), m("c", h(1, 2), 0)}, MembersDiffer, ReasonNoMajority,
			"in the minority: a (1 key); which member diverged is not established: no strict majority agrees on 1 key"},
		{5, 2, 0, []*MemberResult{m("a", h(1, 2), 0), m("b", nil, 2), m("c", h(1, 2), 0)}, MembersDiffer, ReasonHashNotCompared,
			"etcd's hashkv does not confirm it: no hashkv of b (no answer)"},
		{5, 2, 0, []*MemberResult{m("a", h(1, 2), 0), m("b", h(2, 2), 2), m("c", h(3, 2), 0)}, MembersDiffer, ReasonNoHashMajority,
			"no strict majority of the members has the same hashkv"},
		{5, 2, 0, []*MemberResult{m("a", h(2, 2), 0), m("b", h(1, 2), 2), m("c", h(1, 2), 0)}, MembersDiffer, ReasonHashDisagrees,
			"etcd's hashkv does not single out the same members (a 00000002 (not the majority's), b 00000001, c 00000001)"},
		{5, 2, 0, []*MemberResult{m("a", h(1, 2), 0), m("b", h(2, 2), 2), m("c", h(1, 2), 0), m("d", h(2, 2), 1), m("e", h(1, 2), 0)}, MembersDiverged, ReasonMajority,
			"diverged: b, d differ from the majority on 2 keys; a, c, e (3 of 5) agree with each other on every one of the 5 keys and on etcd's hashkv (00000001)"},
		{5, 2, 2, []*MemberResult{m("a", h(1, 2), 0), m("b", h(2, 2), 0)}, MembersDiffer, ReasonTwoMembers,
			"with two members no majority can say which one diverged"},
		{0, 0, 0, []*MemberResult{m("a", h(1, 2), 0), m("b", h(1, 2), 0)}, MembersNothingCompared, ReasonEmptyScope,
			"no key of the scope on any member: no verdict (etcd's hashkv, which covers every key, is equal on all)"},
		{5, 0, 0, []*MemberResult{m("a", h(1, 2), 0), m("b", h(1, 2), 0)}, MembersAgree, ReasonHashEqual,
			"no divergence: the 2 members agree on every one of the 5 keys compared, and etcd's hashkv is equal on all (00000001)"},
		{5, 1, 0, []*MemberResult{m("a", h(1, 2), 0), {Member: "b", Error: "x"}, m("c", h(1, 2), 0)}, MembersIncomplete, ReasonReadPartly,
			"incomplete: 1 member could not be read to the end: b (x); 1 key differs (listed)"},
		{0, 0, 0, []*MemberResult{m("a", h(1, 2), 0), {Member: "b", Error: "x"}}, MembersIncomplete, ReasonUnread,
			"nothing compared: 1 member could not be read: b (x): no verdict"},
	} {
		sum := &MembersSummary{Revision: 9, Members: tc.members, Keys: tc.keys, Differ: tc.differ, NoMajority: tc.noMajority}
		decide(sum)
		if words := MembersVerdict(sum); sum.Outcome != tc.outcome || sum.Reason != tc.reason || !strings.Contains(words, tc.words) {
			t.Errorf("%d keys, %d differ: %s (%s): %s; want %s (%s): …%s…", tc.keys, tc.differ, sum.Outcome, sum.Reason, words, tc.outcome, tc.reason, tc.words)
		}
	}
}
