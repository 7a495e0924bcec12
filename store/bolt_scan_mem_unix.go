//go:build unix

package store

import "syscall"

// mapAnon returns n bytes of zeroed memory outside the Go heap, or nil.
func mapAnon(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return b
}

// unmapAnon releases memory from mapAnon.
func unmapAnon(b []byte) { _ = syscall.Munmap(b) }
