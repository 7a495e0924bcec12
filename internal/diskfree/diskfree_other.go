//go:build !unix

package diskfree

// Available returns ErrUnsupported: the platform does not tell.
func Available(dir string) (int64, error) { return 0, ErrUnsupported }
