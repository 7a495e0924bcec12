package flows

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

// ErrIncomplete marks a command that could not read everything: what it
// read is reported and what it skipped is listed.
var ErrIncomplete = errors.New("incomplete: some values could not be read")

// incompleteError is an ErrIncomplete with its own message.
type incompleteError struct{ msg string }

func (e *incompleteError) Error() string        { return e.msg }
func (e *incompleteError) Is(target error) bool { return target == ErrIncomplete }

// RefusedError is a write declined as asked: nothing was written. Hint
// says what to do instead (see Hint).
type RefusedError struct {
	Msg, Advice string
}

func (e *RefusedError) Error() string { return e.Msg }

// Hint is what to do about the refusal ("": nothing more to say).
func (e *RefusedError) Hint() string { return e.Advice }

// usageError is an *OptionError with a hint: a request that cannot be
// made as given.
func usageError(hint, format string, args ...any) error {
	err := error(&session.OptionError{Err: fmt.Errorf(format, args...)})
	if hint != "" {
		err = &hintedError{err, hint}
	}
	return err
}

// WriteOptions are the options every write shares.
type WriteOptions struct {
	// Yes writes without asking; DryRun shows the plan and writes nothing.
	Yes, DryRun bool
	// BackupDir is where backups and audit.log go ("":
	// surgery.DefaultBackupDir()).
	BackupDir string
	// ShowSecrets shows Secret values in diffs.
	ShowSecrets bool
	// ShowManagedFields shows metadata.managedFields and the
	// last-applied-configuration annotation in diffs (hidden by default).
	ShowManagedFields bool
	// Out, with a --db file, writes into a copy of it (Options.Out).
	Out string
	// ToolVersion is recorded in backups and the audit log.
	ToolVersion string
	// MaxTxnOps, above 0, writes runs of creates or of deletes into a live
	// etcd in transactions of at most that many keys, each all or nothing
	// (surgery.ExecuteOptions.MaxTxnOps); 0 writes one key per
	// transaction.
	MaxTxnOps int
	// OperationID is the run's operation id, recorded in every backup and
	// audit line ("": surgery.Execute makes one per call).
	OperationID string
	// Brief shows each plan by its description, not its diff, and its
	// warnings once each (a delete of a selection, whose diffs would be
	// every object whole).
	Brief bool
	// Result, when set, collects what became of each key (-o json|yaml).
	Result *Result
	// BeforeSend and AfterSend are surgery.ApplyOptions' test hooks.
	BeforeSend, AfterSend func()
}

// Terminal is what a write tells the user and asks them.
type Terminal interface {
	// Print writes text to the output as it is.
	Print(text string)
	// Diff writes a unified diff to the output, ending its last line.
	Diff(diff string)
	// Warn tells a warning (one line, without a prefix).
	Warn(msg string)
	// Note tells a line of progress on the error stream (without a
	// prefix).
	Note(msg string)
	// Confirm asks question; nil goes on. When it cannot be asked, the
	// refusal says hint (how to write without asking, or not at all).
	Confirm(question, hint string) error
}

// readOnlyHint is what to do about a write into a read-only db file.
const readOnlyHint = "a db file is read-only: write through --endpoints, or edit a copy with --db IN --out OUT"

