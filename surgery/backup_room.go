package surgery

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/etcdpvc/etcdpvc/internal/diskfree"
)

// ErrNoBackupRoom means the backup directory's file system has not room
// for the backups of a write: nothing was sent.
var ErrNoBackupRoom = errors.New("not enough free space for the backups")

// BackupRoom is the bytes the backups of plans need on disk, with a
// margin: each value base64-encoded (4/3 of its bytes) plus 8 KiB for the
// file's metadata, its last block and its audit lines, and 1 MiB more.
func BackupRoom(plans []*Plan) int64 {
	need := int64(1 << 20)
	for _, p := range plans {
		if p == nil || p.NoOp {
			continue
		}
		if p.Before != nil {
			need += (int64(len(p.Before.KV.Value))*4+2)/3 + 8<<10
		} else {
			need += 8 << 10
		}
	}
	return need
}

// CheckBackupRoom refuses (ErrNoBackupRoom) a write whose backups need
// more than need bytes (BackupRoom) than the file system of dir, or of the
// nearest directory above it that exists, has free. Where the platform
// does not tell the free space, it does not refuse.
func CheckBackupRoom(dir string, need int64) error {
	probe := filepath.Clean(dir)
	for {
		if _, err := os.Stat(probe); err == nil || filepath.Dir(probe) == probe {
			break
		}
		probe = filepath.Dir(probe)
	}
	free, err := diskfree.Available(probe)
	if errors.Is(err, diskfree.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup directory %s: %w; nothing written", dir, err)
	}
	if need > free {
		return fmt.Errorf("backup directory %s: %w: the backups need about %d bytes (the values base64-encoded, with a margin), and its file system has %d free; nothing written", dir, ErrNoBackupRoom, need, free)
	}
	return nil
}
