package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/store/wal"
)

func TestHistoryRowCells(t *testing.T) {
	for _, tc := range []struct {
		row  HistoryRow
		want []string
	}{
		{HistoryRow{Revision: 5, Version: 1, CreateRevision: 5, Change: "created"}, []string{"5", "1", "5", "-", "-", "created"}},
		{HistoryRow{Revision: 9, Version: 3, CreateRevision: 5, Lease: 0x694d7a1b2c3d, Change: "+spec.x", Manager: &FieldManager{Manager: "kubelet", Operation: "Update", Subresource: "status"}},
			[]string{"9", "3", "5", "694d7a1b2c3d", "kubelet (status)", "+spec.x"}},
		{HistoryRow{Revision: 12, Deleted: true, Change: "deleted"}, []string{"12", "-", "-", "-", "-", "deleted"}},
	} {
		if diff := cmp.Diff(tc.want, tc.row.Cells()); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.row, diff)
		}
	}
}

func TestHistoryRowLogCells(t *testing.T) {
	for _, tc := range []struct {
		row  HistoryRow
		want []string
	}{
		{HistoryRow{Revision: 3, Version: 1, CreateRevision: 3, Change: "created"}, []string{"-", "-", "-", "in the db", "3", "1", "3", "-", "-", "-", "created"}},
		{HistoryRow{Index: 7, Term: 2, Outcome: "applied", Revision: 4, Change: "wrote the object"}, []string{"7", "2", "-", "applied", "4", "-", "-", "-", "-", "-", "wrote the object"}},
		{HistoryRow{Index: 9, Term: 2, Outcome: "applied", Lease: 0x1f, Change: "+spec.x", Reason: "an unmodelled request"},
			[]string{"9", "2", "-", "applied, revision unknown", "-", "-", "-", "1f", "-", "-", "+spec.x (an unmodelled request)"}},
		{HistoryRow{Index: 8, Term: 2, Outcome: "applied", Revision: 5, Version: 2, CreateRevision: 3, Deleted: true, Change: "deleted", EtcdUser: "root"}, []string{"8", "2", "-", "applied", "5", "-", "-", "-", "-", "root", "deleted"}},
	} {
		if diff := cmp.Diff(tc.want, tc.row.LogCells(time.Time{}, time.UTC)); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.row, diff)
		}
	}
}

func TestHistoryReportWrite(t *testing.T) {
	rows := []HistoryRow{{Index: 7, Term: 2, Outcome: "applied", Revision: 4, Change: "wrote the object"}}
	for _, tc := range []struct {
		name   string
		rep    HistoryReport
		format string
		want   string
	}{
		{"table", HistoryReport{Key: "k", CompactedStart: "history before revision 4 was compacted", Rows: []HistoryRow{{Revision: 4, Version: 2, CreateRevision: 3, Change: "+x"}}}, "table",
			"# history before revision 4 was compacted\nREVISION   VERSION   CREATED   LEASE   MANAGER   CHANGE\n4          2         3         -       -         +x\n"},
		{"log, the compacted start once", HistoryReport{Key: "k", CompactedStart: "the log starts at raft index 7", Log: &wal.WALCoverage{}, Rows: rows}, "table",
			"# the log starts at raft index 7\nINDEX   TERM   TIME   OUTCOME   REVISION   VERSION   CREATED   LEASE   MANAGER   ETCD USER   CHANGE\n7       2      -      applied   4          -         -         -       -         -           wrote the object\n"},
		{"yaml", HistoryReport{Key: "k", Rows: []HistoryRow{{Revision: 4}}}, "yaml", ""},
		{"json", HistoryReport{Key: "k", Rows: []HistoryRow{{Revision: 4}}}, "json", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := tc.rep.Write(&out, tc.format); err != nil {
				t.Fatal(err)
			}
			if tc.want != "" {
				if diff := cmp.Diff(tc.want, out.String()); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return
			}
			var back HistoryReport
			if err := yaml.Unmarshal([]byte(out.String()), &back); err != nil || back.Key != "k" || len(back.Rows) != 1 || back.Rows[0].Revision != 4 {
				t.Errorf("%s does not read back (%v):\n%s", tc.format, err, out.String())
			}
		})
	}
}
