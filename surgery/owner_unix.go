//go:build unix

package surgery

import (
	"os"
	"syscall"
)

// fileOwner returns the uid that owns a file.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
