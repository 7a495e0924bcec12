package surgery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/etcdpvc/etcdpvc/store"
)

// RecoverSetWriteOptions tunes WriteRecoverSet.
type RecoverSetWriteOptions struct {
	ApplyOptions
	// MaxTxnOps bounds the keys created in one transaction (default
	// store.MaxTxnOps, etcd's default --max-txn-ops).
	MaxTxnOps int
	// OnWritten, when set, is called after each item written, in order.
	OnWritten func(*SetItem)
	// Verifier, when set, checks every item before the first write and
	// each item written after it, as for any write (Execute).
	Verifier Verifier
}

// SetWritten is what WriteRecoverSet did with one item.
type SetWritten struct {
	Item       *SetItem
	Revision   int64
	BackupPath string
	// VerifyErr is why the Verifier does not accept the item as written.
	VerifyErr error
	// Record is the write's record, as audit.log has it.
	Record Record
}

// RecoverSetResult reports WriteRecoverSet.
type RecoverSetResult struct {
	// Written are the items written, in order.
	Written []SetWritten
	// BackupDir is where the backups and audit.log are.
	BackupDir string
	// Warnings are problems that did not stop the writes.
	Warnings []string
	// Failed are the items whose write failed, or whose outcome is
	// unknown, with the error (every item of a failed transaction).
	Failed map[*SetItem]error
}

// SetPartialError reports a WriteRecoverSet that stopped after writing
// some items. It matches ErrPartial and the failure's own error.
type SetPartialError struct {
	// Written and Total count the items written and to write.
	Written, Total int
	// Failed names the objects whose write failed or is uncertain.
	Failed []string
	Cause  error
}

func (e *SetPartialError) Error() string {
	return fmt.Sprintf("%v: %d of %d objects were written before the write of %s failed: %v; run the same command again to resume (what was created is then reported exists-identical)",
		ErrPartial, e.Written, e.Total, joinNames(e.Failed), e.Cause)
}

// Unwrap returns ErrPartial and the cause.
func (e *SetPartialError) Unwrap() []error { return []error{ErrPartial, e.Cause} }

func joinNames(names []string) string {
	switch {
	case len(names) == 0:
		return "the next objects"
	case len(names) <= 3:
		out := names[0]
		for _, n := range names[1:] {
			out += ", " + n
		}
		return out
	}
	return fmt.Sprintf("%s and %d more in the same transaction", names[0], len(names)-1)
}

// WriteRecoverSet writes a RecoverSet plan through Execute, the executor
// of every write: the creates first, in plan order, in transactions of at
// most o.MaxTxnOps keys and etcd's request size, each all or nothing
// (store.BatchCreator; one create-only compare-and-swap per key on a
// store that cannot), each transaction's backups (recording the absent
// keys, so that restore deletes what was created) written durably before
// it; then each replace with its own compare-and-swap and backup. With
// o.Verifier, every item is checked before the first write and each one
// after its write. It stops at the first failure: the error is the
// failure's when nothing was written, else a *SetPartialError
// (ErrPartial); writes the Verifier does not accept make a
// *NotAcceptedError (ErrNotAccepted). A second run of the same plan
// resumes: what was created exists identical.
func WriteRecoverSet(ctx context.Context, w store.Writer, plan *SetPlan, o RecoverSetWriteOptions) (*RecoverSetResult, error) {
	o.ApplyOptions = o.withDefaults()
	maxOps := o.MaxTxnOps
	if maxOps <= 0 {
		maxOps = store.MaxTxnOps
	}
	items := plan.Writes()
	plans := make([]*Plan, len(items))
	item := make(map[*Plan]*SetItem, len(items))
	for i, it := range items {
		plans[i], item[it.Plan] = it.Plan, it
	}
	res := &RecoverSetResult{BackupDir: o.BackupDir}
	steps, err := Execute(ctx, w, plans, ExecuteOptions{ApplyOptions: o.ApplyOptions, Verifier: o.Verifier, MaxTxnOps: maxOps,
		OnWritten: func(st Step) {
			res.Warnings = append(res.Warnings, st.Result.Warnings...)
			res.Written = append(res.Written, SetWritten{Item: item[st.Plan], Revision: st.Result.Revision, BackupPath: st.Result.BackupPath, Record: st.Result.Record})
			if o.OnWritten != nil {
				o.OnWritten(item[st.Plan])
			}
		}})
	for _, st := range steps {
		if st.Err != nil {
			if res.Failed == nil {
				res.Failed = map[*SetItem]error{}
			}
			res.Failed[item[st.Plan]] = st.Err
		}
	}
	for i := range res.Written {
		for _, st := range steps {
			if st.Plan == res.Written[i].Item.Plan {
				res.Written[i].VerifyErr = st.VerifyErr
			}
		}
	}
	var pe *PartialError
	if errors.As(err, &pe) {
		var names []string
		for _, st := range steps {
			if st.Err != nil {
				names = append(names, st.Plan.ObjectName())
			}
		}
		return res, &SetPartialError{Written: len(res.Written), Total: len(plans), Failed: names, Cause: steps[pe.Failed].Err}
	}
	return res, err
}

