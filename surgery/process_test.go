package surgery

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// helperEnv selects the helper process in TestHelperApplyBlocks.
const helperEnv = "ETCDPVC_SURGERY_HELPER"

// TestHelperApplyBlocks is not a test: run by TestKilledBetweenBackupAndWrite
// in a child process, it plans an undelete and applies it with a hook that
// reports the backup durable and then blocks until the process is killed.
func TestHelperApplyBlocks(t *testing.T) {
	if os.Getenv(helperEnv) != "apply-and-block" {
		t.Skip("helper process for TestKilledBetweenBackupAndWrite")
	}
	ctx := context.Background()
	s := openStore(t, strings.Split(os.Getenv("ETCDPVC_ENDPOINTS"), ","))
	p, err := Planner{}.MakePlan(ctx, s, os.Getenv("ETCDPVC_KEY"), Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, s, p, ApplyOptions{BackupDir: os.Getenv("ETCDPVC_BACKUP_DIR"), afterBackup: func() {
		fmt.Println("BACKUP-DURABLE")
		time.Sleep(2 * hangGuard) // killed long before
	}})
	t.Fatalf("helper was not killed (Apply returned %v)", err)
}

// TestKilledBetweenBackupAndWrite kills a process between its backup and
// its transaction: the backup is there and etcd still holds the old value.
func TestKilledBetweenBackupAndWrite(t *testing.T) {
	c, s := startEtcd(t)
	orig := corpus(t, pvcFile)
	rev := create(t, s, pvcKey, orig)
	dir := filepath.Join(t.TempDir(), "backups")

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperApplyBlocks$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		helperEnv+"=apply-and-block",
		"ETCDPVC_ENDPOINTS="+strings.Join(c.Endpoints(), ","),
		"ETCDPVC_KEY="+pvcKey,
		"ETCDPVC_BACKUP_DIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	ready := false
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() == "BACKUP-DURABLE" {
			ready = true
			break
		}
	}
	if !ready {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper never reached the hook:\n%s\n%s", strings.Join(lines, "\n"), stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, want killed by SIGKILL", err)
	}

	kv := get(t, s, pvcKey)
	if kv.ModRevision != rev || !bytes.Equal(kv.Value, orig) {
		t.Fatalf("etcd changed: revision %d (was %d)", kv.ModRevision, rev)
	}
	files := backups(t, dir)
	if len(files) != 1 {
		t.Fatalf("backups: %v", files)
	}
	b, err := ReadBackup(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Value, orig) || b.ModRevision != rev {
		t.Fatalf("backup: revision %d, holds the original bytes: %v", b.ModRevision, bytes.Equal(b.Value, orig))
	}
	if _, err := os.Stat(filepath.Join(dir, AuditLogName)); !os.IsNotExist(err) {
		t.Errorf("audit log of a write that never happened: %v", err)
	}
	// The interrupted write can simply be made again.
	p, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir}); err != nil {
		t.Fatal(err)
	}
}

// TestLeaderStoppedDuringWrite stops the leader of a 3-member cluster while
// a write is on its way: the write either fails cleanly with nothing
// written or succeeds, and the surviving members agree on the value.
func TestLeaderStoppedDuringWrite(t *testing.T) {
	ctx := testCtx(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 3})
	s := openStore(t, c.Endpoints())
	orig := corpus(t, pvcFile)
	rev := create(t, s, pvcKey, orig)

	p, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	leader := c.LeaderIndex(t)
	stopped := make(chan struct{})
	res, err := Apply(ctx, s, p, ApplyOptions{BackupDir: t.TempDir(), afterBackup: func() {
		go func() {
			defer close(stopped)
			c.StopMember(leader)
		}()
	}})
	<-stopped
	if err != nil {
		t.Logf("Apply failed: %v", err)
		if errors.Is(err, ErrUncertain) {
			t.Fatalf("outcome unknown although the cluster kept quorum: %v", err)
		}
	} else {
		t.Logf("Apply succeeded at revision %d (warnings %q)", res.Revision, res.Warnings)
	}

	// The surviving members agree, at the cluster's current revision.
	latest := get(t, s, pvcKey)
	info, ierr := s.Info(ctx)
	if ierr != nil {
		t.Fatal(ierr)
	}
	for i := range 3 {
		if i == leader {
			continue
		}
		kv, _ := memberValue(t, c, i, pvcKey, info.Revision)
		if kv == nil || kv.ModRevision != latest.ModRevision || !bytes.Equal(kv.Value, latest.Value) {
			t.Fatalf("member %d disagrees with the cluster: %+v vs revision %d", i, kv, latest.ModRevision)
		}
	}
	switch {
	case err == nil:
		if latest.ModRevision != res.Revision || !bytes.Equal(latest.Value, p.NewStored) {
			t.Fatalf("Apply succeeded but the key is at revision %d", latest.ModRevision)
		}
	case latest.ModRevision == rev:
		if !bytes.Equal(latest.Value, orig) || !strings.Contains(err.Error(), "nothing written") {
			t.Fatalf("failed write: key unchanged but error %q does not say so", err)
		}
	default:
		t.Fatalf("Apply failed (%v) but the key moved to revision %d", err, latest.ModRevision)
	}
}
