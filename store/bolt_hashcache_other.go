//go:build !linux

package store

import "os"

// fileIdentity cannot tell a file's ctime here, so nothing is cached.
func fileIdentity(os.FileInfo) (hashRecord, bool) { return hashRecord{}, false }
