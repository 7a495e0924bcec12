package surgery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReadAuditLog reads lines of this schema and of the format before it
// (no schema, an empty outcome for a write made), skipping what is not a
// record.
func TestReadAuditLog(t *testing.T) {
	dir := t.TempDir()
	log := strings.Join([]string{
		`{"time":"2026-11-30T02:30:00Z","key":"/registry/pods/demo/a","op":"undelete","fromRevision":4,"toRevision":9,"backup":"/b/a.json","sha256":"x","newSha256":"y"}`,
		`{"time":"2026-11-30T02:31:00Z","key":"/registry/pods/demo/b","op":"recover","fromRevision":0,"toRevision":0,"backup":"/b/b.json","outcome":"uncertain","resolution":["lost"]}`,
		`not json`,
		`{"schema":"etcdpvc.io/write-record/v2","key":"/registry/pods/demo/c"}`,
		`{"schema":"etcdpvc.io/write-record/v1","operationID":"20261203T003510Z-1f2e3d4c","key":"/registry/pods/demo/d","resource":"pods","namespace":"demo","name":"d","outcome":"written","fromRevision":5,"toRevision":6,"backup":"/b/d.json","restore":"etcdpvc restore /b/d.json"}`,
		``,
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, AuditLogName), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, skipped, err := ReadAuditLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Time: "2026-11-30T02:30:00Z", Key: "/registry/pods/demo/a", Op: "undelete", Outcome: OutcomeWritten, FromRevision: 4, ToRevision: 9, Backup: "/b/a.json", SHA256: "x", NewSHA256: "y"},
		{Time: "2026-11-30T02:31:00Z", Key: "/registry/pods/demo/b", Op: "recover", Outcome: OutcomeUncertain, Backup: "/b/b.json", Resolution: []string{"lost"}},
		{Schema: RecordSchema, OperationID: "20261203T003510Z-1f2e3d4c", Key: "/registry/pods/demo/d", Resource: "pods", Namespace: "demo", Name: "d", Outcome: OutcomeWritten, FromRevision: 5, ToRevision: 6, Backup: "/b/d.json", Restore: "etcdpvc restore /b/d.json"},
	}
	if diff := cmp.Diff(want, recs); diff != "" || skipped != 2 {
		t.Fatalf("ReadAuditLog: skipped %d (want 2); -want +got:\n%s", skipped, diff)
	}
	if recs, _, err := ReadAuditLog(t.TempDir()); err != nil || recs != nil {
		t.Fatalf("no audit log: %v, %v", recs, err)
	}
}

// TestOperationID checks the ids NewOperationID makes and the ones
// CheckOperationID refuses.
func TestOperationID(t *testing.T) {
	now := time.Date(2026, 12, 3, 0, 35, 10, 0, time.UTC)
	a, b := NewOperationID(now), NewOperationID(now)
	if a == b || !strings.HasPrefix(a, "20261203T003510Z-") || CheckOperationID(a) != nil {
		t.Fatalf("NewOperationID: %q, %q", a, b)
	}
	for _, bad := range []string{"", "20261203T003510Z", "../../etc", "20261203T003510Z-1F2E3D4C", "20261203T003510Z-1f2e3d4c "} {
		if CheckOperationID(bad) == nil {
			t.Errorf("CheckOperationID(%q) accepts it", bad)
		}
	}
}
