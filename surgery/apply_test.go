package surgery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestUndeleteTerminatingPVC is the scenario the tool exists for: a PVC
// stuck Terminating is taken out of deletion, with a durable backup first.
func TestUndeleteTerminatingPVC(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	orig := corpus(t, pvcFile)
	rev := create(t, s, pvcKey, orig)
	dir := filepath.Join(t.TempDir(), "state", "backups")

	p, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	if p.NoOp || p.Expect != rev || p.Before.KV.ModRevision != rev {
		t.Fatalf("plan: NoOp %v, Expect %d, want revision %d", p.NoOp, p.Expect, rev)
	}
	for _, want := range []string{
		fmt.Sprintf("--- %s (revision %d)\n", pvcKey, rev),
		fmt.Sprintf("+++ %s (edited)\n", pvcKey),
		"-  deletionGracePeriodSeconds: 0\n",
		"-  deletionTimestamp: \"2026-11-30T00:35:10Z\"\n",
	} {
		if !strings.Contains(p.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, p.Diff)
		}
	}
	for _, line := range strings.Split(p.Diff, "\n") {
		if strings.Contains(line, "pvc-protection") && !strings.HasPrefix(line, " ") {
			t.Errorf("diff touches the pvc-protection finalizer:\n%s", p.Diff)
		}
	}

	res, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir, Endpoints: []string{"test"}, ToolVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	kv := get(t, s, pvcKey)
	if kv.ModRevision <= rev || kv.ModRevision != res.Revision {
		t.Errorf("mod revision %d after the write (result %d), read at %d", kv.ModRevision, res.Revision, rev)
	}
	if !bytes.Equal(kv.Value, p.NewStored) {
		t.Error("stored value is not the plan's")
	}
	obj := decode(t, kv.Value)
	if obj.Meta.DeletionTimestamp != nil || obj.Meta.DeletionGracePeriodSeconds != nil {
		t.Errorf("deletion not cleared: %v %v", obj.Meta.DeletionTimestamp, obj.Meta.DeletionGracePeriodSeconds)
	}
	if diff := cmp.Diff([]string{"kubernetes.io/pvc-protection"}, obj.Meta.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	if !bytes.Equal(outsideMetadata(t, kv.Value), outsideMetadata(t, orig)) {
		t.Error("bytes outside metadata changed")
	}

	for path, mode := range map[string]os.FileMode{dir: 0o700, res.BackupPath: 0o600, res.AuditLog: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), mode)
		}
	}
	b, err := ReadBackup(res.BackupPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Value, orig) {
		t.Error("backup does not hold the original bytes")
	}
	if b.Key != pvcKey || b.ModRevision != rev || b.NewSHA256 != digest(kv.Value) || b.Absent {
		t.Errorf("backup %+v", b)
	}
	if !strings.HasSuffix(res.BackupPath, fmt.Sprintf("-registry_persistentvolumeclaims_demo_www-web-0-r%d.json", rev)) {
		t.Errorf("backup name %s", res.BackupPath)
	}
	log, err := os.ReadFile(res.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"key":"` + pvcKey + `"`, fmt.Sprintf(`"fromRevision":%d,"toRevision":%d`, rev, kv.ModRevision), `"newSha256":"` + digest(kv.Value) + `"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("audit log lacks %s:\n%s", want, log)
		}
	}

	// Undeleting again changes nothing, and Apply refuses a no-op plan.
	again, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	if !again.NoOp {
		t.Fatalf("second undelete is not a no-op:\n%s", again.Diff)
	}
	if _, err := Apply(ctx, s, again, ApplyOptions{BackupDir: dir}); !errors.Is(err, ErrNoOp) {
		t.Errorf("Apply(no-op) = %v, want ErrNoOp", err)
	}
}

