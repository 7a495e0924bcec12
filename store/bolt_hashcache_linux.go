//go:build linux

package store

import (
	"os"
	"syscall"
)

// fileIdentity returns the parts of fi that change whenever the file does.
func fileIdentity(fi os.FileInfo) (hashRecord, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return hashRecord{}, false
	}
	ctime := st.Ctim
	return hashRecord{
		Size:    fi.Size(),
		MtimeNS: fi.ModTime().UnixNano(),
		CtimeNS: int64(ctime.Sec)*1e9 + int64(ctime.Nsec),
		Inode:   uint64(st.Ino),
		Device:  uint64(st.Dev),
	}, true
}
