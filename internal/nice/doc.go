// Package nice lowers the CPU and I/O priority of the whole process, so
// that a read on a control-plane node leaves etcd the CPU and the disk.
//
// On Linux a priority belongs to a thread, not to the process:
// setpriority(PRIO_PROCESS, 0) and ioprio_set(IOPRIO_WHO_PROCESS, 0) set
// the calling thread's alone, and a Go program runs on several threads
// from its start. Lower therefore sets every thread's, by its id under
// /proc/self/task; a thread created later is cloned from one of them and
// inherits both priorities.
package nice

import "errors"

// CPU is the nice value Lower sets, the lowest CPU priority. It counts
// when the CPU is contended, against the tasks of the tool's own CPU
// group (cgroup, or autogroup): beside one busy thread of nice 0 there,
// the tool gets about 1.5% of a core (weights 15 and 1024);
// nice 10 would still take about 10%. The tool's reads have no deadline
// of their own, so it takes the least.
const CPU = 19

// IO is the I/O priority Lower sets: class best-effort, level 7, the
// lowest of the class (what the kernel derives from nice 19 when no
// class is set). The bfq scheduler weighs levels (7 gets a quarter of
// the default 4's share); mq-deadline orders classes only, and none and
// kyber ignore priorities. Class idle would yield more, but its requests
// then wait while others keep the disk busy (up to mq-deadline's
// prio_aging_expire, 10 s, each), and a write of the tool held back so
// (salvage --out, a backup, its fsync) can hold back etcd's fsync
// waiting on the same file system journal. A thread already in class
// idle is left there.
const IO = ClassBestEffort<<classShift | 7

// The I/O priority classes (linux/ioprio.h). ClassNone means the
// kernel derives a best-effort level from the nice value.
const (
	ClassNone       = 0
	ClassRealtime   = 1
	ClassBestEffort = 2
	ClassIdle       = 3
)

// classShift places the class in an I/O priority, above the level.
const classShift = 13

// ErrUnsupported means the system has no per-thread priorities Lower
// knows how to set (it is not Linux).
var ErrUnsupported = errors.New("lowering the priority is supported on Linux only")
