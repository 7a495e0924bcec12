package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/internal/exitcode"
)

// TestRawRefusesTerminal checks that -o raw refuses to write binary bytes
// to a terminal (exit 5, with a hint), unless --force, and writes them to a
// file.
func TestRawRefusesTerminal(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	db, err := filepath.Abs("../../fixtures/corpus/etcd-snapshot.db")
	if err != nil {
		t.Fatal(err)
	}
	m, tty := openPTY(t)
	go io.Copy(io.Discard, m) // drain what is written to the terminal
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
		{"terminal", tty, nil, exitcode.Refused, "etcdpvc: error: -o raw writes binary bytes, which would garble this terminal; nothing printed\n" +
			"etcdpvc: hint: redirect the output (-o raw > value.bin, or -o raw | xxd | less), or pass --force\n"},
		{"terminal --force", tty, []string{"--force"}, exitcode.OK, ""},
		{"file", nil, nil, exitcode.OK, ""},
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

// TestColorize colours a diff on a terminal only: not off one, not with
// NO_COLOR set (no-color.org), not on a terminal that says it has no
// colours (TERM=dumb, as Emacs' shell and CI logs set).
func TestColorize(t *testing.T) {
	_, slave := openPTY(t)
	const diff = "--- a\n+++ b\n-old\n+new\n"
	for _, tc := range []struct {
		name   string
		out    any
		env    map[string]string
		colour bool
	}{
		{"terminal", slave, map[string]string{"TERM": "xterm-256color"}, true},
		{"not a terminal", &bytes.Buffer{}, map[string]string{"TERM": "xterm-256color"}, false},
		{"NO_COLOR", slave, map[string]string{"TERM": "xterm-256color", "NO_COLOR": "1"}, false},
		{"TERM=dumb", slave, map[string]string{"TERM": "dumb"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &env{rawStdout: tc.out.(io.Writer), getenv: func(k string) string { return tc.env[k] }}
			got := colorize(e, diff)
			if coloured := strings.Contains(got, "\x1b["); coloured != tc.colour {
				t.Errorf("coloured: %v, want %v: %q", coloured, tc.colour, got)
			}
		})
	}
}
