package inspect

import "testing"

func TestDiffText(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"added", DiffRecord{Change: DiffAdded, Resource: "persistentvolumes", Name: "pv-1", RevB: 12}.Line(),
			"ADDED    persistentvolumes - pv-1 - 12"},
		{"modified", DiffRecord{Change: "MODIFIED", Resource: "persistentvolumeclaims", Namespace: "demo", Name: "www-web-0", RevA: 5, RevB: 10,
			Summary: "-deletionTimestamp"}.Line(),
			"MODIFIED persistentvolumeclaims demo www-web-0 5 10  -deletionTimestamp"},
		{"unreadable", DiffRecord{Change: "MODIFIED", Resource: "secrets", Namespace: "demo", Name: "s", RevA: 5, RevB: 6,
			Unreadable: "encrypted (aescbc/key1): no --encryption-config"}.Line(),
			"MODIFIED secrets demo s 5 6  cannot read: encrypted (aescbc/key1): no --encryption-config"},
		{"plain totals", (&DiffTotals{Resource: "pods", Added: 1, Deleted: 2, Modified: 3}).Line(),
			"total pods: 1 added, 2 deleted, 3 modified"},
		{"every total", (&DiffTotals{Resource: "secrets", Modified: 4, MetadataOnly: 1, ReEncrypted: 2, Hidden: 3, Unreadable: 1}).Line(),
			"total secrets: 0 added, 0 deleted, 4 modified (1 metadata only, 2 re-encrypted, content unchanged), 3 metadata only not shown, 1 could not be read"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
	a, b := DiffSource{File: "before.db"}, DiffSource{}
	for _, tc := range []struct {
		sum  DiffSummary
		want string
	}{
		{DiffSummary{Compared: 1, RevA: 7, RevB: 9}, "compared 1 key: A before.db at revision 7, B live etcd at revision 9: the states are the same"},
		{DiffSummary{Compared: 10, RevA: 7, RevB: 9, Differ: 2, Unreadable: 1}, "compared 10 keys: A before.db at revision 7, B live etcd at revision 9: incomplete: 1 object could not be compared"},
		{DiffSummary{Compared: 10, RevA: 7, RevB: 9, Differ: 2}, "compared 10 keys: A before.db at revision 7, B live etcd at revision 9: 2 objects differ"},
		{DiffSummary{Compared: 10, RevA: 7, RevB: 9, Hidden: 1}, "compared 10 keys: A before.db at revision 7, B live etcd at revision 9: the same apart from 1 metadata-only change (not shown: --ignore-metadata-only)"},
	} {
		if got := tc.sum.Line(a, b); got != tc.want {
			t.Errorf("Line:\n got %q\nwant %q", got, tc.want)
		}
	}
}
