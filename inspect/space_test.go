package inspect

import (
	"strings"
	"testing"
)

// spaceStats is a stats report of objects current values of value bytes
// each, with revisions held in all when known (a db file).
func spaceStats(objects, value int64, revisions *int64, history int64) *StatsReport {
	st := &StatsReport{Objects: objects, Bytes: objects * value, KeyBytes: objects * 40, Revisions: revisions}
	rs := &ResourceStats{Resource: "configmaps"}
	rs.Objects, rs.Bytes = objects, objects*value
	if revisions != nil {
		rs.HistoryBytes = &history
	}
	st.Resources = []*ResourceStats{rs}
	return st
}

func steps(r *SpaceReport) string {
	var out []string
	for _, s := range r.Plan {
		w := s.Step
		if s.Member != "" {
			w += " " + s.Member
		}
		out = append(out, w)
	}
	return strings.Join(out, ", ")
}

// members are three members a (the leader), b and c of size and inUse,
// b with the NOSPACE alarm when alarm is true.
func members(size, inUse int64, alarm bool) []*SpaceMember {
	var ms []*SpaceMember
	for i, role := range []string{RoleLeader, RoleFollower, RoleFollower} {
		m := &SpaceMember{Name: []string{"a", "b", "c"}[i], Role: role, DBSize: size, DBSizeInUse: inUse, Alarms: []string{}}
		if alarm && i == 1 {
			m.Alarms = []string{"NOSPACE"}
		}
		ms = append(ms, m)
	}
	return ms
}

func TestSpacePlan(t *testing.T) {
	const quota = 100 << 20
	live := spaceStats(1000, 8<<10, nil, 0) // about 9 MiB of db
	held := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name    string
		in      SpaceInput
		verdict string
		steps   string
	}{
		{
			name:    "history fills it: compact, followers then the leader, disarm",
			in:      SpaceInput{Members: members(101<<20, 101<<20, true), Revision: 5000, CompactRevision: 10, Stats: live},
			verdict: SpaceReclaimable,
			steps:   "compact, defragment b, defragment c, defragment a, disarm",
		},
		{
			name:    "nothing compacted since and no free pages: no defragmentation suggested",
			in:      SpaceInput{Members: members(9<<20+512<<10, 9<<20+512<<10, false), Revision: 10, CompactRevision: 10, Stats: live},
			verdict: SpaceUnder,
			steps:   "",
		},
		{
			name:    "compacted, not defragmented: etcd reports the freed pages in use; the defragmentation returns them",
			in:      SpaceInput{Members: members(101<<20, 101<<20, true), Revision: 10, CompactRevision: 10, Stats: live},
			verdict: SpaceReclaimable,
			steps:   "defragment b, defragment c, defragment a, disarm",
		},
		{
			name:    "the live data alone over the quota: delete, no disarm",
			in:      SpaceInput{Members: members(101<<20, 101<<20, true), Revision: 5000, CompactRevision: 10, Stats: spaceStats(12000, 8<<10, nil, 0)},
			verdict: SpaceLiveOver,
			steps:   "compact, delete",
		},
		{
			name:    "a member did not answer",
			in:      SpaceInput{Members: append(members(101<<20, 101<<20, true)[:2], &SpaceMember{Name: "c", Role: RoleUnknown, Error: "dial"}), Revision: 5000, CompactRevision: 10, Stats: live},
			verdict: SpaceUnknown,
			steps:   "compact, defragment b, defragment a",
		},
		{
			name: "a db file without old revisions: no compaction, no defragmentation",
			in: SpaceInput{Members: []*SpaceMember{{Name: "f", Role: RoleFile, DBSize: 9<<20 + 600<<10, DBSizeInUse: 9<<20 + 600<<10}}, Revision: 1001, CompactRevision: 0,
				Stats: spaceStats(1000, 8<<10, held(1000), 1000*(8<<10))},
			verdict: SpaceUnder,
			steps:   "",
		},
		{
			name: "a db file with its history: compact, defragment",
			in: SpaceInput{Members: []*SpaceMember{{Name: "f", Role: RoleFile, DBSize: 101 << 20, DBSizeInUse: 101 << 20}}, Revision: 11000, CompactRevision: 0,
				Stats: spaceStats(1000, 8<<10, held(11000), 11000*(8<<10))},
			verdict: SpaceReclaimable,
			steps:   "compact, defragment f",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Quota, tc.in.QuotaSource, tc.in.Margin, tc.in.Top = quota, QuotaFlag, 10, 5
			r := Space(tc.in)
			if r.Verdict != tc.verdict || steps(r) != tc.steps {
				t.Errorf("verdict %q, plan %q; want %q, %q", r.Verdict, steps(r), tc.verdict, tc.steps)
			}
		})
	}
}

