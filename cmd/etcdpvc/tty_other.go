//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package main

import "os"

// isTerminal reports whether r is a character device; without a terminal
// ioctl this is the best guess.
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
