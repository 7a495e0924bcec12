package surgery

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/store"
)

// TestRecoverSetVerifier checks that a RecoverSet is checked as any write
// (Execute): every object before the first write, a refusal of any
// writing nothing and leaving no backup; each object after its write, in
// transactions of several creates too; a refusal after the write is
// ErrNotAccepted, the writes made.
func TestRecoverSetVerifier(t *testing.T) {
	errNo := errors.New("the apiserver says no")
	t.Run("refused before: nothing written", func(t *testing.T) {
		direct, _, _ := proxied(t)
		plan := planDemo(t, direct, direct)
		items := plan.Writes()
		last := items[len(items)-1].Key
		v := &refusals{before: map[string]error{last: errNo}}
		dir := t.TempDir()
		res, err := WriteRecoverSet(testCtx(t), direct, plan, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}, MaxTxnOps: 4, Verifier: v})
		if !errors.Is(err, errNo) {
			t.Fatalf("WriteRecoverSet = %v, want the refusal", err)
		}
		if len(res.Written) != 0 {
			t.Errorf("%d written", len(res.Written))
		}
		for _, it := range items {
			if _, err := direct.Get(testCtx(t), it.Key, 0); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: %v, want it absent", it.Key, err)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("backups left for a refused write: %v", ents)
		}
		if n := strings.Count(strings.Join(v.calls, ","), "before "); n != len(items) {
			t.Errorf("%d calls of Before, want %d (every object): %v", n, len(items), v.calls)
		}
	})
	t.Run("refused after: written, not accepted", func(t *testing.T) {
		direct, _, _ := proxied(t)
		plan := planDemo(t, direct, direct)
		items := plan.Writes()
		v := &refusals{after: map[string]error{items[1].Key: errNo}}
		res, err := WriteRecoverSet(testCtx(t), direct, plan, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}, MaxTxnOps: 4, Verifier: v})
		if !errors.Is(err, ErrNotAccepted) || !errors.Is(err, errNo) {
			t.Fatalf("WriteRecoverSet = %v, want ErrNotAccepted", err)
		}
		if len(res.Written) != len(items) {
			t.Errorf("%d written, want %d", len(res.Written), len(items))
		}
		if res.Written[1].VerifyErr == nil || res.Written[0].VerifyErr != nil {
			t.Errorf("the refusal is not recorded against its object: %+v", res.Written[:2])
		}
		if n := strings.Count(strings.Join(v.calls, ","), "after "); n != len(items) {
			t.Errorf("%d calls of After, want %d (every object written): %v", n, len(items), v.calls)
		}
	})
}
