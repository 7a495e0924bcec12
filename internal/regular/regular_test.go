package regular

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRefusesWhatCouldHang: a FIFO with no writer, a device and a
// directory are refused at once; a regular file is read.
func TestRefusesWhatCouldHang(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, os.DevNull, dir} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(p); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v, want ErrNotRegular", p, err)
			}
			if err := Check(p); !errors.Is(err, ErrNotRegular) {
				t.Errorf("check %s: %v, want ErrNotRegular", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the read hangs", p)
		}
	}
	if b, err := ReadFile(plain); err != nil || string(b) != "data" {
		t.Errorf("regular file: %q, %v", b, err)
	}
}

// TestNoFollowAppendDir: OpenNoFollow and OpenAppend refuse a symbolic
// link and a FIFO at once (OpenAppend's FIFO has no reader); ReadDir
// refuses a FIFO instead of blocking in open(2).
func TestNoFollowAppendDir(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(plain, link); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func(string) (*os.File, error){"OpenNoFollow": OpenNoFollow, "OpenAppend": OpenAppend} {
		if _, err := open(link); !errors.Is(err, ErrSymlink) {
			t.Errorf("%s(link): %v, want ErrSymlink", name, err)
		}
		if _, err := open(fifo); !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s(fifo): %v, want ErrNotRegular", name, err)
		}
		f, err := open(plain)
		if err != nil {
			t.Fatalf("%s(plain): %v", name, err)
		}
		f.Close()
	}
	if _, err := ReadDir(fifo); err == nil {
		t.Error("ReadDir(fifo): no error")
	}
	if ents, err := ReadDir(dir); err != nil || len(ents) != 3 || ents[0].Name() != "fifo" {
		t.Errorf("ReadDir(dir): %v, %v", ents, err)
	}
}
