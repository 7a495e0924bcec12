package newfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheck: what exists in any form is refused, and so is a path in a
// member's data directory (member/wal and member/snap), but not one beside
// a copied wal or snap directory.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mk("data/member/wal")
	mk("data/member/snap")
	mk("copied/wal")
	mk("copied/snap")
	mk("half/member/wal")
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]error{
		"file":                  ErrExists,
		"dangling":              ErrExists,
		"copied":                ErrExists,
		"data/new":              ErrMemberDir,
		"data/member/new":       ErrMemberDir,
		"data/member/snap/db2":  ErrMemberDir,
		"data/member/wal/x/new": ErrMemberDir,
		"copied/new.db":         nil,
		"half/member/new.db":    nil,
		"new.db":                nil,
	} {
		if err := Check(filepath.Join(dir, p)); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", p, err, want)
		}
	}
	if err := Check(os.DevNull); !errors.Is(err, ErrExists) {
		t.Errorf("%s: %v, want ErrExists", os.DevNull, err)
	}
}
