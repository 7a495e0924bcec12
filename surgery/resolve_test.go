package surgery

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
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
			p, err := Codec{}.MakePlan(ctx, s, pvcKey, Undelete{})
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
	p, err := Codec{}.MakePlan(ctx, s, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, s, p, ApplyOptions{BackupDir: t.TempDir(), AfterBackup: cancel})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("Apply = %v, want a cancelled write with nothing written", err)
	}
	if kv := get(t, s, pvcKey); kv.ModRevision != rev {
		t.Fatalf("written after cancellation: revision %d", kv.ModRevision)
	}
}
