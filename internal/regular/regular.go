// Package regular opens the files etcdpvc reads (configs, manifests,
// certificates, kubeconfigs, inputs, backups, audit logs) and the audit
// log it appends to, so that none can hang it: a FIFO blocks open(2)
// until a writer (or reader) comes and a device may never end, and
// neither is interrupted by Ctrl-C while the call waits in the kernel.
// Each path is opened without blocking (O_NONBLOCK, which a regular file
// ignores) and refused unless it is a regular file; ReadDir does the same
// for a directory.
package regular

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

// ErrNotRegular means a path given to read is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrSymlink means a path opened with OpenNoFollow or OpenAppend is a
// symbolic link.
var ErrSymlink = errors.New("a symbolic link, which etcdpvc does not follow here")

// Open opens path read-only, without blocking, and refuses what is not a
// regular file (an error wrapping ErrNotRegular that names its type).
func Open(path string) (*os.File, error) {
	return open(path, os.O_RDONLY, 0, false)
}

// OpenNoFollow is Open that also refuses a symbolic link (ErrSymlink), for
// the files of a directory etcdpvc keeps (backups, the audit log).
func OpenNoFollow(path string) (*os.File, error) {
	return open(path, os.O_RDONLY, 0, true)
}

// OpenAppend opens path to append to it, and to read it (an append first
// ends a torn last line), creating it (mode 0600) if it does not exist, without blocking and without following a symbolic link
// (ErrSymlink); it refuses what is not a regular file.
func OpenAppend(path string) (*os.File, error) {
	return open(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600, true)
}

func open(path string, flag int, perm fs.FileMode, noFollow bool) (*os.File, error) {
	if noFollow {
		flag |= oNoFollow
		if oNoFollow == 0 {
			if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
			}
		}
	}
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		// What open(2) refuses without O_NONBLOCK's wait (a symbolic
		// link under O_NOFOLLOW, a FIFO without a reader to write to)
		// is named by what it is.
		if fi, lerr := os.Lstat(path); lerr == nil {
			switch {
			case noFollow && fi.Mode()&fs.ModeSymlink != 0:
				return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
			case !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0:
				return nil, notRegular(path, fi.Mode())
			}
		}
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, info.Mode())
	}
	return f, nil
}

func notRegular(path string, m fs.FileMode) error {
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, describe(m))}
}

// ReadDir is os.ReadDir, without blocking: what is not a directory is
// refused (an error wrapping ErrNotRegular that names its type) before it
// is read.
func ReadDir(dir string) ([]fs.DirEntry, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: fmt.Errorf("not a directory (%s)", describe(info.Mode()))}
	}
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// ReadFile is os.ReadFile through Open.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Check refuses path, as Open does, for a library that opens it itself
// (client-go's kubeconfig loader, etcd's TLS files).
func Check(path string) error {
	f, err := Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

func describe(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return m.Type().String()
}
