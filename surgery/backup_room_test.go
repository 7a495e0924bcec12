package surgery

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/etcdpvc/etcdpvc/internal/diskfree"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

func TestCheckBackupRoom(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	free, err := diskfree.Available(filepath.Dir(filepath.Dir(dir)))
	if err != nil {
		t.Fatalf("the free space of %s: %v", filepath.Dir(filepath.Dir(dir)), err)
	}
	if err := CheckBackupRoom(dir, 1<<20); err != nil {
		t.Fatalf("1 MiB into %s: %v", dir, err)
	}
	err = CheckBackupRoom(dir, free+1<<30)
	if !errors.Is(err, ErrNoBackupRoom) {
		t.Fatalf("more than the free space: %v; want ErrNoBackupRoom", err)
	}
}

func TestBackupRoom(t *testing.T) {
	plans := []*Plan{
		{Before: &kubevalue.Current{KV: store.KeyValue{Value: make([]byte, 3000)}}},
		{NoOp: true, Before: &kubevalue.Current{KV: store.KeyValue{Value: make([]byte, 1<<30)}}},
		{},
	}
	if got, want := BackupRoom(plans), int64(1<<20+4000+8<<10+8<<10); got != want {
		t.Errorf("BackupRoom = %d, want %d", got, want)
	}
}