// TestUndeleteKeepsEveryOtherByte undeletes values a typed re-encode would
// damage: a field this build does not know, and a kind it does not know.
func TestUndeleteKeepsEveryOtherByte(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	orig := corpus(t, pvcFile)
	for i, tc := range []struct {
		name  string
		value []byte
	}{
		{"unknown-field", withUnknownSpecField(t, orig)},
		{"unknown-kind", asUnknownKind(t, orig)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("/registry/persistentvolumeclaims/demo/www-web-%d", i)
			if tc.name == "unknown-kind" {
				key = "/registry/route.openshift.io/routes/demo/www-web-0"
			}
			create(t, s, key, tc.value)
			p, err := Planner{}.MakePlan(ctx, s, key, Undelete{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			got := get(t, s, key).Value
			if !bytes.Equal(outsideMetadata(t, got), outsideMetadata(t, tc.value)) {
				t.Fatal("bytes outside metadata changed")
			}
			if tc.name == "unknown-field" && !bytes.Contains(got, []byte("from-the-future")) {
				t.Fatal("unknown field 999 lost")
			}
			obj := decode(t, got)
			if obj.Meta.DeletionTimestamp != nil || len(obj.Meta.Finalizers) != 1 {
				t.Fatalf("metadata after undelete: %+v", obj.Meta)
			}
		})
	}
}

// incr is an edit that increments the "counter" label: a read-modify-write.
type incr struct{}

func (incr) Transform(cur *kubevalue.Current) ([]byte, error) {
	n, _ := strconv.Atoi(cur.Obj.Meta.Labels["counter"])
	return codec.EditMeta(cur.Plain, codec.MetaEdit{SetLabels: map[string]string{"counter": strconv.Itoa(n + 1)}})
}

func (incr) Describe() string { return "increment the counter label" }

// rivalIncr increments the counter label the way another client would: a
// read and a compare-and-swap transaction of its own.
func rivalIncr(ctx context.Context, cli *clientv3.Client, key string, kv *store.KeyValue) (bool, error) {
	obj, err := codec.Decode(kv.Value)
	if err != nil {
		return false, err
	}
	n, _ := strconv.Atoi(obj.Meta.Labels["counter"])
	v, err := codec.EditMeta(kv.Value, codec.MetaEdit{SetLabels: map[string]string{"counter": strconv.Itoa(n + 1)}})
	if err != nil {
		return false, err
	}
	resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
		Then(clientv3.OpPut(key, string(v))).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// TestCASRace races Apply against another writer incrementing the same
// counter and counts lost updates: every successful write of either must
// show in the final count.
func TestCASRace(t *testing.T) {
	ctx := testCtx(t)
	c, s := startEtcd(t)
	cli := c.Client(t)
	create(t, s, pvcKey, corpus(t, "persistentvolumeclaims__demo__www-web-0__pending"))
	dir := t.TempDir()
	const lockstep, free = 500, 500

	var ours, theirs, conflicts int
	// Lockstep rounds: both read the same revision, then both write at
	// once; exactly one may win.
	for round := range lockstep {
		p, err := Planner{}.MakePlan(ctx, s, pvcKey, incr{})
		if err != nil {
			t.Fatal(err)
		}
		kv := get(t, s, pvcKey)
		type outcome struct {
			ok  bool
			err error
		}
		rival := make(chan outcome, 1)
		go func() {
			ok, err := rivalIncr(ctx, cli, pvcKey, kv)
			rival <- outcome{ok, err}
		}()
		_, err = Apply(ctx, s, p, ApplyOptions{BackupDir: dir})
		r := <-rival
		if r.err != nil {
			t.Fatal(r.err)
		}
		switch {
		case err == nil && !r.ok:
			ours++
		case errors.Is(err, store.ErrConflict) && r.ok:
			theirs++
			conflicts++
		default:
			t.Fatalf("round %d: Apply = %v, rival succeeded %v: want exactly one winner", round, err, r.ok)
		}
	}
	// Free-running rounds.
	done := make(chan error, 1)
	var theirsFree int
	go func() {
		for range free {
			kv, err := s.Get(ctx, pvcKey, 0)
			if err != nil {
				done <- err
				return
			}
			ok, err := rivalIncr(ctx, cli, pvcKey, kv)
			if err != nil {
				done <- err
				return
			}
			if ok {
				theirsFree++
			}
		}
		done <- nil
	}()
	for range free {
		p, err := Planner{}.MakePlan(ctx, s, pvcKey, incr{})
		if err != nil {
			t.Fatal(err)
		}
		switch _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir}); {
		case err == nil:
			ours++
		case errors.Is(err, store.ErrConflict):
			conflicts++
		default:
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	theirs += theirsFree

	final, _ := strconv.Atoi(decode(t, get(t, s, pvcKey).Value).Meta.Labels["counter"])
	lost := ours + theirs - final
	t.Logf("%d rounds: %d writes by Apply, %d by the rival, %d conflicts refused, final counter %d, lost updates %d",
		lockstep+free, ours, theirs, conflicts, final, lost)
	if lost != 0 {
		t.Fatalf("lost updates: %d", lost)
	}
}

// TestConflict changes the key between plan and write: nothing is written,
// the error says so exactly, and the backup (of a write that did not
// happen, which is harmless) exists.
func TestConflict(t *testing.T) {
	ctx := testCtx(t)
	c, s := startEtcd(t)
	rev := create(t, s, pvcKey, corpus(t, pvcFile))
	for _, tc := range []struct {
		name   string
		change func() int64
		want   string
	}{
		{"modified", func() int64 {
			resp, err := c.Client(t).Put(ctx, pvcKey, string(corpus(t, "persistentvolumeclaims__demo__www-web-0__pending")))
			if err != nil {
				t.Fatal(err)
			}
			return resp.Header.Revision
		}, "object changed since it was read (revision %d → %d); nothing written"},
		{"deleted", func() int64 {
			if _, err := c.Client(t).Delete(ctx, pvcKey); err != nil {
				t.Fatal(err)
			}
			return 0
		}, "object changed since it was read (revision %d → deleted); nothing written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := Planner{}.MakePlan(ctx, s, pvcKey, Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"x": "y"}}})
			if err != nil {
				t.Fatal(err)
			}
			rev = p.Expect
			now := tc.change()
			before, _ := s.Get(ctx, pvcKey, 0)
			_, err = Apply(ctx, s, p, ApplyOptions{BackupDir: dir})
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Apply = %v, want ErrConflict", err)
			}
			want := fmt.Sprintf(tc.want, rev)
			if now != 0 {
				want = fmt.Sprintf(tc.want, rev, now)
			}
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			after, _ := s.Get(ctx, pvcKey, 0)
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("key changed by a refused write (-before +after):\n%s", diff)
			}
			if files := backups(t, dir); len(files) != 1 {
				t.Errorf("backups: %v", files)
			}
			// The intent line goes before the transaction; a refused
			// write then records its conflict, never a write.
			recs, _, err := ReadAuditLog(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Outcome != OutcomeIntent && r.Outcome != OutcomeConflict {
					t.Errorf("audit line of a refused write: outcome %q", r.Outcome)
				}
			}
			if n := len(recs); n == 0 || recs[n-1].Outcome != OutcomeConflict {
				t.Errorf("audit log of a refused write: %+v, want its conflict last", recs)
			}
		})
	}
}