// ResumedOperation returns the operation a run of plan resumes: the last
// one whose writes audit.log in dir records (an intent, a write made, or
// one of unknown outcome) of keys the plan finds holding the very value
// that write left (ActionIdentical), provided it wrote none of the keys
// the plan writes. The run then writes as that operation, so that one
// restore --operation undoes both runs, the first one's writes included
// when it was killed before it could print its undo line. "" when none.
func ResumedOperation(dir string, plan *SetPlan) string {
	found := map[string]string{}
	for _, it := range plan.Items {
		if it.Action == ActionIdentical && it.LiveSHA256 != "" {
			found[it.Key] = it.LiveSHA256
		}
	}
	if len(found) == 0 {
		return ""
	}
	recs, _, err := ReadAuditLog(BackupDirOrDefault(dir))
	if err != nil {
		return ""
	}
	id := ""
	keys := map[string]map[string]bool{} // operation → keys it wrote
	for _, rec := range recs {
		if rec.OperationID == "" || !rec.mayBeMade() {
			continue
		}
		if keys[rec.OperationID] == nil {
			keys[rec.OperationID] = map[string]bool{}
		}
		keys[rec.OperationID][rec.Key] = true
		if sum, ok := found[rec.Key]; ok && !rec.Deleted && rec.NewSHA256 == sum {
			id = rec.OperationID
		}
	}
	for _, it := range plan.Writes() {
		if keys[id][it.Key] {
			return "" // a key written twice in one operation could not be undone as a unit
		}
	}
	return id
}

// Writes returns the items the plan writes, in the order WriteRecoverSet
// writes them: the creates, then the replaces.
func (p *SetPlan) Writes() []*SetItem {
	var creates, replaces []*SetItem
	for _, it := range p.Items {
		switch it.Action {
		case ActionCreate:
			creates = append(creates, it)
		case ActionReplace:
			replaces = append(replaces, it)
		}
	}
	return append(creates, replaces...)
}

// backupWriters is how many backup files of a batch are written and
// fsynced at once: the file system commits concurrent fsyncs together.
const backupWriters = 16

// batchOp is what differs between writeBatch's two kinds of transaction,
// creates (store.BatchCreator) and compare-and-deletes
// (store.BatchDeleter): the words, the keys sent, the transaction, and how
// an unanswered one is resolved.
type batchOp struct {
	verb, noun string
	kv         func(p *Plan) store.KeyValue
	send       func(ctx context.Context, kvs []store.KeyValue) (int64, error)
	resolve    func(ctx context.Context, kvs []store.KeyValue, txnErr error) (int64, error)
}

