//go:build !unix

package surgery

import "os"

// oNoFollow is 0 where the platform has no O_NOFOLLOW; symbolic links are
// then refused by an Lstat check.
const oNoFollow = 0

// fileOwner is unknown on this platform.
func fileOwner(os.FileInfo) (int, bool) { return 0, false }

// isSymlinkErr reports whether path is a symbolic link.
func isSymlinkErr(path string, err error) bool {
	fi, lerr := os.Lstat(path)
	return lerr == nil && fi.Mode()&os.ModeSymlink != 0
}
