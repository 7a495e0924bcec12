package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the master side and the terminal.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	go io.Copy(io.Discard, m) // drain what is written to the terminal
	return m, s
}

// TestRawRefusesTerminal checks that -o raw refuses to write binary bytes
// to a terminal (exit 5, with a hint), unless --force, and writes them to a
// file.
func TestRawRefusesTerminal(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	db, err := filepath.Abs("../../fixtures/corpus/etcd-snapshot.db")
	if err != nil {
		t.Fatal(err)
	}
	_, tty := openPTY(t)
	if !isTerminal(tty) {
		t.Fatal("the pty is not a terminal")
	}
	args := []string{"--db", db, "get", "pvc", "www-web-0", "-n", "demo", "-o", "raw"}
	for _, tc := range []struct {
		name   string
		stdout *os.File
		extra  []string
		code   int
		stderr string
	}{
		{"terminal", tty, nil, exitRefused, "etcdpvc: error: -o raw writes binary bytes, which would garble this terminal; nothing printed\n" +
			"etcdpvc: hint: redirect the output (-o raw > value.bin, or -o raw | xxd | less), or pass --force\n"},
		{"terminal --force", tty, []string{"--force"}, exitOK, ""},
		{"file", nil, nil, exitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.stdout
			if out == nil {
				out, err = os.Create(filepath.Join(t.TempDir(), "value.bin"))
				if err != nil {
					t.Fatal(err)
				}
				defer out.Close()
			}
			var stderr bytes.Buffer
			code := run(context.Background(), append(append([]string{}, args...), tc.extra...), strings.NewReader(""), out, &stderr)
			if code != tc.code || stderr.String() != tc.stderr {
				t.Fatalf("exit %d, stderr %q; want exit %d, stderr %q", code, stderr.String(), tc.code, tc.stderr)
			}
		})
	}
}
