package surgery

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
		return strings.Join(names, ", ")
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
	written := map[*Plan]int{}
	steps, err := Execute(ctx, w, plans, ExecuteOptions{ApplyOptions: o.ApplyOptions, Verifier: o.Verifier, MaxTxnOps: maxOps,
		OnWritten: func(st Step) {
			written[st.Plan] = len(res.Written)
			res.Warnings = append(res.Warnings, st.Result.Warnings...)
			res.Written = append(res.Written, SetWritten{Item: item[st.Plan], Revision: st.Result.Revision, BackupPath: st.Result.BackupPath, Record: st.Result.Record})
			if o.OnWritten != nil {
				o.OnWritten(item[st.Plan])
			}
		}})
	var failed []string
	for _, st := range steps {
		if j, ok := written[st.Plan]; ok {
			res.Written[j].VerifyErr = st.VerifyErr
		}
		if st.Err != nil {
			if res.Failed == nil {
				res.Failed = map[*SetItem]error{}
			}
			res.Failed[item[st.Plan]] = st.Err
			failed = append(failed, st.Plan.ObjectName())
		}
	}
	var pe *PartialError
	if errors.As(err, &pe) {
		return res, &SetPartialError{Written: len(res.Written), Total: len(plans), Failed: failed, Cause: steps[pe.Failed].Err}
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
	return fmt.Sprintf("%s %d objects in one transaction%s: %v: etcd's own --max-txn-ops is below %d (its default is %d); nothing of this transaction was written",
		verb, e.Ops, asked, ErrTooManyOps, e.Ops, store.MaxTxnOps)
}

// Unwrap returns ErrTooManyOps and the cause.
func (e *TooManyOpsError) Unwrap() []error { return []error{ErrTooManyOps, e.Cause} }

// Hint says what to do.
func (e *TooManyOpsError) Hint() string {
	return fmt.Sprintf("lower --max-txn-ops to at most etcd's own --max-txn-ops (%d unless etcd was started with another value) and run the same command again", store.MaxTxnOps)
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
