//go:build !linux

package store

// boltMmapFlags is zero where MAP_POPULATE does not exist.
const boltMmapFlags = 0