func TestDefragOrder(t *testing.T) {
	ms := []*SpaceMember{{Name: "c", Role: RoleFollower}, {Name: "a", Role: RoleLeader}, {Name: "x", Error: "dial"}, {Name: "b", Role: RoleLearner}}
	var got []string
	for _, m := range DefragOrder(ms) {
		got = append(got, m.Name)
	}
	if strings.Join(got, ",") != "b,c,a" {
		t.Errorf("DefragOrder: %v; want b,c,a (the leader last, the member that did not answer left out)", got)
	}
}

func TestSpaceWriteEscapes(t *testing.T) {
	st := spaceStats(1, 2<<20, nil, 0)
	st.Largest = []LargeObject{{Key: "/registry/configmaps/a/\x1b]0;owned\x07", Bytes: 2 << 20}}
	r := Space(SpaceInput{Quota: 100 << 20, QuotaSource: QuotaFlag, Margin: 10, Stats: st, Members: []*SpaceMember{{Name: "f", Role: RoleFile, DBSize: 3 << 20, DBSizeInUse: 3 << 20}}})
	var b strings.Builder
	if err := r.Write(&b, false); err != nil {
		t.Fatal(err)
	}
	// The lines space writes itself; its tables are textout's.
	_, lines, _ := strings.Cut(b.String(), "\nWHY\n")
	lines, _, _ = strings.Cut(lines, "\nLARGEST OBJECTS\n")
	if strings.ContainsAny(lines, "\x1b\x07") || !strings.Contains(lines, `/registry/configmaps/a/\x1b]0;owned\a takes`) {
		t.Errorf("a key's control characters reach the output:\n%q", b.String())
	}
}

// TestSpaceDeleteNamesTheGroups: when the live data alone is over the
// quota, the plan's delete step names the largest groups that make up what
// has to go, with their objects and bytes, and for Events the command that
// deletes them by age.
func TestSpaceDeleteNamesTheGroups(t *testing.T) {
	st := spaceStats(12000, 8<<10, nil, 0)
	group := func(res, ns string, objects, bytes int64) *GroupStats {
		g := &GroupStats{Resource: &res, Namespace: &ns}
		g.Objects, g.Bytes = objects, bytes
		return g
	}
	st.Groups = []*GroupStats{group("events", "default", 9000, 72<<20), group("configmaps", "ci", 2000, 16<<20), group("secrets", "ci", 1000, 8<<20)}
	ev := &ResourceStats{Resource: "events"}
	ev.Objects, ev.Bytes = 9000, 72<<20
	st.Resources = append(st.Resources, ev)
	r := Space(SpaceInput{Quota: 100 << 20, QuotaSource: QuotaFlag, Margin: 10, Top: 5, Members: members(101<<20, 101<<20, true), Revision: 5000, CompactRevision: 10, Stats: st})
	if r.Verdict != SpaceLiveOver {
		t.Fatalf("verdict %q; want %q", r.Verdict, SpaceLiveOver)
	}
	del := r.Plan[len(r.Plan)-1]
	for _, want := range []string{"events in default (9000 objects, 72.0Mi)", "etcdpvc delete events -A --older-than DURATION"} {
		if del.Step != StepDelete || !strings.Contains(del.Message, want) {
			t.Errorf("delete step %q: no %q", del.Message, want)
		}
	}
	if strings.Contains(del.Message, "secrets") {
		t.Errorf("delete step %q: names more groups than make up what has to go", del.Message)
	}
}
