//go:build !unix

package surgery

import "os"

// fileOwner is unknown on this platform.
func fileOwner(os.FileInfo) (int, bool) { return 0, false }
