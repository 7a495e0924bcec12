package flows

import (
	"context"
	"fmt"

	"github.com/etcdpvc/etcdpvc/surgery"
)

// BackupRow is one backup of a backup directory as `etcdpvc backups`
// lists it: what the write was, and whether the key still holds what it
// left. It holds no value.
type BackupRow struct {
	Path        string   `json:"path"`
	Time        string   `json:"time,omitempty"`
	OperationID string   `json:"operationID,omitempty"`
	Key         string   `json:"key,omitempty"`
	Op          string   `json:"op,omitempty"`
	Created     bool     `json:"created,omitempty"`
	Deleted     bool     `json:"deleted,omitempty"`
	ClusterID   string   `json:"clusterID,omitempty"`
	Endpoints   []string `json:"endpoints,omitempty"`
	// Live is surgery.LiveMatches, LiveRestored, LiveChanged, or
	// LiveNotChecked, and then Message says why.
	Live    string `json:"live"`
	Message string `json:"message,omitempty"`
	// Error is why the file could not be read as a backup.
	Error string `json:"error,omitempty"`
}

// LiveNotChecked is the Live of a backup whose key was not read: no live
// etcd named, a backup of another cluster, or the key unreadable.
const LiveNotChecked = "not-checked"

// ListBackups lists the backups of dir, newest first
// (surgery.ListBackups). With a live session s, each key is read to say
// whether it still holds what its write left (only for backups of the
// cluster s reaches); without one (nil), each is LiveNotChecked, offline
// its message. Files that are not backups are listed with their error, and
// make the listing incomplete (ErrIncomplete), as keys that could not be
// read do.
func ListBackups(ctx context.Context, s *Session, dir, offline string) ([]BackupRow, error) {
	listed, err := surgery.ListBackups(dir)
	if err != nil {
		return nil, err
	}
	liveID, liveUID := "", ""
	if s != nil {
		src, err := s.BackupSource(ctx)
		if err != nil {
			return nil, err
		}
		if src != nil {
			liveID, liveUID = src.ClusterID, src.KubeSystemUID
		}
	}
	rows := make([]BackupRow, 0, len(listed))
	bad := 0
	for _, l := range listed {
		row := BackupRow{Path: l.Path}
		if l.Err != nil {
			row.Live, row.Message, row.Error = LiveNotChecked, "not a backup etcdpvc reads", l.Err.Error()
			bad++
			rows = append(rows, row)
			continue
		}
		b := l.Backup
		row.Time, row.OperationID, row.Key, row.Op = b.Timestamp, b.OperationID, b.Key, b.Operation
		row.Created, row.Deleted, row.ClusterID, row.Endpoints = b.Absent, b.NewSHA256 == "" && !b.Absent, b.ClusterID(), b.Endpoints
		if b.Source != nil && len(b.Source.Endpoints) > 0 {
			row.Endpoints = b.Source.Endpoints
		}
		row.Live = LiveNotChecked
		switch {
		case s == nil:
			row.Message = offline
		case b.ClusterID() != liveID:
			row.Message = fmt.Sprintf("taken from etcd cluster ID %q, not the one reached (%q)", b.ClusterID(), liveID)
		case b.KubeSystemUID() != "" && b.KubeSystemUID() != liveUID:
			row.Message = fmt.Sprintf("taken from the cluster whose kube-system namespace uid is %q, not the one reached (%q)", b.KubeSystemUID(), liveUID)
		default:
			state, err := surgery.BackupState(ctx, s.Reader, b)
			if err != nil {
				row.Message = err.Error()
				bad++
			} else {
				row.Live = state
			}
		}
		rows = append(rows, row)
	}
	if bad > 0 {
		return rows, &incompleteError{msg: fmt.Sprintf("%d of the %d files could not be read as backups, or their keys checked (listed)", bad, len(listed))}
	}
	return rows, nil
}
