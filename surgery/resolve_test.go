package surgery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
)

// lossyWriter is the real store with faults injected into its
// transactions: fault decides, for each call, whether the real transaction
// runs and what the caller hears.
type lossyWriter struct {
	*store.Etcd
	calls int
	fault func(call int, real func() (int64, error)) (int64, error)
}

var errLostAnswer = errors.New("injected: connection reset, answer lost")

func (w *lossyWriter) CompareAndSwap(ctx context.Context, key string, expect int64, value []byte, lease int64) (int64, error) {
	w.calls++
	return w.fault(w.calls, func() (int64, error) { return w.Etcd.CompareAndSwap(ctx, key, expect, value, lease) })
}

// TestAmbiguousWrite loses transactions' answers and checks that Apply
// finds out what happened, and never reports a write that was not made or
// hides one that was.
func TestAmbiguousWrite(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	orig := corpus(t, pvcFile)
	rival := func() {
		kv := get(t, s, pvcKey)
		v := mustEditMeta(t, kv.Value, codec.MetaEdit{SetLabels: map[string]string{"rival": "yes"}})
		if _, err := s.CompareAndSwap(ctx, pvcKey, kv.ModRevision, v, 0); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		// fault decides each transaction's fate.
		fault func(t *testing.T, call int, real func() (int64, error)) (int64, error)
		// wantNew: the key ends with the plan's value; wantErr: Apply fails.
		wantNew  bool
		wantErr  error
		wantText string
	}{
		{"answer lost after the write", func(t *testing.T, call int, real func() (int64, error)) (int64, error) {
			if call == 1 {
				if _, err := real(); err != nil {
					t.Fatal(err)
				}
				return 0, errLostAnswer
			}
			return real()
		}, true, nil, "a re-read shows the new value"},
		{"lost before sending, retried", func(t *testing.T, call int, real func() (int64, error)) (int64, error) {
			if call == 1 {
				return 0, errLostAnswer
			}
			return real()
		}, true, nil, "sent again and succeeded"},
		{"written then overwritten", func(t *testing.T, call int, real func() (int64, error)) (int64, error) {
			if _, err := real(); err != nil {
				t.Fatal(err)
			}
			rival()
			return 0, errLostAnswer
		}, false, nil, "the key's history shows the new value written"},
		{"never written, someone else wrote", func(t *testing.T, call int, real func() (int64, error)) (int64, error) {
			rival()
			return 0, errLostAnswer
		}, false, store.ErrConflict, "nothing written"},
		{"never reaches etcd", func(t *testing.T, call int, real func() (int64, error)) (int64, error) {
			return 0, errLostAnswer
		}, false, ErrUncertain, "could not be fenced off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if kv, err := s.Get(ctx, pvcKey, 0); err == nil {
				if _, err := s.CompareAndSwap(ctx, pvcKey, kv.ModRevision, orig, 0); err != nil {
					t.Fatal(err)
				}
			} else {
				create(t, s, pvcKey, orig)
			}
			p, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
			if err != nil {
				t.Fatal(err)
			}
			w := &lossyWriter{Etcd: s}
			w.fault = func(call int, real func() (int64, error)) (int64, error) { return tc.fault(t, call, real) }
			res, err := Apply(ctx, w, p, ApplyOptions{BackupDir: t.TempDir()})
			kv := get(t, s, pvcKey)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantText) {
					t.Fatalf("Apply = %v, want %v saying %q", err, tc.wantErr, tc.wantText)
				}
				if bytes.Equal(kv.Value, p.NewStored) {
					t.Fatal("reported not written, but the key holds the new value")
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply = %v", err)
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], tc.wantText) {
				t.Errorf("warnings %q, want %q", res.Warnings, tc.wantText)
			}
			if got := bytes.Equal(kv.Value, p.NewStored); got != tc.wantNew {
				t.Errorf("key holds the new value: %v, want %v", got, tc.wantNew)
			}
			if tc.wantNew && kv.ModRevision != res.Revision {
				t.Errorf("result revision %d, key at %d", res.Revision, kv.ModRevision)
			}
		})
	}
}

