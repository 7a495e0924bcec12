package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactLoop is a running `compactloop start`: it writes a key and
// compacts at the newest revision, over and over, as a kube-apiserver
// does every 5 minutes, only much more often.
type compactLoop struct {
	stop chan struct{}
	done sync.WaitGroup
	n    int
	err  error
}

// compactLoops holds the running loops, by the script's $WORK.
var compactLoops = struct {
	mu sync.Mutex
	m  map[string]*compactLoop
}{m: map[string]*compactLoop{}}

// cmdCompactLoop runs a compaction loop against the script's etcd:
//
//	compactloop start   start compacting at the newest revision every few milliseconds
//	compactloop stop    stop it; prints how many compactions it made
//
// The loop is stopped when the script ends.
func cmdCompactLoop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: compactloop start|stop")
	}
	sc := scripts.get(ts)
	if sc == nil || sc.cli == nil {
		ts.Fatalf("compactloop: no cluster; run etcd start first")
	}
	work := ts.Getenv("WORK")
	compactLoops.mu.Lock()
	defer compactLoops.mu.Unlock()
	l := compactLoops.m[work]
	switch args[0] {
	case "start":
		if l != nil {
			ts.Fatalf("compactloop: already running")
		}
		l = &compactLoop{stop: make(chan struct{})}
		compactLoops.m[work] = l
		l.done.Add(1)
		go l.run(sc.cli)
		ts.Defer(func() { stopCompactLoop(work) })
	case "stop":
		if l == nil {
			ts.Fatalf("compactloop: not running")
		}
		compactLoops.mu.Unlock()
		n, err := stopCompactLoop(work)
		compactLoops.mu.Lock()
		ts.Check(err)
		fmt.Fprintf(ts.Stdout(), "%d compactions\n", n)
	default:
		ts.Fatalf("usage: compactloop start|stop")
	}
}

// stopCompactLoop stops the loop of the script in work, if it runs.
func stopCompactLoop(work string) (int, error) {
	compactLoops.mu.Lock()
	l := compactLoops.m[work]
	delete(compactLoops.m, work)
	compactLoops.mu.Unlock()
	if l == nil {
		return 0, nil
	}
	close(l.stop)
	l.done.Wait()
	return l.n, l.err
}

func (l *compactLoop) run(cli *clientv3.Client) {
	defer l.done.Done()
	tick := time.NewTicker(3 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cli.Put(ctx, "/compact-loop", strconv.Itoa(l.n))
		if err == nil {
			_, err = cli.Compact(ctx, resp.Header.Revision)
		}
		cancel()
		if err != nil {
			l.err = fmt.Errorf("compaction %d: %w", l.n+1, err)
			return
		}
		l.n++
	}
}

// cmdEtcdLoad loads N PersistentVolumeClaims and Pods (half each, in 100
// namespaces; loadObjects) into the script's etcd:
//
//	etcdload N
func cmdEtcdLoad(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: etcdload N")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	sc := scripts.get(ts)
	if sc == nil || sc.cli == nil {
		ts.Fatalf("etcdload: no cluster; run etcd start first")
	}
	loadObjects(sc.t, sc.cli, n, 10)
}

// cmdEtcdCount sets VAR to the number of keys etcd itself counts under
// PREFIX, and REVVAR, when given, to the revision it counted at:
//
//	etcdcount PREFIX VAR [REVVAR]
func cmdEtcdCount(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: etcdcount PREFIX VAR [REVVAR]")
	}
	sc := scripts.get(ts)
	if sc == nil || sc.cli == nil {
		ts.Fatalf("etcdcount: no cluster; run etcd start first")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := sc.cli.Get(ctx, args[0], clientv3.WithPrefix(), clientv3.WithCountOnly())
	ts.Check(err)
	ts.Setenv(args[1], strconv.FormatInt(resp.Count, 10))
	if len(args) == 3 {
		ts.Setenv(args[2], strconv.FormatInt(resp.Header.Revision, 10))
	}
}

// cmdLines checks that FILE (stdout and stderr: the last command's) has N
// lines, not counting the first SKIP of them, nor the lines that contain
// IGNORE:
//
//	lines FILE N [SKIP [IGNORE]]
func cmdLines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || len(args) > 4 {
		ts.Fatalf("usage: lines FILE N [SKIP [IGNORE]]")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	skip := 0
	if len(args) > 2 {
		skip, err = strconv.Atoi(args[2])
		ts.Check(err)
	}
	text := ts.ReadFile(args[0])
	got := 0
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if i < skip || text == "" || len(args) > 3 && strings.Contains(line, args[3]) {
			continue
		}
		got++
	}
	if (got == want) == neg {
		ts.Fatalf("%s: %d lines, want %s%d", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}
