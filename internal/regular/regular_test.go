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
