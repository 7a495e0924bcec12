package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kineSchema is kine's SQLite table (pkg/drivers/sqlite of kine v0.17.5).
const kineSchema = `CREATE TABLE IF NOT EXISTS kine (
	id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, created INTEGER, deleted INTEGER,
	create_revision INTEGER, prev_revision INTEGER, lease INTEGER, value BLOB, old_value BLOB)`

// writeKineRows creates a kine database at path in WAL mode, as kine
// does, with the rows kine writes for: compact_rev_key (1); create a (2),
// update a (3); create b (4), delete b (5); a gap fill (6); create c with
// a lease (7); create d (8) and delete it (9) at or below the compaction
// revision 9, which removed both rows; update a (10). It returns the open
// database, which the caller closes.
func writeKineRows(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	ins := `INSERT INTO kine(id, name, created, deleted, create_revision, prev_revision, lease, value, old_value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	for _, q := range []struct {
		q    string
		args []any
	}{
		{kineSchema, nil},
		{ins, []any{1, "compact_rev_key", 1, 0, 0, 9, 0, []byte(""), nil}},
		{ins, []any{2, "/registry/a/x", 1, 0, 0, 0, 0, []byte("a1"), nil}},
		{ins, []any{3, "/registry/a/x", 0, 0, 2, 2, 0, []byte("a2"), []byte("a1")}},
		{ins, []any{4, "/registry/b/y", 1, 0, 0, 0, 0, []byte("b1"), nil}},
		{ins, []any{5, "/registry/b/y", 0, 1, 4, 4, 0, []byte("b1"), []byte("b1")}},
		{ins, []any{6, "gap-6", 0, 1, 0, 0, 0, nil, nil}},
		{ins, []any{7, "/registry/c/z", 1, 0, 0, 0, 60, []byte("c1"), nil}},
		{ins, []any{10, "/registry/a/x", 0, 0, 2, 3, 0, []byte("a3"), []byte("a2")}},
	} {
		if _, err := db.Exec(q.q, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func TestKineDBReads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	w := writeKineRows(t, path)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !IsSQLite(path) {
		t.Fatal("IsSQLite: false on kine's database")
	}
	k, err := OpenKineDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if k.Live() {
		t.Error("Live: a closed database has no -wal, want false")
	}
	info, err := k.Info(ctx)
	if err != nil || info.Revision != 10 || info.CompactRevision != 9 {
		t.Fatalf("Info = %+v, %v; want revision 10, compacted at 9", info, err)
	}

	var keys []string
	if _, err := k.List(ctx, "", ListOptions{}, func(kv *KeyValue) error {
		keys = append(keys, kv.Key+"="+string(kv.Value))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"/registry/a/x=a3", "/registry/c/z=c1"}, keys); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
	keys = nil
	if _, err := k.List(ctx, "/registry/a/", ListOptions{Revision: 9}, func(kv *KeyValue) error {
		keys = append(keys, kv.Key+"="+string(kv.Value))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"/registry/a/x=a2"}, keys); d != "" {
		t.Errorf("List at 9 (-want +got):\n%s", d)
	}
	if _, err := k.Get(ctx, "/registry/a/x", 3); !errors.Is(err, ErrCompacted) {
		t.Errorf("Get at 3 = %v, want ErrCompacted", err)
	}
	if _, err := k.Get(ctx, "/registry/b/y", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get deleted = %v, want ErrNotFound", err)
	}
	c, err := k.Get(ctx, "/registry/c/z", 0)
	if d := cmp.Diff(&KeyValue{Key: "/registry/c/z", Value: []byte("c1"), CreateRevision: 7, ModRevision: 7, Version: 1, Lease: 60}, c); err != nil || d != "" {
		t.Errorf("Get c: %v (-want +got):\n%s", err, d)
	}

	var evs []Event
	if _, err := k.History(ctx, "/registry/a/x", func(e Event) error { evs = append(evs, e); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{KV: KeyValue{Key: "/registry/a/x", Value: []byte("a1"), CreateRevision: 2, ModRevision: 2, Version: 1}},
		{KV: KeyValue{Key: "/registry/a/x", Value: []byte("a2"), CreateRevision: 2, ModRevision: 3}},
		{KV: KeyValue{Key: "/registry/a/x", Value: []byte("a3"), CreateRevision: 2, ModRevision: 10}},
	}
	if d := cmp.Diff(want, evs); d != "" {
		t.Errorf("History (-want +got):\n%s", d)
	}

	var revs []int64
	if err := k.ScanRevisions(ctx, "", func(e Event) error { revs = append(revs, e.KV.ModRevision); return nil }); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int64{2, 3, 4, 5, 7, 10}, revs); d != "" {
		t.Errorf("ScanRevisions skips kine's own rows (-want +got):\n%s", d)
	}

	type del struct {
		Key   string
		Value string
		Rev   int64
	}
	var dels []del
	if err := k.ScanDeleted(ctx, "/registry/", func(kv *KeyValue, rev int64) error {
		dels = append(dels, del{kv.Key, string(kv.Value), rev})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]del{{"/registry/b/y", "b1", 5}}, dels); d != "" {
		t.Errorf("ScanDeleted (-want +got):\n%s", d)
	}
	var latest []del
	if err := k.ScanLatest(ctx, "", true, func(kv *KeyValue, deleted bool, rev int64) error {
		latest = append(latest, del{kv.Key, string(kv.Value), rev})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]del{{"/registry/a/x", "a3", 0}, {"/registry/b/y", "b1", 5}, {"/registry/c/z", "c1", 0}}, latest); d != "" {
		t.Errorf("ScanLatest (-want +got):\n%s", d)
	}
	if _, err := AsWriter(k); !errors.Is(err, ErrReadOnly) {
		t.Errorf("AsWriter = %v, want ErrReadOnly", err)
	}
}

// TestKineDBLive reads a database a writer holds open in WAL mode, as a
// running kine does, and checks that the writer goes on writing.
func TestKineDBLive(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	w := writeKineRows(t, path)
	defer w.Close()
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("the writer keeps no -wal: %v", err)
	}
	k, err := OpenKineDB(path)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Live() {
		t.Error("Live: false while a writer holds the database")
	}
	n := 0
	if _, err := k.List(ctx, "", ListOptions{}, func(*KeyValue) error {
		// The writer writes while the read is under way.
		if _, err := w.Exec(`INSERT INTO kine(name, created, deleted, create_revision, prev_revision, lease, value) VALUES ('/registry/e/v', 1, 0, 0, 0, 0, 'e1')`); err != nil {
			t.Errorf("write during the read: %v", err)
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("List: %d keys, want the 2 at the revision opened at", n)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Errorf("checkpoint after the read: %v", err)
	}
	var rows int
	if err := w.QueryRow(`SELECT COUNT(*) FROM kine WHERE name = '/registry/e/v'`).Scan(&rows); err != nil || rows != 2 {
		t.Errorf("the writer's rows: %d, %v; want 2", rows, err)
	}
}

// TestKineDBCompactedWhileRead reads a database whose kine compacts past
// the revision it was opened at: the rows of that state another row
// replaced are gone, and the read is refused rather than missing keys.
func TestKineDBCompactedWhileRead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	w := writeKineRows(t, path)
	defer w.Close()
	k, err := OpenKineDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	// kine updates c (11) and compacts to 11: c's row 7 is deleted.
	for _, q := range []string{
		`INSERT INTO kine(id, name, created, deleted, create_revision, prev_revision, lease, value) VALUES (11, '/registry/c/z', 0, 0, 7, 7, 60, 'c2')`,
		`DELETE FROM kine WHERE id = 7`,
		`UPDATE kine SET prev_revision = 11 WHERE name = 'compact_rev_key'`,
	} {
		if _, err := w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := k.List(ctx, "", ListOptions{}, func(*KeyValue) error { return nil }); !errors.Is(err, ErrCompacted) {
		t.Errorf("List after a compaction past the revision opened at = %v, want ErrCompacted", err)
	}
	if _, err := k.Get(ctx, "/registry/a/x", 0); !errors.Is(err, ErrCompacted) {
		t.Errorf("Get after a compaction past the revision opened at = %v, want ErrCompacted", err)
	}
}
