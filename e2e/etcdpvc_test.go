package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// result is what one run of the etcdpvc binary did.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
}

func (r result) String() string {
	return fmt.Sprintf("etcdpvc %s\nexit status %d\n--- stdout:\n%s--- stderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// etcdpvc runs the built CLI against c's etcd, as an operator would: off a
// terminal, with --endpoints (and etcd's certificates when it serves
// TLS), and with an environment that holds no
// ETCDCTL_* or editor settings and keeps backups out of $HOME.
func (c *Cluster) etcdpvc(t *testing.T, args ...string) result {
	t.Helper()
	return c.etcdpvcEnv(t, nil, args...)
}

// etcdpvcEnv is etcdpvc with extra environment variables (KEY=VALUE).
func (c *Cluster) etcdpvcEnv(t *testing.T, extraEnv []string, args ...string) result {
	t.Helper()
	return runEtcdpvc(t, extraEnv, append(append([]string{"--endpoints", c.EtcdURL}, c.etcdTLSArgs()...), args...)...)
}

// runEtcdpvc runs the built CLI with exactly args.
func runEtcdpvc(t *testing.T, extraEnv []string, full ...string) result {
	t.Helper()
	return runEtcdpvcCmd(t, suite.etcdpvc, nil, extraEnv, full...)
}

// runEtcdpvcCmd runs the CLI bin with exactly args, after prepare (when
// not nil) sets what else the command needs (a user, a directory).
func runEtcdpvcCmd(t *testing.T, bin string, prepare func(*exec.Cmd), extraEnv []string, full ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, full...)
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "ETCDCTL_"), name == "XDG_STATE_HOME", name == "EDITOR", name == "KUBE_EDITOR":
		default:
			env = append(env, kv)
		}
	}
	cmd.Env = append(append(env, "XDG_STATE_HOME="+t.TempDir(), "NO_COLOR=1"), extraEnv...)
	if prepare != nil {
		prepare(cmd)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: full, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatalf("run etcdpvc %s: %v", strings.Join(full, " "), err)
	}
	return r
}

// mustEtcdpvc runs etcdpvc and fails the test unless it exits 0.
func (c *Cluster) mustEtcdpvc(t *testing.T, args ...string) result {
	t.Helper()
	r := c.etcdpvc(t, args...)
	if r.code != 0 {
		t.Fatalf("want exit status 0:\n%s", r)
	}
	return r
}

// backupPath is the backup file a successful write reported.
func backupPath(t *testing.T, r result) string {
	t.Helper()
	for _, line := range strings.Split(r.stdout, "\n") {
		if p, ok := strings.CutPrefix(line, "backup: "); ok {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("the backup etcdpvc reported: %v\n%s", err, r)
			}
			return p
		}
	}
	t.Fatalf("no \"backup: PATH\" line in the output:\n%s", r)
	return ""
}

// nextEvent waits for the next watch event.
func nextEvent(t *testing.T, w watch.Interface, what string) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("%s: the watch closed", what)
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no watch event in 30s", what)
	}
	return watch.Event{}
}

// eventually polls f until it returns nil, failing the test with f's last
// error after 30s. The apiserver serves some reads from its watch cache,
// which follows etcd closely but not synchronously.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rv parses a resourceVersion.
func rv(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}
