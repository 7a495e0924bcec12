package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkScanDeleted checks that a.ScanDeleted(prefix), which reads no live
// key's value, reports what ScanLatest with includeDeleted reports
// deleted: the same keys, in the same order, with the same values and
// revisions.
func checkScanDeleted(t *testing.T, a Archive, prefix string) {
	t.Helper()
	ctx := context.Background()
	type deleted struct {
		KV        *KeyValue
		DeleteRev int64
	}
	var want, got []deleted
	if err := a.ScanLatest(ctx, prefix, true, func(kv *KeyValue, del bool, delRev int64) error {
		if del {
			want = append(want, deleted{kv, delRev})
		}
		return nil
	}); err != nil {
		t.Fatalf("ScanLatest(%q): %v", prefix, err)
	}
	if err := a.ScanDeleted(ctx, prefix, func(kv *KeyValue, delRev int64) error {
		got = append(got, deleted{kv, delRev})
		return nil
	}); err != nil {
		t.Fatalf("ScanDeleted(%q): %v", prefix, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ScanDeleted(%q) differs from ScanLatest's deleted keys (-ScanLatest +ScanDeleted):\n%s", prefix, diff)
	}
}