// createBatch is the batchOp of a run of creates.
func createBatch(w store.Writer, bc store.BatchCreator) batchOp {
	return batchOp{verb: "create", noun: "objects",
		kv:   func(p *Plan) store.KeyValue { return store.KeyValue{Key: p.Key, Value: p.NewStored} },
		send: bc.CreateBatch,
		resolve: func(ctx context.Context, kvs []store.KeyValue, txnErr error) (int64, error) {
			return resolveBatch(ctx, w, bc, kvs, txnErr)
		}}
}

// deleteBatch is the batchOp of a run of compare-and-deletes.
func deleteBatch(w store.Writer, bd store.BatchDeleter) batchOp {
	return batchOp{verb: "delete", noun: "objects",
		kv:   func(p *Plan) store.KeyValue { return store.KeyValue{Key: p.Key, ModRevision: p.Expect} },
		send: bd.DeleteBatch,
		resolve: func(ctx context.Context, kvs []store.KeyValue, txnErr error) (int64, error) {
			return resolveDeleteBatch(ctx, w, kvs, txnErr)
		}}
}

// writeBatch writes the backups of a batch of creates or of deletes (each
// file fsynced, several at once, then the directory once), appends their
// intent lines to the audit log (one fsync), then sends them in one
// transaction, then appends their outcome lines (one fsync).
// When the transaction is known not to have been applied (a conflict, keys
// in several stores, more than etcd takes in one transaction), the batch's
// backups are removed: they record writes that were never made.
func writeBatch(ctx context.Context, batch []*Plan, o ApplyOptions, op batchOp) ([]*Result, error) {
	o = o.withDefaults()
	now := o.Now().UTC()
	out := make([]*Result, len(batch))
	kvs := make([]store.KeyValue, len(batch))
	backups := make([]*Backup, len(batch))
	errs := make([]error, len(batch))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(backupWriters, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				backups[i] = backupOf(batch[i], o, now)
				out[i] = &Result{}
				out[i].BackupPath, errs[i] = writeBackupFile(o.BackupDir, backups[i], now)
			}
		}()
	}
	for i := range batch {
		next <- i
	}
	close(next)
	wg.Wait()
	paths := make([]string, len(batch))
	for i, r := range out {
		if r != nil {
			paths[i] = r.BackupPath
		}
	}
	// unsent removes the batch's backups: the transaction was not
	// applied, and never will be.
	unsent := func() string { return dropBackups(o.BackupDir, paths...) }
	for i, p := range batch {
		if errs[i] != nil {
			return nil, fmt.Errorf("%s %s: back up before writing: %w; this batch of %d was not written%s", op.verb, p.ObjectName(), errs[i], len(batch), unsent())
		}
		kvs[i] = op.kv(p)
	}
	if err := syncDir(o.BackupDir); err != nil {
		return nil, fmt.Errorf("%s %d %s: back up before writing: %w; this batch was not written", op.verb, len(batch), op.noun, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s %d %s: %w before the transaction was sent; this batch was not written%s", op.verb, len(batch), op.noun, err, unsent())
	}
	logPath := filepath.Join(o.BackupDir, AuditLogName)
	recs := make([]AuditRecord, len(batch))
	for i, p := range batch {
		recs[i] = auditOf(p, backups[i], out[i].BackupPath, o, now)
	}
	// audit appends one line per key: the intent (before the transaction
	// is sent), or the outcome (with fe's fence on its key).
	audit := func(rev int64, outcome, reason string, fe *FenceError) error {
		lines := make([]AuditRecord, len(batch))
		for i, rec := range recs {
			rec.Outcome, rec.ToRevision, rec.Reason = outcome, rev, reason
			if outcome == OutcomeIntent {
				rec = rec.intent()
			}
			if fe != nil && fe.Key == rec.Key {
				rec.Fence = fe.Revision
			}
			lines[i], out[i].Record = rec, rec
		}
		return appendAudits(logPath, lines)
	}
	if err := audit(0, OutcomeIntent, "", nil); err != nil {
		return nil, fmt.Errorf("%s %d %s: record them in %s before sending the transaction: %w; this batch was not written%s", op.verb, len(batch), op.noun, logPath, err, unsent())
	}
	// notSent records that the transaction was not applied, and removes
	// its backups.
	notSent := func(err error, fe *FenceError) string {
		outcome := OutcomeNotWritten
		if errors.Is(err, store.ErrConflict) {
			outcome = OutcomeConflict
		}
		if aerr := audit(0, outcome, err.Error(), fe); aerr != nil {
			return fmt.Sprintf(" (audit.log could not record that nothing was written: %v)", aerr)
		}
		return unsent()
	}
	if o.BeforeSend != nil {
		o.BeforeSend()
	}
	rev, err := op.send(ctx, kvs)
	if err != nil {
		var ce *store.BatchConflictError
		var me *store.BatchMovedError
		switch {
		case errors.As(err, &ce), errors.As(err, &me):
			return nil, fmt.Errorf("%w; nothing of this transaction was written%s", err, notSent(err, nil))
		case errors.Is(err, store.ErrCrossStore):
			notSent(err, nil)
			return nil, fmt.Errorf("%w; nothing of this transaction was written", err)
		case errors.Is(err, store.ErrTooManyOps):
			return nil, &TooManyOpsError{Verb: op.verb, Ops: len(batch), Cause: err, Removed: notSent(err, nil)}
		case errors.Is(err, store.ErrTooLarge):
			return nil, fmt.Errorf("%s %d %s: %w: %w; nothing of this transaction was written%s", op.verb, len(batch), op.noun, ErrTooLarge, err, notSent(err, nil))
		}
		rev, err = op.resolve(ctx, kvs, err)
		if err != nil {
			var fe *FenceError
			errors.As(err, &fe)
			switch {
			case errors.Is(err, ErrUncertain):
				if aerr := audit(0, OutcomeUncertain, "", nil); aerr != nil {
					err = fmt.Errorf("%w (the audit log could not record it: %v)", err, aerr)
				}
			case errors.Is(err, errBatchNotApplied):
				err = fmt.Errorf("%w%s", err, notSent(err, fe))
			}
			return nil, err
		}
	}
	for i := range out {
		out[i].Revision = rev
	}
	if o.AfterSend != nil {
		o.AfterSend()
	}
	if err := audit(rev, OutcomeWritten, "", nil); err != nil {
		// The writes are made; Execute reports the missing lines.
		for i := range out {
			out[i].AuditErr = err
		}
	} else {
		for i := range out {
			out[i].AuditLog = logPath
		}
	}
	return out, nil
}

