package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/etcdpvc/etcdpvc/internal/durable"
)

// AppendSnapshotTrailer finishes a bbolt file at path as a snapshot file
// etcd recognises: it pads the file with zeros to a multiple of 512
// bytes, appends the sha256 of its contents (the trailer `etcdutl
// snapshot restore` verifies), and fsyncs the file and its directory. It
// returns the hex sha256 and the final size. The file must be closed by
// every writer.
func AppendSnapshotTrailer(path string) (sha256Hex string, size int64, err error) {
	return appendTrailer(path)
}

// WriteSnapshotFile writes a new snapshot file at out: fill writes the
// bbolt pages into tmp, an empty temporary file beside out (mode 0600),
// then the sha256 trailer is appended (fsynced), tmp is linked to out
// (never replacing a file: an existing out is ErrOutputExists, before fill
// runs or after) and the directory fsynced. tmp is removed whatever
// happens, so that a failure leaves nothing. It returns the trailer (hex)
// and the file's size.
func WriteSnapshotFile(out string, fill func(tmp string) error) (sum string, size int64, err error) {
	if _, err := os.Lstat(out); err == nil {
		return "", 0, fmt.Errorf("%w: choose a new file; an existing one is never overwritten", ErrOutputExists)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", 0, err
	}
	dir := filepath.Dir(out)
	f, err := os.CreateTemp(dir, "."+filepath.Base(out)+".etcdpvc-*")
	if err != nil {
		return "", 0, err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Close(); err != nil {
		return "", 0, err
	}
	if err := fill(tmp); err != nil {
		return "", 0, err
	}
	if sum, size, err = appendTrailer(tmp); err != nil {
		return "", 0, fmt.Errorf("append sha256 trailer: %w", err)
	}
	if err := os.Link(tmp, out); err != nil {
		if errors.Is(err, os.ErrExist) {
			return "", 0, fmt.Errorf("%w: created while the snapshot was written", ErrOutputExists)
		}
		return "", 0, err
	}
	if err := durable.SyncDir(dir); err != nil {
		return "", 0, err
	}
	return sum, size, nil
}
