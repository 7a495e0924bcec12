package wal

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// OpenWALOver reads the log in dir and replays it over base, nil for
// none.
func OpenWALOver(ctx context.Context, dir string, base *store.Bolt) (*WAL, error) {
	l, err := walfile.Open(dir)
	if err != nil {
		return nil, err
	}
	return OpenLogChecked(ctx, l, base, nil)
}

// openBolt opens a db file for a test, closed when it ends.
func openBolt(t *testing.T, path string, opts store.BoltOptions) *store.Bolt {
	t.Helper()
	b, err := store.OpenBolt(path, opts)
	if err != nil {
		t.Fatalf("OpenBolt(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// historyOf reads key's whole history from r.
func historyOf(t *testing.T, r store.Reader, key string) ([]store.Event, store.HistoryInfo) {
	t.Helper()
	var evs []store.Event
	info, err := r.History(context.Background(), key, func(ev store.Event) error {
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		t.Fatalf("History(%q): %v", key, err)
	}
	return evs, info
}

// copyFile copies src into the test's temporary directory.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}