// errBatchNotApplied marks a resolution that established that a
// transaction whose answer was lost was not applied and never will be.
var errBatchNotApplied = errors.New("the transaction was not applied")

// resolveDeleteBatch finds out, after a batch of compare-and-deletes
// failed without an answer, whether it was applied. The transaction
// deletes all its keys or none, and only while each is at its revision:
// while one key is still at its revision it has not been applied, and
// rewriting that key with its own value fences it off for good (nothing
// deleted: run it again). A re-read alone proves nothing, since the keys
// are read one by one (the transaction may land between two reads) and a
// key the transaction deleted may have been created again since; so with
// no key left at its revision, or a fence that does not land, the outcome
// is uncertain.
func resolveDeleteBatch(ctx context.Context, w store.Writer, kvs []store.KeyValue, txnErr error) (int64, error) {
	what := fmt.Sprintf("delete %d objects (%s … %s)", len(kvs), kvs[0].Key, kvs[len(kvs)-1].Key)
	uncertain := func(reason string) error {
		return fmt.Errorf("%s: %w: %s; check them with etcdpvc get, or run the same command again, which finds what is left: %w", what, ErrUncertain, reason, txnErr)
	}
	rd, ok := w.(store.Reader)
	if !ok {
		return 0, uncertain("the transaction failed without an answer and the store cannot be read back")
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	var held *store.KeyValue
	for _, kv := range kvs {
		got, err := rd.Get(rctx, kv.Key, 0)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return 0, uncertain(fmt.Sprintf("the transaction's answer was lost and the keys could not be read back (%v)", err))
		case got.ModRevision == kv.ModRevision && held == nil:
			held = got
		}
	}
	if held == nil {
		return 0, uncertain("a re-read shows no key at the revision the transaction compares against: deleted by this transaction (and perhaps created again since), or changed by another client")
	}
	frev, err := w.CompareAndSwap(rctx, held.Key, held.ModRevision, held.Value, held.Lease)
	if err != nil {
		return 0, uncertain(fmt.Sprintf("%s was still at its revision when read, but fencing the transaction off failed (%v): it may have applied, or may still", held.Key, err))
	}
	return 0, &FenceError{Key: held.Key, Revision: frev, Err: fmt.Errorf("%s: the transaction's answer was lost (%v); %s was still at revision %d and was rewritten with its own value at revision %d so that the transaction can no longer apply; run the same command again: %w, nothing of it was deleted",
		what, txnErr, held.Key, held.ModRevision, frev, errBatchNotApplied)}
}

