package surgery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/internal/regular"
	"github.com/etcdpvc/etcdpvc/store"
)

// ListedBackup is a backup file of a backup directory: what ReadBackup
// read of it, or why it could not (Err).
type ListedBackup struct {
	Path   string
	Backup *Backup
	Err    error
}

// ListBackups reads every backup file (*.json) of dir, newest first (by
// the time each records; a file that cannot be read last, by name): one
// named *.json that is not a regular file (a FIFO, a symbolic link, a
// directory) is listed too, with why it was not read. The
// values stay in the backups: a caller prints only what Backup says of
// the write. A directory that does not exist holds none.
func ListBackups(dir string) ([]ListedBackup, error) {
	var out []ListedBackup
	if err := eachBackup(dir, func(path string, b *Backup, err error) {
		out = append(out, ListedBackup{Path: path, Backup: b, Err: err})
	}); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Backup, out[j].Backup
		if (a == nil) != (b == nil) {
			return a != nil
		}
		if a != nil {
			if ta, tb := a.Time(), b.Time(); !ta.Equal(tb) {
				return ta.After(tb)
			}
		}
		return out[i].Path > out[j].Path
	})
	return out, nil
}

// eachBackup reads every backup file (*.json) of dir in name order and
// calls fn with it, or with why it cannot be read. A directory that does
// not exist holds none.
func eachBackup(dir string, fn func(path string, b *Backup, err error)) error {
	dir = BackupDirOrDefault(dir)
	entries, err := regular.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list backups: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		b, err := ReadBackup(path)
		fn(path, b, err)
	}
	return nil
}

// Time is when the backup was taken (the zero time when it records none
// that parses).
func (b *Backup) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, b.Timestamp)
	return t
}

// Live states of a backup's key (BackupState).
const (
	// LiveMatches: the key holds what the write left (its new value; absent
	// after a delete).
	LiveMatches = "matches"
	// LiveRestored: the key holds the backup's value again (absent again
	// for a create): the write was undone, or never made.
	LiveRestored = "restored"
	// LiveChanged: the key holds something else.
	LiveChanged = "changed"
)

// BackupState says whether the key of b, read through r (the cluster it
// was taken from), still holds what the write left: LiveMatches,
// LiveRestored or LiveChanged. Only digests are compared; no value is
// returned.
func BackupState(ctx context.Context, r store.Reader, b *Backup) (string, error) {
	kv, err := r.Get(ctx, b.Key, 0)
	absent := errors.Is(err, store.ErrNotFound)
	if err != nil && !absent {
		return "", err
	}
	var sum string
	if !absent {
		sum = digest(kv.Value)
	}
	deleted := b.NewSHA256 == "" // a delete's backup: the write left the key absent
	switch {
	case deleted && absent, !deleted && !absent && sum == b.NewSHA256:
		return LiveMatches, nil
	case b.Absent && absent, !b.Absent && !absent && sum == b.SHA256:
		return LiveRestored, nil
	}
	return LiveChanged, nil
}
