package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// killAfterCommit runs etcdpvc with args and the test hook
// ETCDPVC_TEST_HOLD_AFTER_COMMIT, and kills it (SIGKILL) once it says its
// transaction is applied, before its outcome line.
func killAfterCommit(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(suite.etcdpvc, args...)
	cmd.Env = append(cleanEnv(), "XDG_STATE_HOME="+t.TempDir(), "NO_COLOR=1", "ETCDPVC_TEST_HOLD_AFTER_COMMIT=2m")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	held := make(chan string, 1)
	go func() {
		var out strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "test hook ETCDPVC_TEST_HOLD_AFTER_COMMIT") {
				held <- ""
				return
			}
		}
		held <- out.String()
	}()
	select {
	case out := <-held:
		if out != "" {
			t.Fatalf("etcdpvc ended before its write was committed:\n%s", out)
		}
	case <-time.After(time.Minute):
		t.Fatal("etcdpvc never reached the window between commit and outcome line")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// TestCrashBetweenCommitAndAudit: etcdpvc killed (SIGKILL, as a crash or
// an OOM kill) after a write's transaction applied on a real three-member
// etcd and before its outcome line. audit.log holds the write's intent
// line, and the backup names the same operation; restore --operation,
// pasted into a new shell, undoes it; run again it has nothing to do; its
// own undo line works pasted too. The window is made certain by the test
// hook ETCDPVC_TEST_HOLD_AFTER_COMMIT.
func TestCrashBetweenCommitAndAudit(t *testing.T) {
	c := startCluster(t, "crash", ClusterOptions{EtcdMembers: 3, EtcdOnly: true})
	c.put(t, nsKey, corpusValue(t, "namespaces__-__demo.bin"))
	original := corpusValue(t, "configmaps__demo__web-config.bin")
	c.put(t, cmKey, original)
	before := c.settled(t, cmKey)
	dir := t.TempDir()
	all := c.Members[0].ClientURL + "," + c.others(c.Members[0])

	killAfterCommit(t, "--endpoints", all, "--verify=never", "--backup-dir", dir, "label", "cm", "web-config", "-n", "demo", "crashed=yes", "--yes")

	// The write applied; audit.log has its intent alone.
	if kv := c.settled(t, cmKey); bytes.Equal(kv.Value, original) || kv.ModRevision <= before.ModRevision {
		t.Fatalf("the label killed after its commit is not in etcd: %+v", kv)
	}
	lines := auditLines(t, dir)
	if len(lines) != 1 || lines[0].Outcome != "intent" {
		t.Fatalf("audit.log after a kill between commit and outcome line: want the intent line alone, got %+v", lines)
	}
	sameOperations(t, dir)

	undo := fmt.Sprintf("etcdpvc restore --operation %s --backup-dir %s", lines[0].OperationID, dir)
	p := pasted(t, undo)
	if p.code != 0 || !strings.Contains(p.stdout, "written: ") {
		t.Fatalf("restore --operation of a write killed before its outcome line: want it undone (exit 0):\n%s", p)
	}
	if kv := c.settled(t, cmKey); !bytes.Equal(kv.Value, original) {
		t.Fatalf("after the restore the key holds %q, want the bytes before the label", kv.Value)
	}
	// The documented resume: the same command again has nothing to do.
	if q := pasted(t, undo); q.code != 0 || !strings.Contains(q.stdout+q.stderr, "nothing to do") {
		t.Errorf("the same restore run again: want exit 0, nothing to do:\n%s", q)
	}
	if kv := c.settled(t, cmKey); !bytes.Equal(kv.Value, original) {
		t.Fatalf("the restore run again wrote: the key holds %q", kv.Value)
	}
	// The restore's own undo line puts the label back.
	undos := undoLinesOf(p.stdout)
	if len(undos) != 1 {
		t.Fatalf("the restore printed %d undo lines, want 1:\n%s", len(undos), p)
	}
	if q := pasted(t, undos[0]); q.code != 0 {
		t.Errorf("the restore's undo line pasted: want exit 0:\n%s", q)
	}
	if kv := c.settled(t, cmKey); bytes.Equal(kv.Value, original) {
		t.Errorf("the restore's undo line left the key as before the label")
	}
	sameOperations(t, dir)
}

// TestCrashBetweenCommitAndAuditOfASet: recover namespace, its two
// creates in one transaction, killed after the transaction applied and
// before the outcome lines: restore --operation pasted into a new shell
// deletes both, and run again has nothing to do.
func TestCrashBetweenCommitAndAuditOfASet(t *testing.T) {
	c := startCluster(t, "crashset", ClusterOptions{EtcdMembers: 3, EtcdOnly: true})
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
	killAfterCommit(t, "--endpoints", all, "--verify=never", "--backup-dir", dir, "recover", "namespace", "demo", "--rev", fmt.Sprint(rev), "--yes")

	for _, k := range []string{cmKey, deployKey} {
		if c.settled(t, k) == nil {
			t.Fatalf("the recovery killed after its commit did not create %s", k)
		}
	}
	lines := auditLines(t, dir)
	if len(lines) != 2 || lines[0].Outcome != "intent" || lines[1].Outcome != "intent" {
		t.Fatalf("audit.log after a kill between commit and outcome lines: want the two intent lines alone, got %+v", lines)
	}
	sameOperations(t, dir)

	undo := fmt.Sprintf("etcdpvc restore --operation %s --backup-dir %s", lines[0].OperationID, dir)
	p := pasted(t, undo)
	if p.code != 0 {
		t.Fatalf("restore --operation of a recovery killed before its outcome lines: want exit 0:\n%s", p)
	}
	for _, k := range []string{cmKey, deployKey} {
		if kv := c.settled(t, k); kv != nil {
			t.Errorf("after the restore %s is at revision %d, want it absent:\n%s", k, kv.ModRevision, p)
		}
	}
	if q := pasted(t, undo); q.code != 0 || !strings.Contains(q.stdout+q.stderr, "nothing to do") {
		t.Errorf("the same restore run again: want exit 0, nothing to do:\n%s", q)
	}
	for _, u := range undoLinesOf(p.stdout) {
		if q := pasted(t, u); q.code != 0 {
			t.Errorf("the restore's undo line pasted: want exit 0:\n%s", q)
		}
	}
	for _, k := range []string{cmKey, deployKey} {
		if c.settled(t, k) == nil {
			t.Errorf("the restore's undo line did not recreate %s", k)
		}
	}
	sameOperations(t, dir)
}
