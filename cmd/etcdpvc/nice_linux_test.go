package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/etcdpvc/etcdpvc/internal/nice"
)

// TestNiceEveryThread runs the program (etcdpvc-main: main itself) on a
// db whose lock this test holds, so that it waits for it, and reads the
// CPU and I/O priority of each of its threads while it waits: with --db,
// every thread runs at nice 19 and best-effort 7; with --nice=false, at
// this test's priorities.
func TestNiceEveryThread(t *testing.T) {
	bin, err := exec.LookPath("etcdpvc-main")
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "snap.db")
	b, err := os.ReadFile("../../fixtures/corpus/etcd-snapshot.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	lock, err := os.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ownNice := threadNice(t, "/proc/self/task/"+strconv.Itoa(unix.Gettid()))
	ownIO, err := nice.IOPriority(unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		nice, prio int
	}{
		{"--db", []string{"--db", db, "--lock-timeout", "5m", "ls", "-A"}, nice.CPU, nice.IO},
		{"--nice=false", []string{"--db", db, "--lock-timeout", "5m", "ls", "-A", "--nice=false"}, ownNice, ownIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}()
			proc := "/proc/" + strconv.Itoa(cmd.Process.Pid)
			waitOpen(t, proc, db)
			tasks, err := filepath.Glob(proc + "/task/*")
			if err != nil || len(tasks) < 2 {
				t.Fatalf("threads %v: %v", tasks, err)
			}
			for _, task := range tasks {
				tid, _ := strconv.Atoi(filepath.Base(task))
				if n := threadNice(t, task); n != tc.nice {
					t.Errorf("thread %d: nice %d, want %d", tid, n, tc.nice)
				}
				prio, err := nice.IOPriority(tid)
				if err != nil {
					t.Fatal(err)
				}
				if prio != tc.prio {
					t.Errorf("thread %d: I/O priority %#x, want %#x", tid, prio, tc.prio)
				}
			}
		})
	}
}

// waitOpen waits until process proc (its /proc directory) has file path
// open: it is past choosing its priority, and waits for the lock.
func waitOpen(t *testing.T, proc, path string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		fds, _ := filepath.Glob(proc + "/fd/*")
		for _, fd := range fds {
			if target, _ := os.Readlink(fd); target == path {
				return
			}
		}
	}
	t.Fatalf("%s never opened %s", proc, path)
}

// threadNice reads the nice value of the thread whose /proc directory is
// task: the 19th field of its stat file, counted after the command name,
// which is in parentheses and may hold spaces.
func threadNice(t *testing.T, task string) int {
	t.Helper()
	b, err := os.ReadFile(task + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	n, err := strconv.Atoi(strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
