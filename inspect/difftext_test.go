package inspect

import (
	"strings"
	"testing"
)

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
		{DiffSummary{Compared: 2, RevA: 7, RevB: 9, Resource: "configmaps", Namespace: "demo"},
			"compared 2 keys of configmaps in namespace demo: A before.db at revision 7, B live etcd at revision 9: the states are the same in namespace demo (-A compares every namespace)"},
		{DiffSummary{Compared: 2, RevA: 7, RevB: 9, Namespace: "demo", Differ: 1},
			"compared 2 keys in namespace demo: A before.db at revision 7, B live etcd at revision 9: 1 object differs"},
		{DiffSummary{RevA: 7, RevB: 9, Resource: "configmaps", Namespace: "default", NothingCompared: true, OtherNamespacesA: 3, OtherNamespacesB: 4},
			"compared 0 keys of configmaps in namespace default: A before.db at revision 7, B live etcd at revision 9: nothing to compare in namespace default, while other namespaces hold 3 in A and 4 in B: no verdict (-A compares every namespace, -n NS one of them)"},
	} {
		if got := tc.sum.Line(a, b); got != tc.want {
			t.Errorf("Line:\n got %q\nwant %q", got, tc.want)
		}
	}
}

func TestDiffWriter(t *testing.T) {
	a, b := DiffSource{File: "before.db"}, DiffSource{File: "after.db"}
	rec := DiffRecord{Change: "MODIFIED", Resource: "persistentvolumeclaims", Namespace: "demo", Name: "www-web-0",
		Key: "/registry/persistentvolumeclaims/demo/www-web-0", RevA: 5, RevB: 10, Summary: "-deletionTimestamp", Diff: "-  deletionTimestamp: x\n"}
	tot := &DiffTotals{Resource: "persistentvolumeclaims", Modified: 1}
	for _, tc := range []struct {
		name string
		json bool
		sum  DiffSummary
		want string
	}{
		{"text", false, DiffSummary{Compared: 3, RevA: 7, RevB: 9, Differ: 1, Totals: []*DiffTotals{tot}},
			"MODIFIED persistentvolumeclaims demo www-web-0 5 10  -deletionTimestamp\n-  deletionTimestamp: x\n\n" +
				"total persistentvolumeclaims: 0 added, 0 deleted, 1 modified\n" +
				"compared 3 keys: A before.db at revision 7, B after.db at revision 9: 1 object differs\n"},
		{"text, the same", false, DiffSummary{Compared: 3, RevA: 7, RevB: 9},
			"MODIFIED persistentvolumeclaims demo www-web-0 5 10  -deletionTimestamp\n-  deletionTimestamp: x\n" +
				"compared 3 keys: A before.db at revision 7, B after.db at revision 9: the states are the same\n"},
		{"json", true, DiffSummary{Compared: 3, RevA: 7, RevB: 9, Differ: 1, Totals: []*DiffTotals{tot}},
			`{"type":"object","change":"MODIFIED","resource":"persistentvolumeclaims","namespace":"demo","name":"www-web-0","key":"/registry/persistentvolumeclaims/demo/www-web-0","modRevisionA":5,"modRevisionB":10,"summary":"-deletionTimestamp","diff":"-  deletionTimestamp: x\n"}` + "\n" +
				`{"type":"total","resource":"persistentvolumeclaims","added":0,"deleted":0,"modified":1,"metadataOnly":0,"reEncrypted":0,"unreadable":0}` + "\n" +
				`{"type":"summary","a":"before.db at revision 7","b":"after.db at revision 9","compared":3,"revisionA":7,"revisionB":9,"totals":[{"resource":"persistentvolumeclaims","added":0,"deleted":0,"modified":1,"metadataOnly":0,"reEncrypted":0,"unreadable":0}],"differ":1,"unreadable":0}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			d := DiffWriter{W: &out, JSON: tc.json}
			if err := d.Record(rec); err != nil {
				t.Fatal(err)
			}
			if err := d.Summary(a, b, &tc.sum); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}
