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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/store"
)

// cmCreatePlans plans creating one ConfigMap per name in namespace demo
// (recover plans: creates of absent keys).
func cmCreatePlans(t testing.TB, s *store.Etcd, names ...string) []*Plan {
	t.Helper()
	obj, err := codec.Decode(corpus(t, "configmaps__demo__web-config"))
	if err != nil {
		t.Fatal(err)
	}
	plans := make([]*Plan, len(names))
	for i, name := range names {
		cm := obj.Typed.(*corev1.ConfigMap).DeepCopy()
		cm.Name, cm.UID = name, types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		v, err := codec.EncodeTyped(cm, codec.FormatProtobuf)
		if err != nil {
			t.Fatal(err)
		}
		if plans[i], err = (Planner{}).PlanRecover(testCtx(t), s, store.KeyValue{Key: "/registry/configmaps/demo/" + name, Value: v, ModRevision: 1}); err != nil {
			t.Fatal(err)
		}
	}
	return plans
}

// auditHelperNames are the ConfigMaps TestHelperAuditWrites creates.
var auditHelperNames = []string{"audit-a", "audit-b", "audit-c"}

// TestHelperAuditWrites is not a test: run in a child process by the
// tests below, it creates the three ConfigMaps of auditHelperNames in one
// operation (ETCDPVC_OPERATION), one transaction each, and at the write
// ETCDPVC_AT, once it is made and before its outcome line is appended,
// either lowers the process's file-size limit to audit.log's size plus
// ETCDPVC_SLACK bytes (ETCDPVC_MODE fsize: the append then fails for real,
// part way) or says COMMITTED and waits to be killed (kill).
func TestHelperAuditWrites(t *testing.T) {
	if os.Getenv(helperEnv) != "audit-writes" {
		t.Skip("helper process")
	}
	ctx := context.Background()
	s := openStore(t, strings.Split(os.Getenv("ETCDPVC_ENDPOINTS"), ","))
	dir := os.Getenv("ETCDPVC_BACKUP_DIR")
	at, _ := strconv.Atoi(os.Getenv("ETCDPVC_AT"))
	slack, _ := strconv.ParseUint(os.Getenv("ETCDPVC_SLACK"), 10, 64)
	writes := 0
	o := ApplyOptions{BackupDir: dir, OperationID: os.Getenv("ETCDPVC_OPERATION"), AfterSend: func() {
		if writes++; writes != at {
			return
		}
		switch os.Getenv("ETCDPVC_MODE") {
		case "fsize":
			fi, err := os.Stat(filepath.Join(dir, AuditLogName))
			if err != nil {
				panic(err)
			}
			var lim syscall.Rlimit
			if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
				panic(err)
			}
			lim.Cur = uint64(fi.Size()) + slack
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
				panic(err)
			}
		case "kill":
			fmt.Println("COMMITTED")
			time.Sleep(2 * hangGuard) // killed long before
		}
	}}
	_, err := Execute(ctx, s, cmCreatePlans(t, s, auditHelperNames...), ExecuteOptions{ApplyOptions: o})
	fmt.Printf("RESULT notRecorded=%v partial=%v\nERROR %v\n", errors.Is(err, ErrNotRecorded), errors.Is(err, ErrPartial), err)
}

// runAuditHelper runs TestHelperAuditWrites with env; in kill mode it
// kills the child once it says COMMITTED. It returns the child's output.
func runAuditHelper(t *testing.T, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperAuditWrites$", "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(), helperEnv+"=audit-writes"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() == "COMMITTED" {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	cmd.Wait()
	return strings.Join(lines, "\n") + "\n" + stderr.String()
}

// restoreOperation undoes operation id of dir through s as restore
// --operation does, its own backups and audit lines in dir.
func restoreOperation(t *testing.T, s *store.Etcd, dir, id string) ([]Step, error) {
	t.Helper()
	backups, _, err := OperationBackups(dir, id)
	if err != nil {
		return nil, err
	}
	plans, err := Planner{}.PlanRestores(testCtx(t), s, backups, false)
	if err != nil {
		return nil, err
	}
	return Execute(testCtx(t), s, plans, ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}, MaxTxnOps: 10})
}

