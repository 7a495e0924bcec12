package flows

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// TestHint: the hints of the sentinels and of the errors that carry their
// own, found through wrapping.
func TestHint(t *testing.T) {
	tests := []struct {
		err  error
		hint string
	}{
		{fmt.Errorf("decrypt: %w", encryption.ErrKeyNotFound), "a key this EncryptionConfiguration does not hold"},
		{encryption.ErrNoConfig, "pass --encryption-config"},
		{fmt.Errorf("write: %w", store.ErrConflict), "re-run the command"},
		{surgery.ErrUncertain, "may or may not have been applied"},
		{wal.ErrUndetermined, session.UndeterminedHint},
		{errors.New("plain"), ""},
		{fmt.Errorf("get: %w", &kubevalue.NotFoundError{Name: "b", Namespace: "a", Elsewhere: []string{"c"}, Err: store.ErrNotFound}), "name the namespace: -n c"},
	}
	for _, tc := range tests {
		if got := Hint(tc.err); got != tc.hint && (tc.hint == "" || !strings.Contains(got, tc.hint)) {
			t.Errorf("Hint(%v) = %q, want %q", tc.err, got, tc.hint)
		}
	}
}

// TestOpenHints: Open's own failures carry their hints.
func TestOpenHints(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for _, tc := range []struct {
		o    session.Options
		hint string
	}{
		{session.Options{DB: filepath.Join(dir, "missing.db"), Prefix: "/registry"}, "check the path: --db takes"},
		{session.Options{WAL: []string{filepath.Join(dir, "nowal")}, Prefix: "/registry"}, "--wal takes a member's wal directory"},
	} {
		_, err := Open(ctx, tc.o)
		if err == nil {
			t.Fatalf("Open(%+v) succeeded", tc.o)
		}
		if h := Hint(err); !strings.Contains(h, tc.hint) {
			t.Errorf("Open(%+v): %v: hint %q, want one with %q", tc.o, err, h, tc.hint)
		}
	}
}
