//go:build unix

package diskfree

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Available returns the bytes the file system holding dir has free for an
// unprivileged writer (statfs's available blocks).
func Available(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free disk space of %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
