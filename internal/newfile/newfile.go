// Package newfile creates the files etcdpvc writes: a report, a snapshot
// copy, a salvaged or point-in-time snapshot, a backup. Each is a new
// file. etcdpvc never writes over a file the user did not name as new, so
// a path that exists in any form (a file, the input itself, a symbolic
// link, even a dangling one, a device, a directory) is refused, and so is
// a path inside an etcd member's data directory, whose files etcd owns.
// Every file etcdpvc creates for the user goes through Create, Write or
// Add; what it keeps for itself (its hash records, temporary files in
// directories of its own) and the audit log it appends to do not.
package newfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/etcdpvc/etcdpvc/internal/durable"
)

// ErrExists means the path of a file to create already exists.
var ErrExists = errors.New("output file exists")

// ErrMemberDir means a file was to be written into an etcd member's data
// directory.
var ErrMemberDir = errors.New("refusing to write into an etcd member's data directory: etcd owns every file there")

// Check refuses path as the name of a new file: an error wrapping
// ErrExists when anything is there (Lstat: a symbolic link is not
// followed), or ErrMemberDir when it is inside an etcd member's data
// directory (see InMemberDir).
func Check(path string) error {
	if path == "" {
		return errors.New("no output file named")
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s: %w: choose a new file; an existing one is never overwritten", path, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if dir, ok := InMemberDir(path); ok {
		return fmt.Errorf("%s: %w (%s holds member/wal and member/snap)", path, ErrMemberDir, dir)
	}
	return nil
}

// InMemberDir reports whether path, a file to create, lies in an etcd
// member's data directory, and names that directory. A data directory is
// one that holds both member/wal and member/snap, as etcd lays it out; a
// path in it or anywhere under its member directory is inside. A
// directory that merely holds a wal or snap directory (a copy of a log)
// is not a member's. Symbolic links in path's directory are resolved.
func InMemberDir(path string) (string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	dir := filepath.Dir(abs)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for d := dir; ; d = filepath.Dir(d) {
		member := filepath.Join(d, "member")
		if (d == dir || within(dir, member)) && isDir(filepath.Join(member, "wal")) && isDir(filepath.Join(member, "snap")) {
			return d, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// within reports whether dir is base or under it.
func within(dir, base string) bool {
	rel, err := filepath.Rel(base, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// IsInput reports whether path names one of inputs (the same path, or the
// same file under another name).
func IsInput(path string, inputs ...string) bool {
	out, outErr := os.Stat(path)
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if filepath.Clean(in) == filepath.Clean(path) {
			return true
		}
		if fi, err := os.Stat(in); err == nil && outErr == nil && os.SameFile(fi, out) {
			return true
		}
	}
	return false
}

// Create creates path as a new, empty file (mode 0600) after Check,
// exclusively (O_EXCL): a file created meanwhile, or a symbolic link, is
// refused too (ErrExists).
func Create(path string) (*os.File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s: %w: created meanwhile; an existing file is never overwritten", path, ErrExists)
	}
	return f, err
}

// Write creates path as a new file (mode 0600) after Check: fill writes
// its content at tmp, an empty temporary file beside path; once fill
// returns nil, tmp is fsynced and linked to path, which never replaces a
// file (one created meanwhile is ErrExists), and the directory is
// fsynced. tmp is removed whatever happens: a failure leaves nothing, and
// no reader ever sees path half-written.
func Write(path string, fill func(tmp string) error) error {
	if err := Add(path, fill); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(path))
}

// Add is Write without the fsync of the directory, for a caller that
// creates several files in one directory and fsyncs it once
// (durable.SyncDir) before relying on any of them.
func Add(path string, fill func(tmp string) error) error {
	if err := Check(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".etcdpvc-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Close(); err != nil {
		return err
	}
	if err := fill(tmp); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w: created while it was written; an existing file is never overwritten", path, ErrExists)
		}
		return err
	}
	return nil
}

// syncFile fsyncs the file at path.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
