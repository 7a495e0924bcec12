package surgery

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/etcdpvc/etcdpvc/internal/durable"
	"github.com/etcdpvc/etcdpvc/store"
)

// txn is one transaction of the write step: the plans it writes, all or
// nothing, and how it is sent. A single write is a transaction of one
// plan, a compare-and-swap that keeps the key's lease or a
// compare-and-delete (singleTxn); a batch is a run of creates or of
// compare-and-deletes sent in one transaction of several keys
// (createTxn, deleteTxn).
type txn struct {
	plans []*Plan
	// puts is true when the transaction writes values, false when it
	// deletes keys.
	puts bool
	// send sends the transaction with plan i compared on expect[i]: the
	// plan's revision, or the revision of a fence resolve landed.
	send func(ctx context.Context, expect []int64) (int64, error)
	// maxOps is the most keys a transaction was allowed to hold
	// (--max-txn-ops), for the message of etcd's refusal.
	maxOps int
}

// singleTxn is the transaction of plan p alone on w.
func singleTxn(w store.Writer, p *Plan) (*txn, error) {
	if !p.Delete {
		return &txn{plans: []*Plan{p}, puts: true, send: func(ctx context.Context, expect []int64) (int64, error) {
			return w.CompareAndSwap(ctx, p.Key, expect[0], p.NewStored, p.Lease)
		}}, nil
	}
	d, ok := w.(store.Deleter)
	if !ok {
		return nil, fmt.Errorf("delete %s: %T cannot delete keys; nothing written", p.Key, w)
	}
	return &txn{plans: []*Plan{p}, send: func(ctx context.Context, expect []int64) (int64, error) {
		return d.CompareAndDelete(ctx, p.Key, expect[0])
	}}, nil
}

// batchTxn is the transaction of several creates or compare-and-deletes
// sent by send (store.BatchCreator's CreateBatch, store.BatchDeleter's
// DeleteBatch), all or none.
func batchTxn(send func(context.Context, []store.KeyValue) (int64, error), plans []*Plan, puts bool) *txn {
	return &txn{plans: plans, puts: puts, send: func(ctx context.Context, expect []int64) (int64, error) {
		kvs := make([]store.KeyValue, len(plans))
		for i, p := range plans {
			kvs[i] = store.KeyValue{Key: p.Key, Value: p.NewStored, ModRevision: expect[i]}
		}
		return send(ctx, kvs)
	}}
}

// batch reports whether t writes several keys in one transaction.
func (t *txn) batch() bool { return len(t.plans) > 1 }

// creates reports whether every plan of t creates its key.
func (t *txn) creates() bool {
	for _, p := range t.plans {
		if p.Delete || p.Expect != 0 {
			return false
		}
	}
	return true
}

// expects returns the revision each plan of t compares against.
func (t *txn) expects() []int64 {
	out := make([]int64, len(t.plans))
	for i, p := range t.plans {
		out[i] = p.Expect
	}
	return out
}

// what names t for a message: "write persistentvolumeclaim data-0 in
// namespace demo", "create 3 objects (first-key … last-key)".
func (t *txn) what() string { return verbOf(t.plans[0]) + " " + t.object() }

// object names t's object, or its objects by their first and last key.
func (t *txn) object() string {
	if !t.batch() {
		return t.plans[0].ObjectName()
	}
	return fmt.Sprintf("%d objects (%s … %s)", len(t.plans), t.plans[0].Key, t.plans[len(t.plans)-1].Key)
}

// nothing says that nothing of t was written, for a message's end.
func (t *txn) nothing() string {
	switch {
	case t.batch():
		return "nothing of this transaction was written"
	case !t.puts:
		return "nothing deleted"
	}
	return "nothing written"
}

// backupWriters is how many backup files of a batch are written and
// fsynced at once: the file system commits concurrent fsyncs together.
const backupWriters = 16

// writeTxn is the write step every write goes through, one plan (Apply)
// or a batch (Execute), as the package doc's steps 3 to 5 say: the keys
// compared on every member (checkMembers), the backups (writeBackups),
// the intent lines, the transaction sent (t.send) and a lost answer
// resolved (resolve), a majority checked (majorityHolds), the outcome
// lines (t.settle for a write not made or of unknown outcome). It returns
// one Result per plan, in order. The backups of a batch known not to have
// been applied are removed; a single write's stays, harmless.
func writeTxn(ctx context.Context, w store.Writer, t *txn, o ApplyOptions) ([]*Result, error) {
	var memberWarnings []string
	for _, p := range t.plans {
		warnings, err := checkMembers(ctx, w, p.Key)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", verbOf(p), p.ObjectName(), err)
		}
		memberWarnings = append(memberWarnings, warnings...)
	}
	now := o.Now().UTC()
	backups, paths, err := writeBackups(t.plans, o, now)
	if err != nil {
		return nil, fmt.Errorf("%s: back up before writing: %w; %s%s", t.what(), err, t.nothing(), dropBackups(o.BackupDir, paths...))
	}
	if o.afterBackup != nil {
		o.afterBackup()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w before the transaction was sent; %s%s", t.what(), err, t.nothing(), dropBackups(o.BackupDir, paths...))
	}
	logPath := filepath.Join(o.BackupDir, AuditLogName)
	recs := make([]AuditRecord, len(t.plans))
	intents := make([]AuditRecord, len(t.plans))
	for i, p := range t.plans {
		recs[i] = auditOf(p, backups[i], paths[i], o, now)
		intents[i] = recs[i].intent()
	}
	// Intent first: the write is in audit.log before it can be made, so
	// that a run killed after the commit leaves it there.
	if err := appendAudits(logPath, intents); err != nil {
		return nil, fmt.Errorf("%s: record the write in %s before sending it: %w; %s%s", t.what(), logPath, err, t.nothing(), dropBackups(o.BackupDir, paths...))
	}
	if o.BeforeSend != nil {
		o.BeforeSend()
	}
	rev, err := t.send(ctx, t.expects())
	var warnings []string
	if err != nil {
		if refusal := t.refused(err); refusal != nil {
			return nil, t.settle(logPath, recs, paths, refusal)
		}
		if rev, warnings, err = resolve(ctx, w, t, err); err != nil {
			return nil, t.settle(logPath, recs, paths, err)
		}
	}
	// The answer is one member's: a majority must hold the write.
	if err := majorityHolds(ctx, w, t, rev); err != nil {
		return nil, t.settle(logPath, recs, paths, err)
	}
	out := make([]*Result, len(t.plans))
	for i := range recs {
		recs[i].ToRevision, recs[i].Resolution = rev, warnings
		out[i] = &Result{Revision: rev, BackupPath: paths[i], Record: recs[i]}
	}
	// The warnings are the transaction's: said once.
	out[0].Warnings = append(memberWarnings, warnings...)
	if o.AfterSend != nil {
		o.AfterSend()
	}
	aerr := appendAudits(logPath, recs)
	for _, r := range out {
		if aerr != nil {
			r.AuditErr = aerr
		} else {
			r.AuditLog = logPath
		}
	}
	return out, nil
}

