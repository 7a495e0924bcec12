package nice

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ioprioWhoProcess makes ioprio_set and ioprio_get act on one thread.
const ioprioWhoProcess = 1

// Lower sets nice CPU and I/O priority IO on every thread of the
// process, and again on every thread that appeared meanwhile, until a
// pass finds no new one. It never raises a priority: nice 19 is the
// lowest there is, and a thread already in class idle stays there. A
// thread that ended meanwhile is skipped. It needs no privilege.
func Lower() error {
	done := map[int]bool{}
	for {
		tids, err := threads()
		if err != nil {
			return err
		}
		found := false
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			found = true
			done[tid] = true
			if err := lowerThread(tid); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("lower the priority of thread %d: %w", tid, err)
			}
		}
		if !found {
			return nil
		}
	}
}

// lowerThread sets thread tid's nice value to CPU and its I/O priority
// to IO, unless its class is idle.
func lowerThread(tid int) error {
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, CPU); err != nil {
		return fmt.Errorf("setpriority %d: %w", CPU, err)
	}
	cur, err := IOPriority(tid)
	if err != nil {
		return err
	}
	if cur>>classShift == ClassIdle || cur == IO {
		return nil
	}
	if _, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), IO); errno != 0 {
		return fmt.Errorf("ioprio_set best-effort 7: %w", errno)
	}
	return nil
}

// IOPriority returns thread tid's I/O priority as ioprio_get gives it:
// the class shifted left by 13, or'ed with the level.
func IOPriority(tid int) (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(tid), 0)
	if errno != 0 {
		return 0, fmt.Errorf("ioprio_get: %w", errno)
	}
	return int(v), nil
}

// threads returns the ids of the process's threads.
func threads() ([]int, error) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("list the process's threads: %w", err)
	}
	tids := make([]int, 0, len(entries))
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
