package surgery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/etcdpvc/etcdpvc/internal/textout"
	"github.com/etcdpvc/etcdpvc/store"
)

// ErrOperationNotFound means neither the audit log nor the backups of a
// backup directory record a write of the operation asked for.
var ErrOperationNotFound = errors.New("no write of this operation is recorded")

// ErrOperationIncomplete means audit.log records a write of an operation
// whose backup is missing or cannot be read: the operation cannot be
// undone as a whole.
var ErrOperationIncomplete = errors.New("a backup of the operation is missing")

// OperationBackups returns the backups of the writes of operation id in
// dir, in the order they were made, the backups cross-checked against
// audit.log:
//
//   - every backup file of dir that records operation id is one, whether
//     audit.log records its outcome or not (a run killed after its
//     backup, or audit.log that could not take a line): restore then
//     goes by its key's state (PlanRestore: the write is undone where the
//     key holds what it left, nothing to do where it holds the backup's
//     value, refused where it was changed since); its Warnings say so;
//   - a write audit.log records (its intent, made, or of unknown outcome)
//     whose backup is missing or cannot be read refuses the whole undo,
//     naming each (ErrOperationIncomplete): undoing the rest would undo
//     part of the operation;
//   - a backup whose write audit.log records as not written is left out.
//
// notes say what else was found that the caller should tell: lines of
// audit.log that cannot be read, backup files that cannot be read. An
// operation none of whose writes is recorded is ErrOperationNotFound.
func OperationBackups(dir, id string) (backups []*Backup, notes []string, err error) {
	if err := CheckOperationID(id); err != nil {
		return nil, nil, fmt.Errorf("restore --operation %w", err)
	}
	dir = BackupDirOrDefault(dir)
	recs, skipped, err := ReadAuditLog(dir)
	if err != nil {
		return nil, nil, err
	}
	logPath := filepath.Join(dir, AuditLogName)
	if skipped > 0 {
		notes = append(notes, fmt.Sprintf("%s holds %d lines that cannot be read (torn by an append that failed, or of another format); the backups of the operation are read too", logPath, skipped))
	}
	// last is, for each backup of the operation audit.log names (by file
	// name, so that a directory moved as a whole still works), its last
	// line: the intent, or the outcome.
	last := map[string]Record{}
	var order []string
	for _, rec := range recs {
		if rec.OperationID != id || rec.Backup == "" {
			continue
		}
		base := filepath.Base(rec.Backup)
		if _, ok := last[base]; !ok {
			order = append(order, base)
		}
		last[base] = rec
	}
	found := map[string]*Backup{}
	var unreadable []string
	if err := eachBackup(dir, func(path string, b *Backup, err error) {
		switch {
		case err != nil:
			unreadable = append(unreadable, fmt.Sprintf("%s (%v)", filepath.Base(path), err))
		case b.OperationID == id:
			b.log = recs
			found[filepath.Base(path)] = b
		}
	}); err != nil {
		return nil, nil, fmt.Errorf("restore --operation %s: %w", id, err)
	}
	var missing []string
	for _, base := range order {
		rec := last[base]
		b := found[base]
		switch {
		case !rec.mayBeMade():
			delete(found, base)
		case b == nil:
			missing = append(missing, fmt.Sprintf("%s (backup %s, %s)", rec.Key, base, missingWhy(dir, base)))
		case b.Key != rec.Key:
			missing = append(missing, fmt.Sprintf("%s (backup %s records key %s)", rec.Key, base, b.Key))
		case rec.Outcome == OutcomeIntent:
			b.outcomeUnknown = true
			b.Warnings = append(b.Warnings, fmt.Sprintf("audit.log records the intent of the write of backup %s but not its outcome (the run was killed, or audit.log could not take the line): %s's state decides whether it is undone", base, b.Key))
		}
	}
	if len(missing) > 0 {
		return nil, notes, fmt.Errorf("restore --operation %s: %w: %s records writes of %s; undoing the rest would undo only part of the operation; nothing written",
			id, ErrOperationIncomplete, logPath, strings.Join(missing, ", "))
	}
	for base, b := range found {
		if _, ok := last[base]; !ok {
			b.outcomeUnknown = true
			b.Warnings = append(b.Warnings, fmt.Sprintf("backup %s records operation %s but audit.log has no line of its write (the run was killed before it, or audit.log could not take the line): %s's state decides whether it is undone", base, id, b.Key))
		}
		backups = append(backups, b)
	}
	if len(unreadable) > 0 {
		notes = append(notes, fmt.Sprintf("backup files of %s that cannot be read, and which audit.log does not name as this operation's: %s", dir, strings.Join(unreadable, ", ")))
	}
	if len(backups) == 0 {
		return nil, notes, fmt.Errorf("restore --operation %s: %w in %s or its backups", id, ErrOperationNotFound, logPath)
	}
	sort.Slice(backups, func(i, j int) bool { return backups[i].Path < backups[j].Path })
	SortBackupsWritten(backups)
	return backups, notes, nil
}

// missingWhy says why the backup file base of dir cannot be read.
func missingWhy(dir, base string) string {
	if _, err := ReadBackup(filepath.Join(dir, base)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "missing"
		}
		return err.Error()
	}
	return "of another operation"
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
		case errors.As(err, &ch) && b.outcomeUnknown && neverWritten(ctx, r, b):
			plans = append(plans, &Plan{Key: b.Key, NoOp: true, Description: "restore " + b.Key,
				NoOpReason: fmt.Sprintf("the write backup %s was taken for was never made: audit.log has no outcome of it, and %s's history since revision %d never shows what it would have left", filepath.Base(b.Path), b.Key, b.ModRevision)})
			continue
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

// neverWritten reports whether the history of b's key since the
// backup's revision shows that the write b was taken for was never made:
// the key never held the value it would have left (a delete's: it was
// never deleted since). A history compacted past the backup's revision,
// or that cannot be read, tells nothing (false).
func neverWritten(ctx context.Context, r store.Reader, b *Backup) bool {
	made := false
	info, err := r.History(ctx, b.Key, func(ev store.Event) error {
		switch {
		case ev.KV.ModRevision <= b.ModRevision:
		case b.NewSHA256 == "":
			made = made || ev.Deleted
		default:
			made = made || !ev.Deleted && digest(ev.KV.Value) == b.NewSHA256
		}
		return nil
	})
	return err == nil && info.CompactRevision <= b.ModRevision && !made
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