// TestBackupFailureWritesNothing: no backup, no write.
func TestBackupFailureWritesNothing(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	rev := create(t, s, pvcKey, corpus(t, pvcFile))
	p, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	called := false
	_, err = Apply(ctx, s, p, ApplyOptions{BackupDir: filepath.Join(file, "backups"), afterBackup: func() { called = true }})
	if err == nil || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("Apply = %v, want a backup error", err)
	}
	if called || get(t, s, pvcKey).ModRevision != rev {
		t.Fatal("written without a backup")
	}
}

// TestLeaseKept edits a key attached to a lease: the lease stays, and
// revoking it still deletes the key.
func TestLeaseKept(t *testing.T) {
	ctx := testCtx(t)
	c, s := startEtcd(t)
	cli := c.Client(t)
	lease, err := cli.Grant(ctx, 3660)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, evKey, string(corpus(t, evFile)), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	p, err := Planner{}.MakePlan(ctx, s, evKey, Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"etcdpvc.io/checked": "yes"}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Lease != int64(lease.ID) {
		t.Fatalf("plan lease %d, want %d", p.Lease, lease.ID)
	}
	if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	kv := get(t, s, evKey)
	if kv.Lease != int64(lease.ID) {
		t.Fatalf("lease after the edit: %d, want %d", kv.Lease, lease.ID)
	}
	if got := decode(t, kv.Value).Meta.Labels["etcdpvc.io/checked"]; got != "yes" {
		t.Fatalf("label = %q", got)
	}
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, evKey, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after revoking the lease: %v, want ErrNotFound", err)
	}
}