// ErrTooManyOps means a transaction held more operations than etcd
// accepts in one (its --max-txn-ops); nothing of it was written.
var ErrTooManyOps = errors.New("more operations in one transaction than etcd accepts")

// TooManyOpsError reports a transaction of creates or deletes that etcd refused for
// holding more operations than its --max-txn-ops; nothing of it was
// written. It matches ErrTooManyOps and its cause (store.ErrTooManyOps,
// store.ErrTooLarge).
type TooManyOpsError struct {
	// Verb is what the transaction did ("create", "delete"); Ops the
	// number of keys it held; Asked the most a transaction was allowed to
	// hold (--max-txn-ops).
	Verb       string
	Ops, Asked int
	Cause      error
	// Removed says what became of the transaction's backups.
	Removed string
}

func (e *TooManyOpsError) Error() string {
	asked := ""
	if e.Asked > 0 {
		asked = fmt.Sprintf(" (--max-txn-ops %d here)", e.Asked)
	}
	verb := e.Verb
	if verb == "" {
		verb = "create"
	}
	return fmt.Sprintf("%s %d objects in one transaction%s: %v: etcd's own --max-txn-ops is below %d (its default is %d); nothing of this transaction was written%s",
		verb, e.Ops, asked, ErrTooManyOps, e.Ops, store.MaxTxnOps, e.Removed)
}

// Unwrap returns ErrTooManyOps and the cause.
func (e *TooManyOpsError) Unwrap() []error { return []error{ErrTooManyOps, e.Cause} }

// Hint says what to do.
func (e *TooManyOpsError) Hint() string {
	return fmt.Sprintf("lower --max-txn-ops to at most etcd's own --max-txn-ops (%d unless etcd was started with another value) and run the same command again", store.MaxTxnOps)
}

