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

// CPU is the nice value Lower sets, the lowest CPU priority: the tool
// takes what the other processes of its CPU group leave (about 1.5% of a
// core beside one busy thread of nice 0), and all of an idle core.
const CPU = 19

// IO is the I/O priority Lower sets: class best-effort, level 7, the
// lowest of the class. Class idle would wait for an idle disk without
// limit beside a member that writes its log without pause, and a write
// of the tool (salvage --out, a backup) held back that way can hold
// back the file system's journal, which etcd's fsync waits for.
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
