package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
)

// TestWatchEndsOnInterrupt follows a live etcd until the command's
// context is canceled, as Ctrl-C cancels it: the watch ends at once, with
// status 0, having printed the change made while it ran.
func TestWatchEndsOnInterrupt(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--endpoints", strings.Join(c.Endpoints(), ","), "watch", "-A", "-o", "json"}, strings.NewReader(""), &stdout, &stderr)
	}()
	// Wait until the watch has started (it says so on stderr), then write.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "watching /registry/") {
		if time.Now().After(deadline) {
			t.Fatalf("the watch did not start: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.Put(t, "/registry/configmaps/demo/web-config", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-config","namespace":"demo"}}`))
	for !strings.Contains(stdout.String(), `"type":"ADDED"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the change was not printed: %s %s", stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitcode.OK {
			t.Fatalf("exit status %d after the interrupt, want 0: %s", code, stderr.String())
		}
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("the watch did not end on the interrupt")
	}
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWatchSaysWhenCut restarts the etcd a watch follows: the watch says
// on stderr that it lost etcd and that it resumed, then prints the change
// made after the restart, the one before it printed once.
func TestWatchSaysWhenCut(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--endpoints", strings.Join(c.Endpoints(), ","), "watch", "-A", "-o", "json"}, strings.NewReader(""), &stdout, &stderr)
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: stdout:\n%s\nstderr:\n%s", what, stdout.String(), stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the watch did not start", func() bool { return strings.Contains(stderr.String(), "watching /registry/") })
	cm := func(name string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"demo"}}`)
	}
	c.Put(t, "/registry/configmaps/demo/before", cm("before"))
	waitFor("the change before the cut was not printed", func() bool { return strings.Contains(stdout.String(), `"name":"before"`) })
	c.StopMember(0)
	waitFor("the cut was not said", func() bool { return strings.Contains(stderr.String(), "lost") })
	time.Sleep(2 * time.Second)
	c.RestartMember(t, 0)
	c.Put(t, "/registry/configmaps/demo/after", cm("after"))
	waitFor("the change after the restart was not printed", func() bool { return strings.Contains(stdout.String(), `"name":"after"`) })
	waitFor("the resume was not said", func() bool { return strings.Contains(stderr.String(), "resumed") })
	if n := strings.Count(stdout.String(), `"name":"before"`); n != 1 {
		t.Errorf("the change before the cut printed %d times:\n%s", n, stdout.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != exitcode.OK {
			t.Fatalf("exit status %d, want 0: %s", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the watch did not end on the interrupt")
	}
	t.Logf("stderr:\n%s", stderr.String())
}

// TestWatchSaysWhenMovedToAnotherMember restarts each member of a
// three-member cluster in turn while a watch follows it through all three
// endpoints: when the member its stream is on goes, clientv3 reopens the
// stream on another, and the watch says so; no change is lost or repeated.
func TestWatchSaysWhenMovedToAnotherMember(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Members: 3, InProcess: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--endpoints", strings.Join(c.Endpoints(), ","), "watch", "-A", "-o", "json"}, strings.NewReader(""), &stdout, &stderr)
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: stdout:\n%s\nstderr:\n%s", what, stdout.String(), stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the watch did not start", func() bool { return strings.Contains(stderr.String(), "watching /registry/") })
	for i := range 3 {
		c.StopMember(i)
		time.Sleep(time.Second)
		name := fmt.Sprintf("after-stop-%d", i)
		c.Put(t, "/registry/configmaps/demo/"+name, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"demo"}}`))
		waitFor(name+" was not printed", func() bool { return strings.Contains(stdout.String(), `"name":"`+name+`"`) })
		c.RestartMember(t, i)
	}
	waitFor("the move was not said", func() bool { return strings.Contains(stderr.String(), "resumed") })
	for i := range 3 {
		if n := strings.Count(stdout.String(), fmt.Sprintf(`"name":"after-stop-%d"`, i)); n != 1 {
			t.Errorf("after-stop-%d printed %d times", i, n)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the watch did not end on the interrupt")
	}
	t.Logf("stderr:\n%s", stderr.String())
}