// resolveBatch finds out, after a batch create failed without an answer,
// whether it was applied: every key holding its new value means it was;
// every key absent, while the caller waits, sends it again (the lost
// transaction and the new one cannot both apply, since each requires every
// key absent); some created and the rest absent means the transaction
// landed while the keys were read one by one, and they are read again;
// anything else is uncertain.
func resolveBatch(ctx context.Context, w store.Writer, bc store.BatchCreator, kvs []store.KeyValue, txnErr error) (int64, error) {
	rd, ok := w.(store.Reader)
	uncertain := func(reason string) error {
		return fmt.Errorf("create %d objects (%s … %s): %w: %s; check them with etcdpvc get, or run the same command again, which reports what exists: %w",
			len(kvs), kvs[0].Key, kvs[len(kvs)-1].Key, ErrUncertain, reason, txnErr)
	}
	if !ok {
		return 0, uncertain("the transaction failed without an answer and the store cannot be read back")
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	for attempt := 0; attempt < resolveRetries; attempt++ {
		made, absent := 0, 0
		var rev int64
		for _, kv := range kvs {
			got, err := rd.Get(rctx, kv.Key, 0)
			switch {
			case errors.Is(err, store.ErrNotFound):
				absent++
			case err != nil:
				return 0, uncertain(fmt.Sprintf("the transaction's answer was lost and the keys could not be read back (%v)", err))
			case bytes.Equal(got.Value, kv.Value):
				made++
				rev = got.ModRevision
			}
		}
		switch {
		case made == len(kvs):
			return rev, nil
		case absent == len(kvs) && ctx.Err() == nil:
			r, err := bc.CreateBatch(rctx, kvs)
			if err == nil {
				return r, nil
			}
			txnErr = err
			pauseOrDone(rctx)
		case made > 0 && made+absent == len(kvs) && attempt < resolveRetries-1:
			// The keys are read one by one: a transaction that landed
			// during the read shows some created and the rest absent.
			// It creates all of them at once, so read them again.
			continue
		default:
			return 0, uncertain(fmt.Sprintf("the transaction's answer was lost; a re-read shows %d of the %d keys created and %d absent; a create cannot be fenced off and may still land", made, len(kvs), absent))
		}
	}
	return 0, uncertain("the transaction's answer was lost and the keys are still absent; a create cannot be fenced off and may still land")
}

// Records are the records of plan's items as WriteRecoverSet left them
// (res, err: its result), in plan order: each written one's audit record,
// exists-identical as nothing to do, exists-different refused, skipped and
// unreadable ones not written, and a create or replace not written with
// its own error (outcome classifies it), or, when none was written, the
// run's; after a failure, those not attempted.
func (p *SetPlan) Records(res *RecoverSetResult, err error, operationID string, outcome func(error) string) []Record {
	written := map[*SetItem]Record{}
	var failed map[*SetItem]error
	if res != nil {
		for _, w := range res.Written {
			written[w.Item] = w.Record
		}
		failed = res.Failed
	}
	out := make([]Record, 0, len(p.Items))
	for _, it := range p.Items {
		if rec, ok := written[it]; ok {
			out = append(out, rec)
			continue
		}
		r := Record{Schema: RecordSchema, OperationID: operationID, Key: it.Key, Resource: it.Resource.GroupResource().String(),
			Namespace: it.Namespace, Name: it.Name, Op: "recover " + it.What()}
		if it.Plan != nil {
			r.Op, r.FromRevision = it.Plan.Description, it.Plan.Expect
		}
		switch ferr := failed[it]; {
		case it.Action == ActionIdentical:
			r.Outcome, r.Reason = OutcomeNothingToDo, "exists-identical: the key holds what recover would write"
		case it.Action == ActionDifferent:
			r.Outcome, r.Reason = OutcomeRefused, "exists-different: "+it.Reason
		case it.Action == ActionSkipped:
			r.Outcome, r.Reason = OutcomeNotWritten, "skipped: "+it.Reason
		case it.Action == ActionUnreadable:
			r.Outcome, r.Reason = OutcomeNotWritten, "unreadable: "+it.Reason
		case ferr != nil:
			r.Outcome, r.Reason = outcome(ferr), ferr.Error()
		case err != nil && len(written) == 0:
			r.Outcome, r.Reason = outcome(err), err.Error()
		case err != nil:
			r.Outcome, r.Reason = OutcomeNotWritten, "not attempted: an earlier transaction failed"
		default:
			r.Outcome, r.Reason = OutcomeNotWritten, "not written"
		}
		out = append(out, r)
	}
	return out
}
