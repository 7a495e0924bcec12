// Package regular opens the files etcdpvc is given to read (configs,
// manifests, certificates, kubeconfigs, inputs) so that none can hang it:
// a FIFO blocks open(2) until a writer comes and a device may never end,
// and neither is interrupted by Ctrl-C while the read waits in the
// kernel. Each path is opened without blocking (O_NONBLOCK, which a
// regular file ignores) and refused unless it is a regular file.
package regular

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular means a path given to read is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path read-only, without blocking, and refuses what is not a
// regular file (an error wrapping ErrNotRegular that names its type).
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, describe(info.Mode()))}
	}
	return f, nil
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
	}
	return m.Type().String()
}
