package surgery

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/etcdpvc/etcdpvc/internal/textout"
	"github.com/etcdpvc/etcdpvc/store"
)

// ErrOperationNotFound means the audit log of a backup directory records
// no write of the operation asked for.
var ErrOperationNotFound = errors.New("no write of this operation is recorded")

// OperationBackups returns the backups of the writes of operation id that
// the audit log of dir records (made, or of unknown outcome), in the order
// they were written. Each backup is read from dir (by its file name, so a
// directory moved as a whole still works) and must record the same
// operation id. An operation none of whose writes is recorded is
// ErrOperationNotFound.
func OperationBackups(dir, id string) ([]*Backup, error) {
	if err := CheckOperationID(id); err != nil {
		return nil, fmt.Errorf("restore --operation %w", err)
	}
	dir = BackupDirOrDefault(dir)
	recs, _, err := ReadAuditLog(dir)
	if err != nil {
		return nil, err
	}
	var out []*Backup
	seen := map[string]bool{}
	for _, rec := range recs {
		if rec.OperationID != id || (rec.Outcome != OutcomeWritten && rec.Outcome != OutcomeUncertain) || rec.Backup == "" {
			continue
		}
		path := filepath.Join(dir, filepath.Base(rec.Backup))
		if seen[path] {
			continue
		}
		seen[path] = true
		b, err := ReadBackup(path)
		if err != nil {
			return nil, fmt.Errorf("operation %s: %w", id, err)
		}
		if b.OperationID != id || b.Key != rec.Key {
			return nil, fmt.Errorf("operation %s: read backup %s: %w: it records operation %q and key %s, audit.log operation %s and key %s",
				id, path, ErrBadBackup, b.OperationID, b.Key, id, rec.Key)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("restore --operation %s: %w in %s", id, ErrOperationNotFound, filepath.Join(dir, AuditLogName))
	}
	return out, nil
}

// SortBackupsWritten sorts backups in the order their writes were made
// (their timestamps; the order given for equal ones).
func SortBackupsWritten(backups []*Backup) {
	sort.SliceStable(backups, func(i, j int) bool { return backups[i].Time().Before(backups[j].Time()) })
}

// ErrSeveralWrites means a restore of several backups names one key more
// than once: each must be restored on its own, newest first.
var ErrSeveralWrites = errors.New("several backups of one key")

// RestoreSetError reports the backups of a restore of several whose keys
// changed since their writes (each a *ChangedError, with its diff): none
// is restored. It matches ErrChangedSinceBackup.
type RestoreSetError struct {
	Changed []*ChangedError
	Total   int
}

func (e *RestoreSetError) Error() string {
	keys := make([]string, 0, len(e.Changed))
	for _, c := range e.Changed {
		keys = append(keys, c.Key)
	}
	return fmt.Sprintf("restore of %d backups: %d of the keys were changed after etcdpvc's write (%s): restoring would discard those changes; nothing written",
		e.Total, len(e.Changed), joinNames(keys))
}

// Is reports whether target is ErrChangedSinceBackup.
func (e *RestoreSetError) Is(target error) bool { return target == ErrChangedSinceBackup }

// Hint says how to go on.
func (e *RestoreSetError) Hint() string {
	return "each diff above goes from what the key holds now to its backup; re-run with --force to restore them anyway, or restore the others one by one (etcdpvc restore BACKUP)"
}

// PlanRestores plans undoing the writes of backups, given in the order
// they were made (OperationBackups, SortBackupsWritten): one restore plan
// per backup (PlanRestore), in reverse order, the last write undone
// first. Every backup must come from one cluster. A key changed since its
// write refuses the whole restore (a *RestoreSetError with every such
// key) unless force; a key already restored gives a NoOp plan, so that a
// restore stopped part way is finished by running it again.
func (c Planner) PlanRestores(ctx context.Context, r store.Reader, backups []*Backup, force bool) ([]*Plan, error) {
	keys := map[string]string{}
	for _, b := range backups {
		if other, ok := keys[b.Key]; ok {
			return nil, fmt.Errorf("restore: %w: %s and %s are both of %s; restore them one by one, newest first; nothing written", ErrSeveralWrites, filepath.Base(other), filepath.Base(b.Path), b.Key)
		}
		keys[b.Key] = b.Path
		if b.ClusterID() != backups[0].ClusterID() {
			return nil, fmt.Errorf("restore: %w: %s records etcd cluster ID %q and %s cluster ID %q; restore each cluster's backups on their own; nothing written",
				ErrOtherCluster, filepath.Base(backups[0].Path), backups[0].ClusterID(), filepath.Base(b.Path), b.ClusterID())
		}
	}
	plans := make([]*Plan, 0, len(backups))
	set := &RestoreSetError{Total: len(backups)}
	for _, b := range slices.Backward(backups) {
		p, err := c.PlanRestore(ctx, r, b, force)
		var ch *ChangedError
		switch {
		case errors.As(err, &ch):
			set.Changed = append(set.Changed, ch)
			continue
		case err != nil:
			return nil, err
		}
		plans = append(plans, p)
	}
	if len(set.Changed) > 0 {
		return nil, set
	}
	return plans, nil
}

// UndoLine is the command that undoes the steps written: restore BACKUP
// for one, restore --operation ID --backup-dir DIR for several (their
// operation and backup directory); "" when none was written. Paths are
// quoted for a POSIX shell when they need it.
func UndoLine(steps []Step) string {
	var written []Record
	for _, st := range steps {
		if st.Written() {
			written = append(written, st.Result.Record)
		}
	}
	switch {
	case len(written) == 0:
		return ""
	case len(written) == 1 || written[0].OperationID == "":
		return UndoSteps(steps)
	}
	return OperationUndo(written[0].OperationID, filepath.Dir(written[0].Backup))
}

// OperationUndo is the command that undoes operation id, whose backups
// are in dir.
func OperationUndo(id, dir string) string {
	return "etcdpvc restore --operation " + id + " --backup-dir " + textout.ShellQuote(dir)
}