// TestAuditAppendFails: the last write of three is made and audit.log
// cannot take its outcome line (a file-size limit, for real: the line is
// torn). The write fails (ErrNotRecorded), never reports success; the
// operation's undo restores all three keys, reading the backups; the torn
// line is ended before the next append, whose lines read whole.
func TestAuditAppendFails(t *testing.T) {
	c, s := startEtcd(t)
	dir := filepath.Join(t.TempDir(), "backups")
	id := NewOperationID(time.Now())
	out := runAuditHelper(t, "ETCDPVC_ENDPOINTS="+strings.Join(c.Endpoints(), ","), "ETCDPVC_BACKUP_DIR="+dir,
		"ETCDPVC_OPERATION="+id, "ETCDPVC_MODE=fsize", "ETCDPVC_AT=3", "ETCDPVC_SLACK=40")
	if !strings.Contains(out, "RESULT notRecorded=true") || !strings.Contains(out, "configmap audit-c in namespace demo was written") {
		t.Fatalf("a write whose outcome line was lost did not fail as not recorded:\n%s", out)
	}
	for _, name := range auditHelperNames {
		get(t, s, "/registry/configmaps/demo/"+name)
	}

	if _, err := restoreOperation(t, s, dir, id); err != nil {
		t.Fatal(err)
	}
	for _, name := range auditHelperNames {
		if _, err := s.Get(testCtx(t), "/registry/configmaps/demo/"+name, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the operation's undo left it (%v)", name, err)
		}
	}
	recs, skipped, err := ReadAuditLog(dir)
	if err != nil || skipped != 1 {
		t.Fatalf("ReadAuditLog: skipped %d, %v; want the torn line alone skipped", skipped, err)
	}
	restored := 0
	for _, r := range recs {
		if r.OperationID != id && r.Outcome == OutcomeIntent {
			restored++
		}
	}
	if restored != 3 {
		t.Errorf("the restore's intent lines read: %d, want 3 (a torn line swallowed one)", restored)
	}
}

