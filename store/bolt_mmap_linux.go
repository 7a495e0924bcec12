//go:build linux

package store

import "syscall"

// boltMmapFlags pre-faults the whole mapping when the file is opened: one
// sequential read instead of a page fault per B+tree page (bbolt advises
// the kernel MADV_RANDOM, which turns read-ahead off).
const boltMmapFlags = syscall.MAP_POPULATE
