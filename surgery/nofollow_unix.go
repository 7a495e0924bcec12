//go:build unix

package surgery

import (
	"errors"
	"os"
	"syscall"
)

// oNoFollow makes an open fail on a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW

// fileOwner returns the uid that owns a file.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// isSymlinkErr reports whether an open of path with oNoFollow failed
// because path is a symbolic link.
func isSymlinkErr(path string, err error) bool {
	if errors.Is(err, syscall.ELOOP) {
		return true
	}
	fi, lerr := os.Lstat(path)
	return lerr == nil && fi.Mode()&os.ModeSymlink != 0
}
