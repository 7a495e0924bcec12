// Package durable holds what makes a file's creation survive a crash: the
// fsync of the directory that names it.
package durable

import (
	"fmt"
	"os"
)

// SyncDir fsyncs directory dir, making the links, renames and creations
// of files in it durable (a file's own fsync does not write its name).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