// TestKilledAfterCommit kills a write of three keys after its second
// transaction was applied and before its outcome line: the undo restores
// both keys written, the second by its backup (its intent line is there,
// its outcome is not), and the third, never written, is nothing to do.
func TestKilledAfterCommit(t *testing.T) {
	c, s := startEtcd(t)
	dir := filepath.Join(t.TempDir(), "backups")
	id := NewOperationID(time.Now())
	out := runAuditHelper(t, "ETCDPVC_ENDPOINTS="+strings.Join(c.Endpoints(), ","), "ETCDPVC_BACKUP_DIR="+dir,
		"ETCDPVC_OPERATION="+id, "ETCDPVC_MODE=kill", "ETCDPVC_AT=2")
	if !strings.Contains(out, "COMMITTED") {
		t.Fatalf("helper never reached the hook:\n%s", out)
	}
	get(t, s, "/registry/configmaps/demo/audit-b")

	backups, _, err := OperationBackups(dir, id)
	if err != nil || len(backups) != 2 {
		t.Fatalf("OperationBackups: %d backups, %v; want the 2 of the writes made", len(backups), err)
	}
	if !strings.Contains(strings.Join(backups[1].Warnings, "\n"), "not its outcome") {
		t.Errorf("backup of the write whose outcome is not recorded: warnings %q", backups[1].Warnings)
	}
	if _, err := restoreOperation(t, s, dir, id); err != nil {
		t.Fatal(err)
	}
	for _, name := range auditHelperNames {
		if _, err := s.Get(testCtx(t), "/registry/configmaps/demo/"+name, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the operation's undo left it (%v)", name, err)
		}
	}

	// A backup audit.log names as written, gone: the whole undo is
	// refused, naming it.
	id2 := NewOperationID(time.Now())
	steps, err := Execute(testCtx(t), s, cmCreatePlans(t, s, auditHelperNames...), ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir, OperationID: id2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(steps[1].Result.BackupPath); err != nil {
		t.Fatal(err)
	}
	_, _, err = OperationBackups(dir, id2)
	if !errors.Is(err, ErrOperationIncomplete) || !strings.Contains(err.Error(), "/registry/configmaps/demo/audit-b (backup "+filepath.Base(steps[1].Result.BackupPath)+", missing)") {
		t.Fatalf("OperationBackups with a backup missing = %v, want ErrOperationIncomplete naming it", err)
	}
}

// TestRestoreResumeAfterFence: an undo of three creates whose transaction
// of deletes lost its answer is fenced (a key rewritten with its own
// bytes) and deletes nothing; run again, the same undo takes the fence,
// which audit.log records, for its own and deletes all three.
func TestRestoreResumeAfterFence(t *testing.T) {
	ctx := testCtx(t)
	direct, proxy, through := proxied(t)
	dir := t.TempDir()
	steps, err := Execute(ctx, direct, cmCreatePlans(t, direct, auditHelperNames...), ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	id := steps[0].Result.Record.OperationID

	proxy.HoldTxns(1)
	_, err = restoreOperation(t, through, dir, id)
	var fe *FenceError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "nothing of it was deleted") {
		t.Fatalf("restore with its answer lost = %v, want nothing deleted after a fence", err)
	}
	if errs := proxy.Release(); len(errs) != 1 {
		t.Fatalf("released %d held transactions, want 1", len(errs))
	}
	if kv := get(t, direct, fe.Key); kv.ModRevision != fe.Revision || kv.Version != 2 {
		t.Fatalf("%s at revision %d version %d, want the fence's revision %d", fe.Key, kv.ModRevision, kv.Version, fe.Revision)
	}

	if _, err := restoreOperation(t, direct, dir, id); err != nil {
		t.Fatalf("the same restore run again: %v", err)
	}
	for _, name := range auditHelperNames {
		if _, err := direct.Get(ctx, "/registry/configmaps/demo/"+name, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: left (%v)", name, err)
		}
	}

	// A change by someone else after the fence is still refused.
	steps, err = Execute(ctx, direct, cmCreatePlans(t, direct, auditHelperNames...), ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	id = steps[0].Result.Record.OperationID
	proxy.HoldTxns(1)
	if _, err = restoreOperation(t, through, dir, id); !errors.As(err, &fe) {
		t.Fatalf("restore with its answer lost = %v, want a fence", err)
	}
	proxy.Release()
	kv := get(t, direct, fe.Key)
	if _, err := direct.CompareAndSwap(ctx, fe.Key, kv.ModRevision, append(bytes.Clone(kv.Value), 0), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := restoreOperation(t, direct, dir, id); !errors.Is(err, ErrChangedSinceBackup) {
		t.Fatalf("restore after a change by someone else = %v, want it refused", err)
	}
}

// TestNeverSentThenChanged: a write killed after its backup and before its
// transaction, its key changed afterwards by someone else. The undo of its
// operation finds, in the key's history, that the write was never made:
// nothing to do, not "changed after etcdpvc's write".
func TestNeverSentThenChanged(t *testing.T) {
	c, s := startEtcd(t)
	orig := corpus(t, pvcFile)
	rev := create(t, s, pvcKey, orig)
	dir := filepath.Join(t.TempDir(), "backups")
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperApplyBlocks$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=apply-and-block", "ETCDPVC_ENDPOINTS="+strings.Join(c.Endpoints(), ","),
		"ETCDPVC_KEY="+pvcKey, "ETCDPVC_BACKUP_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "BACKUP-DURABLE" {
	}
	cmd.Process.Kill()
	cmd.Wait()
	files := backups(t, dir)
	if len(files) != 1 {
		t.Fatalf("backups: %v", files)
	}
	b, err := ReadBackup(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompareAndSwap(testCtx(t), pvcKey, rev, append(bytes.Clone(orig), 0), 0); err != nil {
		t.Fatal(err)
	}
	bs, _, err := OperationBackups(dir, b.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := Planner{}.PlanRestores(testCtx(t), s, bs, false)
	if err != nil || len(plans) != 1 || !plans[0].NoOp || !strings.Contains(plans[0].NoOpReason, "was never made") {
		t.Fatalf("PlanRestores = %v, %v; want nothing to do: the write was never made", plans, err)
	}
}
