//go:build !unix

package store

// mapAnon returns nil where anonymous mappings are not at hand: offHeap
// then uses the Go heap.
func mapAnon(n int) []byte { return nil }

// unmapAnon releases memory from mapAnon.
func unmapAnon(b []byte) {}
