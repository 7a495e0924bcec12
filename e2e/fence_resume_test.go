package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRestoreResumesAfterItsFence: restore --operation of a recovery of
// two objects (--max-txn-ops 1: a compare-and-delete each) through the two
// followers deletes the first, then loses its second to the leader,
// frozen (SIGSTOP) right before that transaction is sent: the key is
// fenced (rewritten with its own bytes), not deleted, and the restore
// exits 9, partly written. That command, pasted into a new shell with the leader
// resumed, takes the fence for etcdpvc's own and deletes both; its undo
// line recreates them; audit.log and the backups name the same
// operations. The window is made certain by the test hook
// ETCDPVC_TEST_HOLD_BEFORE_SEND.
func TestRestoreResumesAfterItsFence(t *testing.T) {
	c := startCluster(t, "fence", ClusterOptions{EtcdMembers: 3, EtcdOnly: true})
	c.put(t, nsKey, corpusValue(t, "namespaces__-__demo.bin"))
	const deployKey = "/registry/deployments/demo/api"
	c.put(t, cmKey, corpusValue(t, "configmaps__demo__web-config.bin"))
	rev := c.put(t, deployKey, corpusValue(t, "deployments__demo__api.bin"))
	for _, k := range []string{cmKey, deployKey} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Etcd.Delete(ctx, k)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	all := c.Members[0].ClientURL + "," + c.others(c.Members[0])
	r := runEtcdpvc(t, nil, "--endpoints", all, "--verify=never", "--backup-dir", dir, "recover", "namespace", "demo", "--rev", fmt.Sprint(rev), "--yes")
	if r.code != 0 {
		t.Fatalf("recover namespace demo: %s", r)
	}
	lines := auditLines(t, dir)
	id := lines[len(lines)-1].OperationID
	for _, k := range []string{cmKey, deployKey} {
		if c.settled(t, k) == nil {
			t.Fatalf("the recovery did not create %s:\n%s", k, r)
		}
	}
	undo := fmt.Sprintf("etcdpvc restore --operation %s --backup-dir %s", id, dir)

	// The restore through the followers, the leader frozen once the
	// intent lines are in audit.log, before the transaction is sent.
	l := c.leader(t)
	cmd := exec.Command(suite.etcdpvc, "--endpoints", c.others(l), "--command-timeout", "5s", "--verify=never", "restore", "--operation", id, "--backup-dir", dir, "--max-txn-ops", "1", "--yes")
	cmd.Env = append(cleanEnv(), "XDG_STATE_HOME="+t.TempDir(), "NO_COLOR=1", "ETCDPVC_TEST_HOLD_BEFORE_SEND=300ms")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var stderr strings.Builder
	held, ended := make(chan struct{}), make(chan struct{})
	holds := 0
	var thaw func()
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderrPipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			// The second write's hold: the first was sent.
			if strings.Contains(sc.Text(), "test hook ETCDPVC_TEST_HOLD_BEFORE_SEND") {
				if holds++; holds == 2 {
					close(held)
				}
			}
		}
	}()
	select {
	case <-held:
		thaw = freeze(t, l)
	case <-ended:
		t.Fatalf("the restore ended before its transaction:\n%s", stderr.String())
	case <-time.After(time.Minute):
		t.Fatal("the restore never reached its transaction")
	}
	<-ended
	werr := cmd.Wait()
	code := 0
	if ee, ok := werr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	out := stdout.String() + stderr.String()
	if code != 9 || !strings.Contains(out, "can no longer apply: nothing deleted") {
		t.Fatalf("a restore whose second delete was lost with the leader: want exit 9, the key fenced, nothing of it deleted; got %d:\n%s", code, out)
	}
	// What it deleted has its undo line, in the hint.
	m := regexp.MustCompile(`(?m)^etcdpvc: hint: run the same command again to resume, or undo what was written with (etcdpvc restore .*)$`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("a restore that stopped after deleting one key names no undo line for it:\n%s", out)
	}
	thaw()
	left := 0
	for _, k := range []string{cmKey, deployKey} {
		if c.settled(t, k) != nil {
			left++
		}
	}
	if left != 1 {
		t.Fatalf("after a restore that deleted one key and fenced the other, %d keys are left, want 1:\n%s", left, out)
	}

	// The same command, pasted, with the leader resumed: the fence is
	// etcdpvc's own, not a change by someone else.
	p := pasted(t, undo)
	if p.code != 0 {
		t.Fatalf("the same restore run again after its fence: want exit 0:\n%s", p)
	}
	for _, k := range []string{cmKey, deployKey} {
		if kv := c.settled(t, k); kv != nil {
			t.Errorf("after the restore run again %s is at revision %d, want it absent:\n%s", k, kv.ModRevision, p)
		}
	}
	// Every undo line printed works pasted: the fenced run's and the
	// resumed run's, which recreate what each deleted.
	for _, u := range append([]string{m[1]}, undoLinesOf(p.stdout)...) {
		q := pasted(t, u)
		if q.code != 0 {
			t.Errorf("pasted undo line: want exit 0:\n%s", q)
		}
	}
	for _, k := range []string{cmKey, deployKey} {
		if c.settled(t, k) == nil {
			t.Errorf("the restore's undo line did not recreate %s", k)
		}
	}
	sameOperations(t, dir)
}
