package inspect

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHistoryRowCells(t *testing.T) {
	for _, tc := range []struct {
		row  HistoryRow
		want []string
	}{
		{HistoryRow{Revision: 5, Version: 1, CreateRevision: 5, Change: "created"}, []string{"5", "1", "5", "-", "created"}},
		{HistoryRow{Revision: 9, Version: 3, CreateRevision: 5, Lease: 0x694d7a1b2c3d, Change: "+spec.x"}, []string{"9", "3", "5", "694d7a1b2c3d", "+spec.x"}},
		{HistoryRow{Revision: 12, Deleted: true, Change: "deleted"}, []string{"12", "-", "-", "-", "deleted"}},
	} {
		if diff := cmp.Diff(tc.want, tc.row.Cells()); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.row, diff)
		}
	}
}
