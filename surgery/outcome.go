package surgery

import (
	"strconv"
	"strings"

	"github.com/etcdpvc/etcdpvc/internal/textout"
)

// Outcome is what one written step did, as a command reports it.
type Outcome struct {
	// Deleted: the step deleted the key (a restore of a create); else it
	// wrote a value.
	Deleted bool
	Key     string
	// From is the key's mod revision before the write, "absent" when the
	// write created it.
	From string
	// Revision is the revision of the write (of the deletion when
	// Deleted).
	Revision int64
	// Backup is the backup the write made, and Undo the command that
	// restores it.
	Backup string
	Undo   string
	// Warnings are problems that did not stop the write.
	Warnings []string
}

// Outcome reports a written step; ok is false when the step was not
// written.
func (s Step) Outcome() (o Outcome, ok bool) {
	if !s.Written() {
		return Outcome{}, false
	}
	o = Outcome{Deleted: s.Plan.Delete, Key: s.Plan.Key, From: "absent", Revision: s.Result.Revision,
		Backup: s.Result.BackupPath, Undo: UndoCommand(s.Result.BackupPath), Warnings: s.Result.Warnings}
	if s.Plan.Expect != 0 {
		o.From = strconv.FormatInt(s.Plan.Expect, 10)
	}
	return o, true
}

// UndoCommand is the command that undoes the write a backup records
// (restore undoes a create too: it deletes what was created).
func UndoCommand(backup string) string { return "etcdpvc restore " + textout.ShellQuote(backup) }

// UndoSteps are the commands that undo the steps written, last first,
// joined with &&; "" when none was written.
func UndoSteps(steps []Step) string {
	var undo []string
	for i := len(steps) - 1; i >= 0; i-- {
		if o, ok := steps[i].Outcome(); ok {
			undo = append(undo, o.Undo)
		}
	}
	return strings.Join(undo, " && ")
}