// verbOf is what plan p does, for a message.
func verbOf(p *Plan) string {
	switch {
	case p.Delete:
		return "delete"
	case p.Expect == 0:
		return "create"
	}
	return "write"
}

// writeBackups writes the backup of each plan (each file fsynced, several
// at once, then the directory once) and returns them with their paths.
// On an error, the paths are those of the backups written.
func writeBackups(plans []*Plan, o ApplyOptions, now time.Time) ([]*Backup, []string, error) {
	backups := make([]*Backup, len(plans))
	paths := make([]string, len(plans))
	var g errgroup.Group
	g.SetLimit(backupWriters)
	for i, p := range plans {
		g.Go(func() (err error) {
			backups[i] = backupOf(p, o, now)
			if paths[i], err = writeBackupFile(o.BackupDir, backups[i], now); err != nil {
				return fmt.Errorf("%s: %w", p.Key, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, paths, err
	}
	if err := durable.SyncDir(o.BackupDir); err != nil {
		return nil, paths, err
	}
	return backups, paths, nil
}

// refused returns the error of a transaction etcd answered without
// applying it (a key moved, a lease gone, too large, keys in several
// stores), nil when the answer was lost and the outcome is to resolve.
func (t *txn) refused(err error) error {
	var ce *store.ConflictError
	var bce *store.BatchConflictError
	var bme *store.BatchMovedError
	p := t.plans[0]
	switch {
	case !t.batch() && errors.As(err, &ce):
		return &ConflictError{Key: p.Key, Read: p.Expect, Current: ce.Current, Cause: ce}
	case errors.As(err, &bce), errors.As(err, &bme), errors.Is(err, store.ErrCrossStore):
		return fmt.Errorf("%w; %s", err, t.nothing())
	case t.batch() && errors.Is(err, store.ErrTooManyOps):
		return &TooManyOpsError{Verb: verbOf(p), Ops: len(t.plans), Asked: t.maxOps, Cause: err}
	case t.puts && errors.Is(err, store.ErrTooLarge):
		return fmt.Errorf("%s: %w: %w; %s", t.what(), ErrTooLarge, err, t.nothing())
	case t.puts && errors.Is(err, store.ErrLeaseNotFound):
		return fmt.Errorf("write %s: %w; nothing written", p.Key, err)
	}
	return nil
}

// intent is the intent line of the write r records: appended before its
// transaction is sent.
func (r Record) intent() Record {
	r.Outcome, r.ToRevision, r.Resolution = OutcomeIntent, 0, nil
	return r
}

// settle appends the outcome lines of transaction t (recs: its records,
// paths: its backups), sent and failed with err: uncertain, or not written
// (with the fence, when one established it; a batch's backups are then
// removed). It returns err, saying when audit.log could not take the
// lines.
func (t *txn) settle(logPath string, recs []AuditRecord, paths []string, err error) error {
	lines := make([]AuditRecord, len(recs))
	var ue *UncertainError
	var fe *FenceError
	uncertain := errors.As(err, &ue)
	errors.As(err, &fe)
	for i, rec := range recs {
		rec.ToRevision = 0
		switch {
		case uncertain:
			rec.Outcome, rec.Resolution = OutcomeUncertain, []string{ue.Reason}
			if rec.Key == ue.Key {
				rec.Fence = ue.Fence
			}
		case errors.Is(err, store.ErrConflict):
			rec.Outcome, rec.Reason = OutcomeConflict, err.Error()
		default:
			rec.Outcome, rec.Reason = OutcomeNotWritten, err.Error()
		}
		if fe != nil && fe.Key == rec.Key {
			rec.Fence = fe.Revision
		}
		lines[i] = rec
	}
	aerr := appendAudits(logPath, lines)
	switch {
	case uncertain:
		if !t.batch() {
			ue.Backup = recs[0].Backup
		}
		ue.AuditErr = aerr
		return err
	case aerr != nil:
		return fmt.Errorf("%w (audit.log could not record that nothing was written: %v)", err, aerr)
	case t.batch():
		return fmt.Errorf("%w%s", err, dropBackups(filepath.Dir(logPath), paths...))
	}
	return err
}
