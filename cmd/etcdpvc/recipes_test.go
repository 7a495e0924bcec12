package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// TestRebindSecondWriteFails makes the claim's write lose its
// compare-and-swap after the volume's went through: the command must say
// what is written and what is not, exit with the partly-written status
// (never "nothing written" alone), and print a restore command that puts
// the volume back.
func TestRebindSecondWriteFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	corpus := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "corpus", "plain", name+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const pvKey, pvcKey = "/registry/persistentvolumes/pv-www-web-1", "/registry/persistentvolumeclaims/demo/www-web-1"
	for k, v := range map[string]string{pvKey: corpus("persistentvolumes__-__pv-www-web-1__bound"), pvcKey: corpus("persistentvolumeclaims__demo__www-web-1__bound")} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints(), DialTimeout: 10 * time.Second, CommandTimeout: 10 * time.Second, Consistency: "l"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := &globalOptions{Options: session.Options{Endpoints: c.Endpoints(), Prefix: "/registry"}}
	s := &cliSession{Session: &flows.Session{Session: &session.Session{Reader: st, Planner: surgery.Planner{Codec: kubevalue.Codec{Prefix: "/registry"}}, Description: "test", Options: session.Options{Prefix: "/registry"}}}, g: g}
	var stdout, stderr bytes.Buffer
	e := &env{ctx: ctx, stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, rawStdout: &stdout, rawStderr: &stderr, getenv: func(string) string { return "" }}

	// Give both halves something to write: a claimRef with a stale
	// resourceVersion, a claim without volumeName.
	for _, args := range [][]string{
		{"patch", "pvc", "www-web-1", "-n", "demo", "-p", `{"spec":{"volumeName":null}}`},
		{"patch", "pv", "pv-www-web-1", "-p", `{"spec":{"claimRef":{"resourceVersion":"123"}}}`},
	} {
		args = append([]string{"--endpoints", strings.Join(c.Endpoints(), ",")}, args...)
		if code := run(ctx, append(args, "--yes", "--backup-dir", t.TempDir()), strings.NewReader(""), &stdout, &stderr); code != exitcode.OK {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr.String())
		}
	}
	resp, err := cli.Get(ctx, pvKey)
	if err != nil {
		t.Fatal(err)
	}
	pvBefore := string(resp.Kvs[0].Value)
	rb, err := s.Planner.PlanRebind(ctx, st, "pv-www-web-1", "demo", "www-web-1", false)
	if err != nil {
		t.Fatal(err)
	}
	if rb.Volume.NoOp || rb.Claim.NoOp {
		t.Fatalf("NoOp volume=%v claim=%v, want two writes", rb.Volume.NoOp, rb.Claim.NoOp)
	}
	// Someone writes the claim between the plan and the writes.
	if _, err := cli.Put(ctx, pvcKey, corpus("persistentvolumeclaims__demo__www-web-1__bound")); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	steps, err := writePlans(e, s, rb.Plans(), writeOptions{Yes: true, BackupDir: t.TempDir()})
	if len(steps) != 2 || !steps[0].Written() || steps[1].Written() || !errors.Is(err, surgery.ErrPartial) {
		t.Fatalf("writePlans = %v, %v; want the volume written and the claim in conflict", steps, err)
	}
	err = flows.RebindPartial(e, rb, steps, err)
	if code := report(&stderr, err); code != exitcode.Partial {
		t.Errorf("exit status %d, want %d (partly written)", code, exitcode.Partial)
	}
	out := stderr.String()
	for _, want := range []string{
		"etcdpvc: the rebind is half done: persistentvolume pv-www-web-1 was written, persistentvolumeclaim www-web-1 in namespace demo was NOT written",
		"etcdpvc: error: rebind: partly written: persistentvolume pv-www-web-1 was written (revision ",
		"; persistentvolumeclaim www-web-1 in namespace demo was not written: object changed since it was read",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`undo the volume's write with: etcdpvc restore (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no restore command in:\n%s", out)
	}
	if code := run(ctx, []string{"--endpoints", strings.Join(c.Endpoints(), ","), "restore", m[1], "--yes", "--backup-dir", t.TempDir()},
		strings.NewReader(""), &stdout, &stderr); code != exitcode.OK {
		t.Fatalf("restore: exit %d\n%s", code, stderr.String())
	}
	resp, err = cli.Get(ctx, pvKey)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != pvBefore {
		t.Fatalf("after restore the volume does not hold its original bytes (%v)", err)
	}
}
