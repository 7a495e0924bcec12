package main

import (
	"os"
	"runtime/pprof"

	"github.com/etcdpvc/etcdpvc/internal/newfile"
)

// startProfile writes a CPU profile of the run to the file that
// ETCDPVC_CPUPROFILE names, for `go tool pprof`; it returns what stops
// it. Without the variable it does nothing. The file is created new, as
// every file etcdpvc writes: an existing file, a link or a device there is
// refused, not overwritten. It is how a slow command is
// shown where its time goes (make bench-offline's table, issue 46).
func startProfile() func() {
	path := os.Getenv("ETCDPVC_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := newfile.Create(path)
	if err != nil {
		os.Stderr.WriteString("etcdpvc: cpu profile: " + err.Error() + "\n")
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Stderr.WriteString("etcdpvc: cpu profile: " + err.Error() + "\n")
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
