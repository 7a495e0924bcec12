package store

import (
	"fmt"

	"github.com/etcdpvc/etcdpvc/internal/newfile"
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

// WriteSnapshotFile writes a new snapshot file at out (newfile.Write):
// fill writes the bbolt pages into tmp, an empty temporary file beside out
// (mode 0600), then the sha256 trailer is appended (fsynced) and tmp
// linked to out, never replacing a file (ErrOutputExists, before fill runs
// or after). A failure leaves nothing. It returns the trailer (hex) and
// the file's size.
func WriteSnapshotFile(out string, fill func(tmp string) error) (sum string, size int64, err error) {
	err = newfile.Write(out, func(tmp string) error {
		if err := fill(tmp); err != nil {
			return err
		}
		var err error
		if sum, size, err = appendTrailer(tmp); err != nil {
			return fmt.Errorf("append sha256 trailer: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	return sum, size, nil
}
