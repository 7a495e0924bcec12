//go:build !linux

package nice

// Lower returns ErrUnsupported: only Linux is known to it.
func Lower() error { return ErrUnsupported }
