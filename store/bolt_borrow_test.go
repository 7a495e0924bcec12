package store

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScanRevisionsBorrowed reads the corpus snapshot's revisions lent,
// as ScanRevisions copies them, and the values kept from the walk again
// in then, inside the same read.
func TestScanRevisionsBorrowed(t *testing.T) {
	ctx := context.Background()
	b := openBolt(t, corpusSnapshot, BoltOptions{})
	var want []Event
	if err := b.ScanRevisions(ctx, "/registry/", func(ev Event) error {
		want = append(want, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var got []Event
	var kept [][]byte
	thenRan := false
	err := b.ScanRevisionsBorrowed(ctx, "/registry/", func(rev *BorrowedRevision) error {
		got = append(got, Event{KV: KeyValue{Key: string(rev.Key), ModRevision: rev.ModRevision, Lease: rev.Lease, Value: bytes.Clone(rev.Value)}, Deleted: rev.Deleted})
		kept = append(kept, rev.Value)
		return nil
	}, func() error {
		thenRan = true
		return b.Guard(func() error {
			for i, v := range kept {
				if !bytes.Equal(v, got[i].KV.Value) {
					t.Errorf("revision %d: the value kept differs in then", got[i].KV.ModRevision)
				}
			}
			return nil
		})
	})
	if err != nil || !thenRan {
		t.Fatalf("ScanRevisionsBorrowed: %v, then ran: %v", err, thenRan)
	}
	if len(want) == 0 {
		t.Fatal("no revision read")
	}
	// What ScanRevisions copies beyond the key, value, revision and lease.
	for i := range want {
		want[i].KV.CreateRevision, want[i].KV.Version = 0, 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ScanRevisionsBorrowed differs from ScanRevisions (-copied +lent):\n%s", diff)
	}

	stop := errors.New("stop")
	calls, thenRan := 0, false
	err = b.ScanRevisionsBorrowed(ctx, "/registry/", func(*BorrowedRevision) error { calls++; return stop }, func() error { thenRan = true; return nil })
	if !errors.Is(err, stop) || calls != 1 || thenRan {
		t.Errorf("a failing callback: %v after %d calls, then ran: %v; want the error, one call, no then", err, calls, thenRan)
	}
	err = b.ScanRevisionsBorrowed(ctx, "/registry/", func(*BorrowedRevision) error { return nil }, func() error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("a failing then: %v, want its error", err)
	}
	if err := b.ScanRevisionsBorrowed(ctx, "/registry", func(*BorrowedRevision) error { return nil }, nil); err == nil {
		t.Error("a prefix without its trailing /: no error")
	}
}
