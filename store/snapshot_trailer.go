package store

import (
	"fmt"

	"github.com/etcdpvc/etcdpvc/internal/newfile"
)

// WriteSnapshotFile writes a new snapshot file at out (newfile.Write):
// fill writes the bbolt pages into tmp, an empty temporary file beside out
// (mode 0600), then the sha256 trailer is appended (fsynced) and tmp
// linked to out, never replacing a file (ErrOutputExists, before fill runs
// or after). A failure leaves nothing. It returns the file written: its
// trailer, its own sha256 and its size.
func WriteSnapshotFile(out string, fill func(tmp string) error) (SnapshotInfo, error) {
	var snap SnapshotInfo
	err := newfile.Write(out, func(tmp string) error {
		if err := fill(tmp); err != nil {
			return err
		}
		var err error
		if snap, err = appendTrailer(tmp); err != nil {
			return fmt.Errorf("append sha256 trailer: %w", err)
		}
		return nil
	})
	if err != nil {
		return SnapshotInfo{}, err
	}
	return snap, nil
}
