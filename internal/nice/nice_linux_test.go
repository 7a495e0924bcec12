package nice

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// lockedThreads starts n goroutines that each keep an OS thread of their
// own until the process ends: the runtime must create a thread for each.
func lockedThreads(n int) {
	started := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			started <- struct{}{}
			select {}
		}()
	}
	for range n {
		<-started
	}
}

// TestHelperProcess is the process the tests below look at, run by them
// as a subprocess: threads before Lower, Lower, threads after; then
// "ready" and a wait for stdin to close.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("NICE_HELPER") == "" {
		t.Skip("run by the tests below")
	}
	lockedThreads(4)
	if os.Getenv("NICE_HELPER") == "idle" {
		// The runtime may start a thread while the loop runs, cloned from
		// one not yet idle: repeat until a pass finds every thread idle.
		for again := true; again; {
			again = false
			for _, tid := range taskIDs(t, os.Getpid()) {
				if io, err := IOPriority(tid); err == nil && io>>classShift == ClassIdle {
					continue
				}
				again = true
				if _, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), ClassIdle<<classShift); errno != 0 && errno != unix.ESRCH {
					t.Fatal(errno)
				}
			}
		}
	}
	if err := Lower(); err != nil {
		t.Fatal(err)
	}
	lockedThreads(4)
	os.Stdout.WriteString("ready\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

// helper starts TestHelperProcess in mode and returns its pid once it is
// ready; it ends when the test does.
func helper(t *testing.T, mode string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "NICE_HELPER="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	return cmd.Process.Pid
}

// taskIDs lists the threads of process pid.
func taskIDs(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		tids = append(tids, tid)
	}
	return tids
}

// threadNice reads thread tid's nice value from its stat file (the 19th
// field; the second, the command name, is in parentheses and may hold
// spaces).
func threadNice(t *testing.T, pid, tid int) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", strconv.Itoa(tid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	n, err := strconv.Atoi(fields[16]) // field 19 of the whole line
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLowerEveryThread: every thread of the process, those there before
// Lower and those created after, runs at nice 19 and best-effort 7.
func TestLowerEveryThread(t *testing.T) {
	pid := helper(t, "lower")
	tids := taskIDs(t, pid)
	if len(tids) < 9 {
		t.Fatalf("%d threads, want at least 9 (main and 8 locked)", len(tids))
	}
	for _, tid := range tids {
		if n := threadNice(t, pid, tid); n != CPU {
			t.Errorf("thread %d: nice %d, want %d", tid, n, CPU)
		}
		io, err := IOPriority(tid)
		if err != nil {
			t.Fatal(err)
		}
		if io != IO {
			t.Errorf("thread %d: I/O priority class %d level %d, want best-effort 7", tid, io>>classShift, io&7)
		}
	}
}

// TestLowerKeepsIdle: a thread already in I/O class idle stays there.
func TestLowerKeepsIdle(t *testing.T) {
	pid := helper(t, "idle")
	for _, tid := range taskIDs(t, pid) {
		io, err := IOPriority(tid)
		if err != nil {
			t.Fatal(err)
		}
		if io>>classShift != ClassIdle {
			t.Errorf("thread %d: I/O priority class %d, want idle kept", tid, io>>classShift)
		}
	}
}