// TestApplyTooLarge: a value larger than etcd accepts in one request is
// refused before the backup, naming the object, its size and the limit;
// at the limit it is written.
func TestApplyTooLarge(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	orig := corpus(t, pvcFile)
	create(t, s, pvcKey, orig)
	p, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	big := *p
	big.NewStored = bytes.Repeat([]byte("x"), store.MaxRequestBytes)
	dir := filepath.Join(t.TempDir(), "backups")
	_, err = Apply(ctx, s, &big, ApplyOptions{BackupDir: dir})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Apply = %v, want ErrTooLarge", err)
	}
	for _, want := range []string{"persistentvolumeclaim www-web-0 in namespace demo", fmt.Sprintf("is %d bytes", store.MaxRequestBytes), "(--max-request-bytes, 1.50 MiB)", "nothing written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a backup directory was made for a refused write: %v", err)
	}
	// The largest value the check lets through is one etcd takes.
	fits := *p
	fits.NewStored = bytes.Repeat([]byte("x"), store.MaxRequestBytes-store.CompareAndSwapSize(pvcKey, nil))
	if _, err := Apply(ctx, s, &fits, ApplyOptions{BackupDir: dir}); err != nil {
		t.Fatalf("Apply at the limit = %v", err)
	}
}

// TestExecuteStopsPartWay: Execute writes plans in order and stops at the
// first failure; a failure after a write is a *PartialError that lists
// what was written, with its backup, and what was not.
func TestExecuteStopsPartWay(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	create(t, s, pvcKey, corpus(t, pvcFile))
	nsRev := create(t, s, nsKey, corpus(t, nsFile))
	plan := func(key string, e Edit) *Plan {
		t.Helper()
		p, err := Planner{}.MakePlan(ctx, s, key, e)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	label := Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"step": "one"}}}

	// The second key changes after planning: the first is written, the
	// second is not, and the error says so.
	first, second := plan(pvcKey, Undelete{}), plan(nsKey, label)
	nsNow := mustEditMeta(t, get(t, s, nsKey).Value, codec.MetaEdit{SetLabels: map[string]string{"rival": "yes"}})
	if _, err := s.CompareAndSwap(ctx, nsKey, nsRev, nsNow, 0); err != nil {
		t.Fatal(err)
	}
	var seen []string
	steps, err := Execute(ctx, s, []*Plan{first, second}, ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}, OnWritten: func(st Step) { seen = append(seen, st.Plan.Key) }})
	var pe *PartialError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPartial) || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Execute = %v, want a partial write ending in a conflict", err)
	}
	if len(steps) != 2 || !steps[0].Written() || steps[1].Written() || len(seen) != 1 || seen[0] != pvcKey {
		t.Fatalf("steps %+v, written %v", steps, seen)
	}
	for _, want := range []string{
		"partly written: persistentvolumeclaim www-web-0 in namespace demo was written (revision ",
		"backup " + steps[0].Result.BackupPath,
		"; namespace demo was not written: object changed since it was read",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	// Nothing written before the failure: the failure's own error.
	again := plan(pvcKey, label)
	stale := plan(nsKey, label)
	stale.Expect, stale.Before.KV.ModRevision = nsRev, nsRev
	if _, err := Execute(ctx, s, []*Plan{stale, again}, ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}}); errors.Is(err, ErrPartial) || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Execute = %v, want a plain conflict", err)
	}
	if kv := get(t, s, pvcKey); bytes.Equal(kv.Value, again.NewStored) {
		t.Fatal("a plan after the failure was written")
	}
}
