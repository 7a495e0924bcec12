package flows

import (
	"errors"
	"sync"

	"github.com/etcdpvc/etcdpvc/internal/exitcode"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// Result collects what one write command run did, key by key, for its
// -o json|yaml document (surgery.RecordList). Its methods do nothing on a
// nil *Result, so the write flows record unconditionally.
type Result struct {
	// OperationID is the run's operation id, shared by every key.
	OperationID string

	mu      sync.Mutex
	items   []surgery.Record
	keys    map[string]bool
	restore string
}

// NewResult returns an empty Result of operation id.
func NewResult(id string) *Result { return &Result{OperationID: id, keys: map[string]bool{}} }

// add appends records, each key once (the first record of a key wins).
func (r *Result) add(recs ...surgery.Record) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range recs {
		if r.keys[rec.Key] {
			continue
		}
		r.keys[rec.Key] = true
		r.items = append(r.items, rec)
	}
}

// Failed records that key was not written because of err (a refusal, a
// conflict, …), unless the key is recorded already. A plan, when there is
// one, gives the record its identity; prefix names the keys' layout.
func (r *Result) Failed(key string, p *surgery.Plan, prefix string, err error) {
	if r == nil || err == nil {
		return
	}
	if p == nil {
		p = &surgery.Plan{Key: key}
	}
	r.add(surgery.PlanRecord(p, r.OperationID, prefix, OutcomeOf(err), err.Error()))
}

// setRestore sets the command that undoes the whole run.
func (r *Result) setRestore(cmd string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.restore = cmd
	r.mu.Unlock()
}

// Document is the run's document: every key recorded, in order, and err,
// the run's error, when it failed.
func (r *Result) Document(err error) surgery.RecordList {
	doc := surgery.RecordList{APIVersion: surgery.RecordListAPIVersion, Kind: surgery.RecordListKind, Items: []surgery.Record{}}
	if r != nil {
		r.mu.Lock()
		doc.OperationID, doc.Restore = r.OperationID, r.restore
		doc.Items = append(doc.Items, r.items...)
		r.mu.Unlock()
	}
	if err != nil {
		doc.Error = err.Error()
	}
	return doc
}

// OutcomeOf is the Record outcome of a key not written because of err:
// conflict, uncertain, refused (what exits 5), else not-written.
func OutcomeOf(err error) string {
	switch {
	case errors.Is(err, surgery.ErrUncertain):
		return surgery.OutcomeUncertain
	case errors.Is(err, store.ErrConflict):
		return surgery.OutcomeConflict
	case ExitStatus(err) == exitcode.Refused:
		return surgery.OutcomeRefused
	}
	return surgery.OutcomeNotWritten
}

// recordWrite records what Write did with plans: each no-op, each step
// written (its audit record, with the verification's verdict), and what
// became of the others (err, the dry run, not attempted).
func (r *Result) recordWrite(s *Session, plans []*surgery.Plan, steps []surgery.Step, err error, dryRun bool, v *Verifier) {
	if r == nil {
		return
	}
	prefix := s.Options.Prefix
	for i, p := range plans {
		var st surgery.Step
		if i < len(steps) {
			st = steps[i]
		}
		switch {
		case p.NoOp:
			reason := p.NoOpReason
			if reason == "" {
				reason = "already as asked (" + p.Description + ")"
			}
			r.add(surgery.PlanRecord(p, r.OperationID, prefix, surgery.OutcomeNothingToDo, reason))
		case st.Written():
			rec := st.Result.Record
			v.Verdict(p, &rec)
			if s.SnapshotCopy() != nil {
				rec.Restore = "" // written into a copy of a db file: no etcd to restore into
			}
			r.add(rec)
		case st.Err != nil:
			r.add(surgery.PlanRecord(p, r.OperationID, prefix, OutcomeOf(st.Err), st.Err.Error()))
		case dryRun:
			r.add(surgery.PlanRecord(p, r.OperationID, prefix, surgery.OutcomeDryRun, "dry run: nothing written"))
		case err != nil && !anyWritten(steps):
			r.add(surgery.PlanRecord(p, r.OperationID, prefix, OutcomeOf(err), err.Error()))
		default:
			r.add(surgery.PlanRecord(p, r.OperationID, prefix, surgery.OutcomeNotWritten, "not attempted: an earlier key's write failed"))
		}
	}
}

// anyWritten reports whether any step was written.
func anyWritten(steps []surgery.Step) bool {
	for _, st := range steps {
		if st.Written() {
			return true
		}
	}
	return false
}
