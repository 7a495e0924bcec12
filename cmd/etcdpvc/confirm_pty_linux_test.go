package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
)

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open pts: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// ptyRun is the real etcdpvc main running on a terminal.
type ptyRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan error
	// drained is closed once everything the command wrote has been read.
	drained chan struct{}
}

// hangGuard bounds each wait so that a hang fails the test instead of
// blocking it; it is not a timing assertion.
const hangGuard = 60 * time.Second

func startOnPTY(t *testing.T, args ...string) *ptyRun {
	t.Helper()
	master, slave := openPTY(t)
	// etcdpvc-main (see TestMain) is this test binary running main(), with
	// its signal.NotifyContext.
	cmd := exec.Command("etcdpvc-main", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	// Its own session with the terminal as controlling terminal, as a
	// shell would run it: ^C typed there sends it SIGINT.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	r := &ptyRun{t: t, cmd: cmd, master: master, done: make(chan error, 1), drained: make(chan struct{})}
	go func() {
		defer close(r.drained)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return // EIO once the child has exited
			}
		}
	}()
	go func() { r.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return r
}

func (r *ptyRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitFor waits until the terminal shows a match of re.
func (r *ptyRun) waitFor(re *regexp.Regexp) {
	r.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !re.MatchString(r.output()) {
		if time.Now().After(deadline) {
			r.t.Fatalf("the terminal never showed %s; it shows:\n%s", re, r.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exitCode waits for the command to end and for its output to be read.
func (r *ptyRun) exitCode() int {
	r.t.Helper()
	select {
	case err := <-r.done:
		select {
		case <-r.drained: // EIO: the terminal has no writer left
		case <-time.After(hangGuard):
			r.t.Fatalf("the terminal's output never ended:\n%s", r.output())
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			r.t.Fatal(err)
		}
		return 0
	case <-time.After(hangGuard):
		r.t.Fatalf("etcdpvc did not end; the terminal shows:\n%s", r.output())
		return -1
	}
}

// TestConfirmOnTerminal answers the [y/N] question on a real
// pseudo-terminal: SIGINT or a typed ^C ends the command at once with
// nothing written, "y" writes. The question names the object and the etcd.
func TestConfirmOnTerminal(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	const key = "/registry/persistentvolumeclaims/demo/www-web-0"
	value, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "corpus", "plain", "persistentvolumeclaims__demo__www-web-0__terminating.bin"))
	if err != nil {
		t.Fatal(err)
	}
	c.Put(t, key, value)
	cli := c.Client(t)
	modRevision := func() int64 {
		t.Helper()
		resp, err := cli.Get(context.Background(), key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v", key, err)
		}
		return resp.Kvs[0].ModRevision
	}
	before := modRevision()
	ep := c.Endpoints()[0]
	args := []string{"undelete", "pvc", "www-web-0", "-n", "demo", "--endpoints", ep, "--backup-dir", t.TempDir()}
	prompt := regexp.MustCompile(`Write this change to persistentvolumeclaim www-web-0 in namespace demo, etcd ` + regexp.QuoteMeta(ep) + `\? \[y/N\] `)

	for _, tc := range []struct {
		name      string
		interrupt func(r *ptyRun)
	}{
		{"SIGINT", func(r *ptyRun) { _ = r.cmd.Process.Signal(syscall.SIGINT) }},
		{"typed ^C", func(r *ptyRun) { _, _ = r.master.Write([]byte{3}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startOnPTY(t, args...)
			r.waitFor(prompt)
			tc.interrupt(r)
			if code := r.exitCode(); code != exitcode.Refused {
				t.Errorf("exit status %d, want %d; terminal:\n%s", code, exitcode.Refused, r.output())
			}
			if !regexp.MustCompile(`(?m)^etcdpvc: error: interrupted at the confirmation prompt; nothing written\r?$`).MatchString(r.output()) {
				t.Errorf("no interruption message; terminal:\n%s", r.output())
			}
			if got := modRevision(); got != before {
				t.Errorf("the key was written (mod revision %d → %d)", before, got)
			}
		})
	}

	t.Run("y", func(t *testing.T) {
		r := startOnPTY(t, args...)
		r.waitFor(prompt)
		if _, err := r.master.Write([]byte("y\n")); err != nil {
			t.Fatal(err)
		}
		if code := r.exitCode(); code != exitcode.OK {
			t.Fatalf("exit status %d; terminal:\n%s", code, r.output())
		}
		after := modRevision()
		if after == before {
			t.Fatalf("not written; terminal:\n%s", r.output())
		}
		want := regexp.MustCompile(fmt.Sprintf(`(?m)^written: %s revision %d → %d \(etcd %s\)\r?$`, regexp.QuoteMeta(key), before, after, regexp.QuoteMeta(ep)))
		if !want.MatchString(r.output()) {
			t.Errorf("terminal does not show %s:\n%s", want, r.output())
		}
	})
}
