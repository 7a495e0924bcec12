package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEditorOwnsSIGINT runs a real editor process that sends SIGINT to
// etcdpvc (as Ctrl-C on a terminal does to the whole foreground group) and
// finishes its edit only once etcdpvc has received it: the edit must come
// back and the command's context must stay alive; once the editor is done,
// SIGINT cancels the context again.
func TestEditorOwnsSIGINT(t *testing.T) {
	ctx, stop := interruptContext(context.Background())
	defer stop()
	in := ctx.Value(interruptsKey{}).(*interrupts)

	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	script := filepath.Join(dir, "editor.sh")
	// The editor records its own ignored-signal mask, interrupts etcdpvc,
	// waits until etcdpvc has dropped the interrupt, then saves its edit.
	if err := os.WriteFile(script, []byte(fmt.Sprintf(`#!/bin/sh
if [ -r /proc/$$/status ]; then grep '^SigIgn:' /proc/$$/status | sed 's/^/# /' >> "$1"; fi
kill -INT %d
while [ ! -e %q ]; do sleep 0.01; done
echo 'edited: true' >> "$1"
`, os.Getpid(), gate)), 0o700); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	e := &env{ctx: ctx, stdin: strings.NewReader(""), stdout: &stderr, stderr: &stderr, rawStdout: &stderr, rawStderr: &stderr, getenv: func(k string) string {
		if k == "EDITOR" {
			return script
		}
		return ""
	}}

	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := runEditor(e, []byte("kind: PersistentVolumeClaim\n"))
		done <- result{out, err}
	}()
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for in.dropped.Load() == 0 {
		if ctx.Err() != nil {
			t.Fatalf("SIGINT during the editor canceled the command: %v", ctx.Err())
		}
		if time.Now().After(deadline) {
			t.Fatal("the editor's SIGINT never reached etcdpvc")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("runEditor: %v (stderr %q)", r.err, stderr.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("SIGINT during the editor canceled the command: %v", ctx.Err())
	}
	if !strings.Contains(string(r.out), "edited: true") {
		t.Fatalf("the edit was lost:\n%s", r.out)
	}
	if runtime.GOOS == "linux" {
		// The editor handles SIGINT its own way: it must not inherit it
		// ignored.
		var mask string
		for _, line := range strings.Split(string(r.out), "\n") {
			if m, ok := strings.CutPrefix(line, "# SigIgn:"); ok {
				mask = strings.TrimSpace(m)
			}
		}
		ign, err := strconv.ParseUint(mask, 16, 64)
		if err != nil {
			t.Fatalf("editor's SigIgn %q: %v\n%s", mask, err, r.out)
		}
		if ign&(1<<(uint(syscall.SIGINT)-1)) != 0 {
			t.Errorf("the editor started with SIGINT ignored (SigIgn %s)", mask)
		}
	}

	// Once the editor is done, Ctrl-C stops etcdpvc again.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("SIGINT after the editor did not cancel the command")
	}
}
