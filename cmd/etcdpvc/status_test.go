package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdStatus runs a program and checks its exit status; its stdout and
// stderr are kept for the stdout and stderr commands that follow:
//
//	status N etcdpvc ARGS...
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status N PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status: %q is not an exit status", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("status: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// cmdDamage overwrites the first 16 bytes of one page of a file with 0xff,
// making a db file whose page cannot be read:
//
//	damage FILE PAGE
func cmdDamage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: damage FILE PAGE")
	}
	page, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("damage: %q is not a page number", args[1])
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY, 0)
	ts.Check(err)
	defer f.Close()
	_, err = f.WriteAt(bytes.Repeat([]byte{0xff}, 16), int64(page)*4096)
	ts.Check(err)
}