// TestCancelledWriteNotRetried: a caller that gives up between backup and
// transaction gets nothing written, and no retry on its behalf.
func TestCancelledWriteNotRetried(t *testing.T) {
	_, s := startEtcd(t)
	rev := create(t, s, pvcKey, corpus(t, pvcFile))
	ctx, cancel := context.WithCancel(testCtx(t))
	p, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, s, p, ApplyOptions{BackupDir: t.TempDir(), afterBackup: cancel})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("Apply = %v, want a cancelled write with nothing written", err)
	}
	if kv := get(t, s, pvcKey); kv.ModRevision != rev {
		t.Fatalf("written after cancellation: revision %d", kv.ModRevision)
	}
}

// proxied starts etcd with a Proxy in front of it, and returns the store
// opened directly and the store opened through the proxy.
func proxied(t *testing.T) (direct *store.Etcd, p *etcdtest.Proxy, through *store.Etcd) {
	t.Helper()
	c, direct := startEtcd(t)
	p = etcdtest.StartProxy(t, c.ClientURL(0))
	through = openStore(t, []string{p.Endpoint()})
	// The members are listed once per store (a write compares its key on
	// each): now, so that the proxy counts the resolution's requests.
	if err := through.ListMembers(context.Background()); err != nil {
		t.Fatal(err)
	}
	return direct, p, through
}