// Write is the one write path, for one plan or several that belong
// together: it shows every diff and warning, checks the plans with the
// apiserver (verify), stops at o.DryRun, asks once (unless o.Yes), and
// lets surgery.Execute write the plans in order, telling each write as it
// is made, then how to undo them (or, into a snapshot copy, how to put the
// copy into the cluster).
func (s *Session) Write(ctx context.Context, t Terminal, plans []*surgery.Plan, o WriteOptions) (steps []surgery.Step, err error) {
	var v *Verifier
	defer func() { o.Result.recordWrite(s, plans, steps, err, o.DryRun && err == nil, v) }()
	var todo, keys []string
	for _, p := range plans {
		if !p.NoOp {
			todo, keys = append(todo, p.ObjectName()), append(keys, p.Key)
		}
	}
	warned := map[string]bool{}
	for _, p := range plans {
		switch {
		case o.Brief && !p.NoOp:
			t.Print(p.Description + "\n")
			for _, w := range p.Warnings {
				if !warned[w] {
					warned[w] = true
					t.Warn(w)
				}
			}
		case p.NoOp && len(todo) == 0 && p.NoOpReason != "":
			t.Print(fmt.Sprintf("nothing to do: %s; nothing written\n", p.NoOpReason))
		case p.NoOp && len(todo) == 0:
			t.Print(fmt.Sprintf("nothing to do: %s is already as asked (%s); nothing written\n", p.ObjectName(), p.Description))
		case p.NoOp && p.NoOpReason != "":
			t.Print(fmt.Sprintf("%s: nothing to do (%s), no change; only %s changes\n", p.ObjectName(), p.NoOpReason, strings.Join(todo, " and ")))
		case p.NoOp:
			t.Print(fmt.Sprintf("%s: already as asked (%s), no change; only %s changes\n", p.ObjectName(), p.Description, strings.Join(todo, " and ")))
		default:
			t.Diff(p.Diff)
			for _, w := range p.Warnings {
				t.Warn(w)
			}
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	v, err = s.NewVerifier(ctx, func(msg string) { t.Print(msg + "\n") })
	if err != nil {
		return nil, err
	}
	for _, p := range plans {
		if !p.NoOp {
			if err := v.Before(ctx, p); err != nil {
				return nil, err
			}
		}
	}
	if o.DryRun && o.Brief {
		t.Print(fmt.Sprintf("dry run: %s; nothing written\n", inspect.Count(len(todo), "write", "writes")))
		return nil, nil
	}
	if o.DryRun {
		for _, p := range plans {
			if !p.NoOp {
				t.Print(fmt.Sprintf("dry run: %s; nothing written\n", p.Description))
			}
		}
		return nil, nil
	}
	w, err := store.AsWriter(s.Reader)
	if err != nil {
		return nil, &hintedError{fmt.Errorf("%s: %w", s.Description, err), readOnlyHint}
	}
	if err := surgery.ProbeBackupDir(surgery.BackupDirOrDefault(o.BackupDir)); err != nil {
		return nil, err
	}
	if err := surgery.CheckBackupRoom(surgery.BackupDirOrDefault(o.BackupDir), surgery.BackupRoom(plans)); err != nil {
		return nil, err
	}
	// The members before the question: an operator is refused before
	// being asked (each write compares them again).
	if err := surgery.CheckMembers(ctx, w, plans); err != nil {
		return nil, err
	}
	if !o.Yes {
		what := "this change"
		if len(keys) > 1 {
			what = "these changes"
		}
		if err := t.Confirm(fmt.Sprintf("Write %s to %s?", what, s.DescribeWrite(keys)), "re-run with --yes to write this change, or --dry-run to only see the diff"); err != nil {
			return nil, err
		}
	}
	steps, err = surgery.Execute(ctx, w, plans, surgery.ExecuteOptions{
		ApplyOptions: s.ApplyOptions(ctx, t, o),
		Verifier:     v,
		MaxTxnOps:    o.MaxTxnOps,
		OnWritten: func(st surgery.Step) {
			o, ok := st.Outcome()
			if !ok {
				return
			}
			for _, w := range o.Warnings {
				t.Warn(w)
			}
			if o.Deleted {
				t.Print(fmt.Sprintf("deleted: %s at revision %s (delete revision %d, %s)\nbackup: %s\n", o.Key, o.From, o.Revision, s.Target(o.Key), o.Backup))
				return
			}
			t.Print(fmt.Sprintf("written: %s revision %s → %d (%s)\nbackup: %s\n", o.Key, o.From, o.Revision, s.Target(o.Key), o.Backup))
		},
	})
	if s.SnapshotCopy() == nil {
		// A copy of a db file is undone by not restoring it.
		o.Result.setRestore(surgery.UndoLine(steps))
	}
	if err != nil {
		if errors.Is(err, surgery.ErrPartial) {
			if undo := surgery.UndoLine(steps); undo != "" && s.SnapshotCopy() == nil {
				err = &hintedError{err, "run the same command again to resume, or undo what was written with " + undo}
			}
			err = s.partialCopy(err)
		}
		if errors.Is(err, surgery.ErrNotAccepted) {
			err = &hintedError{err, "the write is made, but the apiserver does not accept it: undo it with " + surgery.UndoLine(steps) + " and see the runbook's section on verification"}
		} else if errors.Is(err, surgery.ErrNotRecorded) {
			err = &hintedError{err, notRecordedHint(surgery.UndoLine(steps))}
		}
		return steps, err
	}
	if done, err := s.finishSnapshot(t); done {
		return steps, err
	}
	t.Print(fmt.Sprintf("undo with: %s\n", surgery.UndoLine(steps)))
	return steps, nil
}

// NewVerifier connects to the apiserver of the cluster written (the
// kubeconfig of --kubeconfig, --kubeadm or $KUBECONFIG), unless
// --verify=never or the target is a db file; note receives its lines for
// the operator. A --kubeconfig that names no usable file is an
// *OptionError.
func (s *Session) NewVerifier(ctx context.Context, note func(string)) (*Verifier, error) {
	vo := verify.Options{Mode: s.Options.Verify, Reader: s.Reader, Codec: &s.Planner.Codec, Note: note}
	if s.IsFile() {
		vo.Offline = "the target is a db file (--db), which no apiserver serves"
	} else {
		vo.Kubeconfig, vo.KubeconfigErr = s.Options.FindKubeconfig()
		var oe *session.OptionError
		if errors.As(vo.KubeconfigErr, &oe) {
			return nil, oe
		}
	}
	return newPlanVerifier(verify.New(ctx, vo)), nil
}

// ApplyOptions are the options of every write into s: where backups go
// (an absolute path) and what they record, the cluster and how to reach it
// again included. It warns about a backup directory others could tamper
// with.
func (s *Session) ApplyOptions(ctx context.Context, t Terminal, o WriteOptions) surgery.ApplyOptions {
	dir := surgery.BackupDirOrDefault(o.BackupDir)
	for _, w := range surgery.CheckBackupDir(dir) {
		t.Warn(w)
	}
	src, err := s.BackupSource(ctx)
	if err != nil {
		t.Warn(fmt.Sprintf("the backup cannot record the cluster's ID (%v); restore will not be able to check it", err))
	}
	return surgery.ApplyOptions{BackupDir: dir, Endpoints: s.Options.Endpoints, ToolVersion: o.ToolVersion, Source: src, OperationID: o.OperationID, BeforeSend: o.BeforeSend, AfterSend: o.AfterSend}
}

// finishSnapshot, after a successful write, finishes a snapshot copy
// (FinishSnapshot) and tells what to do with it. It returns false for a
// session that is not a snapshot copy.
// partialCopy marks the session's snapshot copy, when it writes into one,
// as holding only part of a change (no sha256 trailer) and says so in
// err's hint.
func (s *Session) partialCopy(err error) error {
	sc := s.SnapshotCopy()
	if sc == nil || sc.Writes() == 0 {
		return err
	}
	sc.MarkPartial()
	return &hintedError{err, fmt.Sprintf("%s holds only part of the change, and no sha256 trailer (etcdutl will not restore it): delete it and run the command again (the input db is unchanged)", sc.Path())}
}

func (s *Session) finishSnapshot(t Terminal) (bool, error) {
	r, err := s.FinishSnapshot()
	if r == nil && err == nil {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	t.Print(fmt.Sprintf("snapshot: %s (revision %d, sha256 %s, trailer %s); %s is unchanged\n", r.Path, r.Revision, r.FileSHA256, r.TrailerSHA256, r.Input))
	t.Print(r.Runbook)
	return true, nil
}

// notRecordedHint is the hint of a write made whose outcome line audit.log
// could not take: undo names the command that undoes it.
func notRecordedHint(undo string) string {
	return "the write is made; free the backup directory's disk (or fix what refused the append) before the next write; undo it with " + undo + ", which reads the backups and checks each key"
}
