package store

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestKineDBCopyWithWAL reads a copy of a live database taken as cp
// takes it, the file and its -wal, with no -shm: the rows still in the
// log are read too.
func TestKineDBCopyWithWAL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	w := writeKineRows(t, path)
	defer w.Close()
	cp := filepath.Join(t.TempDir(), "state.db")
	for _, ext := range []string{"", "-wal"} {
		in, err := os.Open(path + ext)
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(cp + ext)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		out.Close()
	}
	k, err := OpenKineDB(cp)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	info, err := k.Info(context.Background())
	if err != nil || info.Revision != 10 {
		t.Fatalf("Info = %+v, %v; want revision 10", info, err)
	}
}