// resetPVC puts the terminating claim back at pvcKey (creating it if
// absent) and returns its revision.
func resetPVC(t *testing.T, s *store.Etcd, orig []byte) int64 {
	t.Helper()
	kv, err := s.Get(context.Background(), pvcKey, 0)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return create(t, s, pvcKey, orig)
	case err != nil:
		t.Fatal(err)
	}
	rev, err := s.CompareAndSwap(context.Background(), pvcKey, kv.ModRevision, orig, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// valuesSince returns the values the key held after revision rev, oldest
// first (nil for a deletion).
func valuesSince(t *testing.T, s *store.Etcd, key string, rev int64) [][]byte {
	t.Helper()
	var out [][]byte
	if _, err := s.History(context.Background(), key, func(ev store.Event) error {
		if ev.KV.ModRevision > rev {
			out = append(out, ev.KV.Value)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLostTransactionReleased holds a transaction in a proxy (its client is
// told the connection was lost) and lets it reach etcd at a chosen point
// of Apply's resolution: the report must match what etcd did.
func TestLostTransactionReleased(t *testing.T) {
	ctx := testCtx(t)
	direct, proxy, through := proxied(t)
	orig := corpus(t, pvcFile)

	t.Run("released before the fence: written", func(t *testing.T) {
		rev := resetPVC(t, direct, orig)
		p, err := Planner{}.MakePlan(ctx, through, pvcKey, Undelete{})
		if err != nil {
			t.Fatal(err)
		}
		// Held; released as the fence (the request after the re-read)
		// reaches the proxy.
		proxy.HoldTxns(1)
		proxy.ReleaseBefore(2)
		res, err := Apply(ctx, through, p, ApplyOptions{BackupDir: t.TempDir()})
		if err != nil {
			t.Fatalf("Apply = %v", err)
		}
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "a re-read shows the new value") {
			t.Errorf("warnings %q", res.Warnings)
		}
		if got := valuesSince(t, direct, pvcKey, rev); len(got) != 1 || !bytes.Equal(got[0], p.NewStored) {
			t.Fatalf("the key held %d values since the plan's revision, want the new one once", len(got))
		}
		if kv := get(t, direct, pvcKey); kv.ModRevision != res.Revision {
			t.Errorf("result revision %d, key at %d", res.Revision, kv.ModRevision)
		}
	})

	t.Run("released after the fence: its comparison fails, written again", func(t *testing.T) {
		rev := resetPVC(t, direct, orig)
		p, err := Planner{}.MakePlan(ctx, through, pvcKey, Undelete{})
		if err != nil {
			t.Fatal(err)
		}
		// Released just before the retry that follows the fence.
		proxy.HoldTxns(1)
		proxy.ReleaseBefore(3)
		res, err := Apply(ctx, through, p, ApplyOptions{BackupDir: t.TempDir()})
		if err != nil {
			t.Fatalf("Apply = %v", err)
		}
		if proxy.Held() != 0 {
			t.Fatal("the held transaction was not released")
		}
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "rewritten with its own value") || !strings.Contains(res.Warnings[0], "sent again and succeeded") {
			t.Errorf("warnings %q", res.Warnings)
		}
		// The audit log records the fence, a write of the tool's too.
		if log, err := os.ReadFile(res.AuditLog); err != nil || !strings.Contains(string(log), `"resolution":["`) || !strings.Contains(string(log), "rewritten with its own value at revision") {
			t.Errorf("audit log %s (%v): the fence is not recorded", log, err)
		}
		// The fence (the old value again), then the retry; the released
		// transaction wrote nothing.
		got := valuesSince(t, direct, pvcKey, rev)
		if len(got) != 2 || !bytes.Equal(got[0], orig) || !bytes.Equal(got[1], p.NewStored) {
			t.Fatalf("the key held %d values since the plan's revision, want the fence then the new value", len(got))
		}
		if kv := get(t, direct, pvcKey); kv.ModRevision != res.Revision {
			t.Errorf("result revision %d, key at %d", res.Revision, kv.ModRevision)
		}
	})

	t.Run("interrupted, released after the fence: nothing written", func(t *testing.T) {
		rev := resetPVC(t, direct, orig)
		p, err := Planner{}.MakePlan(ctx, through, pvcKey, Undelete{})
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		proxy.HoldTxns(1)
		proxy.OnHold(cancel) // Ctrl-C while the transaction is under way
		defer proxy.OnHold(nil)
		_, err = Apply(cctx, through, p, ApplyOptions{BackupDir: t.TempDir()})
		if err == nil || errors.Is(err, ErrUncertain) || !strings.Contains(err.Error(), "can no longer apply: nothing written") {
			t.Fatalf("Apply = %v, want nothing written after a fence", err)
		}
		if errs := proxy.Release(); len(errs) != 1 || errs[0] != nil {
			t.Fatalf("Release = %v", errs)
		}
		got := valuesSince(t, direct, pvcKey, rev)
		if len(got) != 1 || !bytes.Equal(got[0], orig) {
			t.Fatalf("the key held %d values since the plan's revision, want only the fence", len(got))
		}
	})

	t.Run("a create never released: uncertain", func(t *testing.T) {
		if _, err := direct.Client().Delete(ctx, pvcKey); err != nil {
			t.Fatal(err)
		}
		p := &Plan{Key: pvcKey, NewPlain: orig, NewStored: orig, Description: "recreate"}
		proxy.HoldTxns(100)
		defer proxy.HoldTxns(0)
		dir := t.TempDir()
		_, err := Apply(ctx, through, p, ApplyOptions{BackupDir: dir})
		var ue *UncertainError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUncertain) {
			t.Fatalf("Apply = %v, want an uncertain outcome", err)
		}
		for _, want := range []string{"persistentvolumeclaim www-web-0 in namespace demo", ue.Backup, "may still land"} {
			if want == "" || !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		log, rerr := os.ReadFile(filepath.Join(dir, AuditLogName))
		if rerr != nil || !strings.Contains(string(log), `"outcome":"uncertain"`) {
			t.Errorf("audit log %q (%v) records no uncertain outcome", log, rerr)
		}
		if _, err := direct.Get(ctx, pvcKey, 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("created while held: %v", err)
		}
		// Released late, one of the creates lands: the outcome really
		// was open.
		proxy.HoldTxns(0)
		proxy.Release()
		if kv := get(t, direct, pvcKey); !bytes.Equal(kv.Value, orig) {
			t.Fatal("after the release, the key does not hold the created value")
		}
	})
}

// TestLostTransactionSoak loses the answer of many writes (updates and
// creates, some interrupted as by Ctrl-C) and lets each held transaction
// reach etcd at a random point: before the re-read, between the re-read
// and the fence, after the fence, or only once Apply has returned. After
// every release, a write reported made must be in the key, and one
// reported not made must not be, ever.
func TestLostTransactionSoak(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 40
	}
	ctx := testCtx(t)
	direct, proxy, through := proxied(t)
	orig := corpus(t, pvcFile)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	for i := range n {
		isCreate := rng.IntN(4) == 0
		interrupt := rng.IntN(3) == 0
		releaseAt := rng.IntN(4) // 0: never (after Apply returns), else before the n-th request
		var p *Plan
		if isCreate {
			if _, err := direct.Client().Delete(ctx, pvcKey); err != nil {
				t.Fatal(err)
			}
			v := mustEditMeta(t, orig, codec.MetaEdit{SetLabels: map[string]string{"iteration": strconv.Itoa(i)}})
			p = &Plan{Key: pvcKey, NewPlain: v, NewStored: v, Description: "create"}
		} else {
			resetPVC(t, direct, orig)
			var err error
			if p, err = (Planner{}).MakePlan(ctx, through, pvcKey, Undelete{}); err != nil {
				t.Fatal(err)
			}
		}
		cctx, cancel := context.WithCancel(ctx)
		proxy.HoldTxns(1)
		if releaseAt > 0 {
			proxy.ReleaseBefore(releaseAt)
		}
		if interrupt {
			proxy.OnHold(cancel)
		}
		res, err := Apply(cctx, through, p, ApplyOptions{BackupDir: dir})
		cancel()
		proxy.OnHold(nil)
		proxy.HoldTxns(0)
		proxy.Release()
		kv, gerr := direct.Get(ctx, pvcKey, 0)
		if gerr != nil && !errors.Is(gerr, store.ErrNotFound) {
			t.Fatal(gerr)
		}
		holdsNew := gerr == nil && bytes.Equal(kv.Value, p.NewStored)
		what := fmt.Sprintf("iteration %d (create %v, interrupted %v, released before request %d)", i, isCreate, interrupt, releaseAt)
		switch {
		case err == nil:
			counts["written"]++
			if !holdsNew || kv.ModRevision != res.Revision {
				t.Fatalf("%s: reported written at revision %d, but the key does not hold the new value there", what, res.Revision)
			}
		case errors.Is(err, ErrUncertain):
			counts["uncertain"]++
			if !isCreate && !interrupt {
				t.Errorf("%s: an update the caller waited for ended uncertain: %v", what, err)
			}
		case strings.Contains(err.Error(), "nothing written"):
			counts["nothing written"]++
			if holdsNew {
				t.Fatalf("%s: reported %q, but the key holds the new value", what, err)
			}
		default:
			t.Fatalf("%s: Apply = %v", what, err)
		}
	}
	t.Logf("%d writes with lost answers: %v", n, counts)
}

// TestExecuteUncertainAfterWrite: when the second of two writes loses
// every answer, the error is both partial and uncertain, and lists the
// first write with its backup.
func TestExecuteUncertainAfterWrite(t *testing.T) {
	ctx := testCtx(t)
	direct, proxy, through := proxied(t)
	create(t, direct, pvcKey, corpus(t, pvcFile))
	create(t, direct, nsKey, corpus(t, nsFile))
	first, err := Planner{}.MakePlan(ctx, through, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Planner{}.MakePlan(ctx, through, nsKey, Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"a": "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.HoldTxns(0)
	steps, err := Execute(ctx, through, []*Plan{first, second}, ExecuteOptions{
		ApplyOptions: ApplyOptions{BackupDir: t.TempDir()},
		OnWritten:    func(Step) { proxy.HoldTxns(100) },
	})
	if !errors.Is(err, ErrPartial) || !errors.Is(err, ErrUncertain) || !steps[0].Written() {
		t.Fatalf("Execute = %v, want the first written and the second uncertain", err)
	}
	for _, want := range []string{"persistentvolumeclaim www-web-0 in namespace demo was written", "namespace demo may or may not have been written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
