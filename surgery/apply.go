package surgery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/store"
)

// ApplyOptions tunes Apply.
type ApplyOptions struct {
	// BackupDir is where backups and audit.log go (default
	// DefaultBackupDir()). It is created with mode 0700 if missing.
	BackupDir string
	// Endpoints are recorded in the backup and the audit log.
	Endpoints []string
	// ToolVersion is recorded in the backup and the audit log.
	ToolVersion string
	// Source is the cluster written to and how to reach it again, recorded
	// in the backup so that restore can find it and refuse another.
	Source *Source
	// OperationID is recorded in every backup and audit line: one id for
	// every key of one command run (Execute makes one when it is empty).
	OperationID string
	// Now returns the time recorded (default time.Now).
	Now func() time.Time
	// afterBackup, when set, is called after the backup is durable and
	// before the transaction. It is a test hook.
	afterBackup func()
	// BeforeSend, when set, is called once a write's intent line is in
	// audit.log and right before its transaction is sent. It is a test
	// hook: a test stops a member there, so that the transaction meets
	// the fault.
	BeforeSend func()
	// AfterSend, when set, is called once a write (or a transaction of
	// several) is made and before its outcome line is appended. It is a
	// test hook: a test kills the process there, in the window between
	// the commit and the outcome line.
	AfterSend func()
	// MaxRequestBytes is the largest request etcd accepts (default
	// store.MaxRequestBytes, etcd's default --max-request-bytes): a larger
	// write is refused with ErrTooLarge before anything is written.
	MaxRequestBytes int
}

// Result reports a write.
type Result struct {
	// Revision is the key's new mod revision.
	Revision int64
	// BackupPath is the backup file written before the write.
	BackupPath string
	// AuditLog is the audit log the write was recorded in.
	AuditLog string
	// Warnings are problems after a successful write that did not undo it
	// (the outcome had to be confirmed by a re-read).
	Warnings []string
	// AuditErr is why audit.log could not take the write's outcome line
	// (its intent line is there): the write is made, and Execute fails
	// with a *NotRecordedError.
	AuditErr error
	// Record is the write's record, as audit.log has it.
	Record Record
}

// Apply makes a plan's write: it writes the backup (durably, before
// anything else), appends the write's intent line to audit.log, then
// writes p.NewStored with a compare-and-swap on p.Expect that keeps
// p.Lease, then appends the outcome line. A value larger than etcd
// accepts is refused (ErrTooLarge) before the backup. If the backup or
// the intent line cannot be written, or ctx is done before the
// transaction is sent, nothing is sent (and the backup is removed). If
// the key changed since the plan read it, nothing is written and the
// error is a *ConflictError (matching store.ErrConflict); its backup
// stays, harmless, with a not-written outcome line. A write made whose
// outcome line audit.log did not take is reported in Result.AuditErr.
//
// On a live etcd of several members, the key is first compared on each
// (checkMembers): members that hold it differently refuse the write, a
// *MembersDifferError, before the backup. Once a member answers that the
// write was made, a majority must hold it (majorityHolds), or its outcome
// is uncertain.
//
// When the transaction's answer is lost (a timeout, a lost connection,
// ctx cancelled while it was under way), resolve finds out what happened;
// an outcome it cannot establish is an *UncertainError (ErrUncertain),
// also recorded in the audit log, and a fence that established nothing
// was written is recorded in its not-written line (Record.Fence).
func Apply(ctx context.Context, w store.Writer, p *Plan, o ApplyOptions) (*Result, error) {
	if err := checkPlan(p, o); err != nil {
		return nil, err
	}
	op, err := opOf(w, p)
	if err != nil {
		return nil, err
	}
	o = o.withDefaults()
	// The members first: a write through a member that holds another
	// state than the others is not the cluster's.
	memberWarnings, err := checkMembers(ctx, w, p.Key)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op.verb, p.ObjectName(), err)
	}
	now := o.Now().UTC()
	b := backupOf(p, o, now)
	path, err := writeBackup(o.BackupDir, b, now)
	if err != nil {
		return nil, fmt.Errorf("%s %s: back up before %s: %w; nothing written", op.verb, p.Key, op.gerund, err)
	}
	if o.afterBackup != nil {
		o.afterBackup()
	}
	rec := auditOf(p, b, path, o, now)
	logPath := filepath.Join(o.BackupDir, AuditLogName)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s %s: %w before the transaction was sent; %s%s", op.verb, p.ObjectName(), err, op.nothing, dropBackups(o.BackupDir, path))
	}
	// Intent first: the write is in audit.log before it can be made, so
	// that a run killed after the commit leaves it there.
	if err := appendAudit(logPath, rec.intent()); err != nil {
		return nil, fmt.Errorf("%s %s: record the write in %s before sending it: %w; %s%s", op.verb, p.ObjectName(), logPath, err, op.nothing, dropBackups(o.BackupDir, path))
	}

	res := &Result{BackupPath: path, Warnings: memberWarnings}
	if o.BeforeSend != nil {
		o.BeforeSend()
	}
	rev, err := op.send(ctx)
	if err != nil {
		var ce *store.ConflictError
		switch {
		case errors.As(err, &ce):
			err = &ConflictError{Key: p.Key, Read: p.Expect, Current: ce.Current, Cause: ce}
		case !p.Delete && errors.Is(err, store.ErrLeaseNotFound):
			err = fmt.Errorf("write %s: %w; nothing written", p.Key, err)
		case !p.Delete && errors.Is(err, store.ErrTooLarge):
			err = fmt.Errorf("write %s: %w: %w; nothing written", p.ObjectName(), ErrTooLarge, err)
		default:
			var warnings []string
			rev, warnings, err = op.resolve(ctx, err)
			res.Warnings = append(res.Warnings, warnings...)
			rec.Resolution = warnings
		}
		if err != nil {
			return nil, settleFailed(logPath, rec, err)
		}
	}
	// The answer is one member's: a majority must hold the write.
	if err := majorityHolds(ctx, w, p, rev); err != nil {
		return nil, settleFailed(logPath, rec, err)
	}
	res.Revision = rev
	rec.ToRevision = rev
	res.Record = rec
	if o.AfterSend != nil {
		o.AfterSend()
	}
	if err := appendAudit(logPath, rec); err != nil {
		res.AuditErr = err
	} else {
		res.AuditLog = logPath
	}
	return res, nil
}

// backupOf is the backup of plan p, written at now: what the key held
// (its value and revisions), or that it was absent, and the digest of what
// the write puts there (none for a delete).
func backupOf(p *Plan, o ApplyOptions, now time.Time) *Backup {
	b := &Backup{
		Kind:        BackupKind,
		Version:     BackupVersion,
		Key:         p.Key,
		Endpoints:   o.Endpoints,
		Absent:      p.Expect == 0,
		Timestamp:   now.Format(time.RFC3339Nano),
		ToolVersion: o.ToolVersion,
		Operation:   p.Description,
		Source:      o.Source,
		OperationID: o.OperationID,
	}
	if !p.Delete {
		b.NewSHA256 = digest(p.NewStored)
	}
	if p.Expect != 0 {
		kv := p.Before.KV
		b.ModRevision, b.CreateRevision, b.KeyVersion, b.Lease = kv.ModRevision, kv.CreateRevision, kv.Version, kv.Lease
		b.Value = kv.Value
	}
	b.SHA256 = digest(b.Value)
	return b
}

// auditOf is the audit line of plan p, backed up as b at path: a write
// made (Outcome written) until it says otherwise.
func auditOf(p *Plan, b *Backup, path string, o ApplyOptions, now time.Time) AuditRecord {
	r := Record{
		Schema:       RecordSchema,
		OperationID:  o.OperationID,
		Time:         now.Format(time.RFC3339Nano),
		Key:          p.Key,
		Op:           p.Description,
		Outcome:      OutcomeWritten,
		Deleted:      p.Delete,
		FromRevision: p.Expect,
		Backup:       path,
		Restore:      UndoCommand(path),
		SHA256:       b.SHA256,
		NewSHA256:    b.NewSHA256,
		Endpoints:    o.Endpoints,
		ToolVersion:  o.ToolVersion,
		Settles:      p.Settles,
	}
	prefix := ""
	if o.Source != nil {
		prefix = o.Source.Prefix
	}
	r.identify(p, prefix)
	return r
}

// withDefaults returns o with its defaults filled in: the backup
// directory (DefaultBackupDir(), made absolute, so that the printed undo
// works from any directory), the clock and an operation id.
func (o ApplyOptions) withDefaults() ApplyOptions {
	o.BackupDir = BackupDirOrDefault(o.BackupDir)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OperationID == "" {
		o.OperationID = NewOperationID(o.Now())
	}
	return o
}

// BackupDirOrDefault returns dir, or DefaultBackupDir() when it is empty,
// made absolute when it can be.
func BackupDirOrDefault(dir string) string {
	if dir == "" {
		dir = DefaultBackupDir()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return dir
}

// writeOp is what differs between Apply's two kinds of write, a
// compare-and-swap and a compare-and-delete: the words that report it,
// the transaction, and how an unanswered one is resolved (resolve,
// resolveDelete). The rest (backup, audit line, refusals) is Apply's.
type writeOp struct {
	verb, gerund, nothing string
	send                  func(ctx context.Context) (int64, error)
	resolve               func(ctx context.Context, txnErr error) (int64, []string, error)
}

// opOf returns p's writeOp on w.
func opOf(w store.Writer, p *Plan) (*writeOp, error) {
	if !p.Delete {
		return &writeOp{
			verb: "write", gerund: "writing", nothing: "nothing written",
			send: func(ctx context.Context) (int64, error) {
				return w.CompareAndSwap(ctx, p.Key, p.Expect, p.NewStored, p.Lease)
			},
			resolve: func(ctx context.Context, txnErr error) (int64, []string, error) { return resolve(ctx, w, p, txnErr) },
		}, nil
	}
	d, ok := w.(store.Deleter)
	if !ok {
		return nil, fmt.Errorf("delete %s: %T cannot delete keys; nothing written", p.Key, w)
	}
	return &writeOp{
		verb: "delete", gerund: "deleting", nothing: "nothing deleted",
		send: func(ctx context.Context) (int64, error) { return d.CompareAndDelete(ctx, p.Key, p.Expect) },
		resolve: func(ctx context.Context, txnErr error) (int64, []string, error) {
			return 0, nil, resolveDelete(ctx, w, p, txnErr)
		},
	}, nil
}

// Step is one plan's part in Execute.
type Step struct {
	Plan *Plan
	// Result is set when the plan was written.
	Result *Result
	// Err is why the plan was not written, or why its outcome is unknown
	// (ErrUncertain); nil for a no-op plan and for plans after a failure,
	// which were not attempted.
	Err error
	// VerifyErr is why the Verifier does not accept the plan as written
	// (the write was made); nil when it does, or when there is none.
	VerifyErr error
}

// Verifier checks plans with an authority outside etcd (the apiserver),
// so that this package needs no client of it. Execute calls Before for
// every plan before writing any, and After for each plan written.
type Verifier interface {
	// Before is called before anything is written; an error refuses the
	// write, and nothing is written.
	Before(ctx context.Context, p *Plan) error
	// After is called once the plan is written; an error says the write
	// was made but is not accepted.
	After(ctx context.Context, s Step) error
}

// Written reports whether the step's plan was written.
func (s Step) Written() bool { return s.Result != nil }

// ExecuteOptions tunes Execute.
type ExecuteOptions struct {
	ApplyOptions
	// OnWritten, when set, is called after each plan written, in order.
	OnWritten func(Step)
	// Verifier, when set, checks every plan before the first write and
	// each written plan after its write.
	Verifier Verifier
	// MaxTxnOps, when above 0, writes each run of consecutive creates
	// (into a store.BatchCreator) or of compare-and-deletes (into a
	// store.BatchDeleter) in transactions of at most MaxTxnOps keys (and
	// etcd's request size), each all or nothing, with every backup of a
	// transaction durable before it is sent (writeBatch). 0 writes one
	// compare-and-swap or compare-and-delete per plan.
	MaxTxnOps int
}

// Execute makes the writes of plans that belong together (one plan, a
// recipe's several, or a recovery's many), in order, each with its own
// backup and compare-and-swap, as Apply does, or with o.MaxTxnOps each run
// of creates or of deletes in transactions of several keys (writeBatch);
// no-op plans are skipped. It checks
// every plan before writing any, so a refusal (ErrNoOp aside, ErrTooLarge)
// writes nothing. It stops at the first failure and returns one Step per
// plan, in order.
//
// The error is the failed plan's when nothing was written before it;
// otherwise a *PartialError (ErrPartial, and the failure's own sentinel,
// ErrUncertain included) saying what was written, with each backup, and
// what was not.
//
// With a Verifier, a plan its Before refuses is a refusal: nothing is
// written. After runs on each plan written; the writes go on (plans that
// belong together are better written together), and when After failed
// for any, the error is a *NotAcceptedError (ErrNotAccepted).
func Execute(ctx context.Context, w store.Writer, plans []*Plan, o ExecuteOptions) ([]Step, error) {
	o.ApplyOptions = o.withDefaults() // one operation id for every plan
	steps := make([]Step, len(plans))
	for i, p := range plans {
		steps[i].Plan = p
		if p == nil || p.NoOp {
			continue
		}
		if err := checkPlan(p, o.ApplyOptions); err != nil {
			return steps, err
		}
	}
	if o.Verifier != nil {
		for _, p := range plans {
			if p == nil || p.NoOp {
				continue
			}
			if err := o.Verifier.Before(ctx, p); err != nil {
				return steps, err
			}
		}
	}
	written := 0
	// fail records err for the steps from..to (one plan, or a
	// transaction of several) and returns Execute's error.
	fail := func(from, to int, err error) ([]Step, error) {
		for j := from; j < to; j++ {
			steps[j].Err = err
		}
		if written == 0 {
			return steps, err
		}
		return steps, &PartialError{Steps: steps, Failed: from}
	}
	done := func(i int, res *Result) {
		steps[i].Result = res
		written++
		if o.OnWritten != nil {
			o.OnWritten(steps[i])
		}
		if o.Verifier != nil {
			steps[i].VerifyErr = o.Verifier.After(ctx, steps[i])
		}
	}
	single := 0 // plans before this index are written one by one
	for i := 0; i < len(plans); {
		p := plans[i]
		if p == nil || p.NoOp {
			i++
			continue
		}
		if end, op, ok := batchEnd(w, plans, i, o); ok && i >= single && end-i > 1 {
			for _, bp := range plans[i:end] {
				if _, err := checkMembers(ctx, w, bp.Key); err != nil {
					return fail(i, end, fmt.Errorf("%s: %w", bp.ObjectName(), err))
				}
			}
			results, err := writeBatch(ctx, plans[i:end], o.ApplyOptions, op)
			switch {
			case err == nil:
				for j := i; j < end; j++ {
					done(j, results[j-i])
				}
				i = end
				continue
			case errors.Is(err, store.ErrCrossStore):
				// Not one store: one transaction per key.
				single = end
			default:
				var tm *TooManyOpsError
				if errors.As(err, &tm) {
					tm.Asked = o.MaxTxnOps
				}
				return fail(i, end, err)
			}
		}
		res, err := Apply(ctx, w, p, o.ApplyOptions)
		if err != nil {
			return fail(i, i+1, err)
		}
		done(i, res)
		i++
	}
	for _, st := range steps {
		if st.VerifyErr != nil {
			return steps, &NotAcceptedError{Steps: steps}
		}
	}
	for _, st := range steps {
		if st.Written() && st.Result.AuditErr != nil {
			return steps, &NotRecordedError{Steps: steps}
		}
	}
	return steps, nil
}

// batchEnd returns the end of the transaction that starts at plans[i] and
// how it is sent: at most o.MaxTxnOps consecutive creates (into a
// store.BatchCreator) or compare-and-deletes (into a store.BatchDeleter),
// within etcd's request size; ok is false when plans[i] is neither, the
// store cannot batch it, or o.MaxTxnOps is 0.
func batchEnd(w store.Writer, plans []*Plan, i int, o ExecuteOptions) (end int, op batchOp, ok bool) {
	isCreate := func(p *Plan) bool { return p != nil && !p.NoOp && !p.Delete && p.Expect == 0 }
	isDelete := func(p *Plan) bool { return p != nil && !p.NoOp && p.Delete && p.Expect != 0 }
	var same func(p *Plan) bool
	var size func(p *Plan) int
	bc, creates := w.(store.BatchCreator)
	bd, deletes := w.(store.BatchDeleter)
	switch {
	case o.MaxTxnOps <= 0:
		return i + 1, op, false
	case creates && isCreate(plans[i]):
		same, op = isCreate, createBatch(w, bc)
		size = func(p *Plan) int { return store.CompareAndSwapSize(p.Key, p.NewStored) }
	case deletes && isDelete(plans[i]):
		same, op = isDelete, deleteBatch(w, bd)
		size = func(p *Plan) int { return store.DeleteBatchSize([]store.KeyValue{{Key: p.Key}}) - 512 }
	default:
		return i + 1, op, false
	}
	limit := o.MaxRequestBytes
	if limit <= 0 {
		limit = store.MaxRequestBytes
	}
	end, total := i, 512
	for end < len(plans) && end-i < o.MaxTxnOps && same(plans[end]) {
		n := size(plans[end])
		if end > i && total+n > limit {
			break
		}
		total += n
		end++
	}
	return end, op, true
}

// NotAcceptedError reports an Execute whose writes were all made and
// whose Verifier does not accept some of them. It matches ErrNotAccepted
// and each refusal.
type NotAcceptedError struct {
	Steps []Step
}

func (e *NotAcceptedError) Error() string {
	var parts []string
	for _, s := range e.Steps {
		if s.VerifyErr != nil {
			parts = append(parts, fmt.Sprintf("%s was written (revision %s → %d; backup %s), but %v", s.Plan.ObjectName(), revString(s.Plan.Expect), s.Result.Revision, s.Result.BackupPath, s.VerifyErr))
		}
	}
	return fmt.Sprintf("%v: %s", ErrNotAccepted, strings.Join(parts, "; "))
}

// Unwrap returns ErrNotAccepted and each step's VerifyErr.
func (e *NotAcceptedError) Unwrap() []error {
	errs := []error{ErrNotAccepted}
	for _, s := range e.Steps {
		if s.VerifyErr != nil {
			errs = append(errs, s.VerifyErr)
		}
	}
	return errs
}

// PartialError reports an Execute that stopped after writing some of its
// plans. It matches ErrPartial and the failed plan's error.
type PartialError struct {
	Steps []Step
	// Failed is the index of the step that failed.
	Failed int
}

func (e *PartialError) Error() string {
	var parts []string
	for i, s := range e.Steps {
		if s.Plan == nil || s.Plan.NoOp {
			continue
		}
		name := s.Plan.ObjectName()
		switch {
		case s.Written() && s.Result.AuditErr != nil:
			parts = append(parts, fmt.Sprintf("%s was written (revision %s → %d; backup %s), but audit.log could not take its outcome line (%v)", name, revString(s.Plan.Expect), s.Result.Revision, s.Result.BackupPath, s.Result.AuditErr))
		case s.Written():
			parts = append(parts, fmt.Sprintf("%s was written (revision %s → %d; backup %s)", name, revString(s.Plan.Expect), s.Result.Revision, s.Result.BackupPath))
		case i == e.Failed && errors.Is(s.Err, ErrUncertain):
			parts = append(parts, fmt.Sprintf("%s may or may not have been written: %v", name, s.Err))
		case i == e.Failed:
			parts = append(parts, fmt.Sprintf("%s was not written: %v", name, s.Err))
		case s.Err != nil && errors.Is(s.Err, ErrUncertain):
			parts = append(parts, fmt.Sprintf("%s may or may not have been written (the same transaction)", name))
		case s.Err != nil:
			parts = append(parts, fmt.Sprintf("%s was not written (the same transaction)", name))
		default:
			parts = append(parts, fmt.Sprintf("%s was not written (not attempted)", name))
		}
	}
	return fmt.Sprintf("%v: %s", ErrPartial, strings.Join(parts, "; "))
}

// Unwrap returns ErrPartial and the failed step's error.
func (e *PartialError) Unwrap() []error { return []error{ErrPartial, e.Steps[e.Failed].Err} }

// checkPlan refuses a plan Apply must not make: a no-op, one without the
// value it read, one larger than etcd accepts.
func checkPlan(p *Plan, o ApplyOptions) error {
	if p == nil || p.NoOp {
		return fmt.Errorf("apply: %w", ErrNoOp)
	}
	if p.Expect != 0 && (p.Before == nil || p.Before.KV.ModRevision != p.Expect) {
		return fmt.Errorf("apply %s: plan expects revision %d but holds no value read at it", p.Key, p.Expect)
	}
	limit := o.MaxRequestBytes
	if limit <= 0 {
		limit = store.MaxRequestBytes
	}
	if n := store.CompareAndSwapSize(p.Key, p.NewStored); n > limit {
		return fmt.Errorf("write %s: the new value is %d bytes (%s with the key and the request's framing), more than etcd accepts in one request (--max-request-bytes, %s): %w; nothing written",
			p.ObjectName(), len(p.NewStored), byteSize(n), byteSize(limit), ErrTooLarge)
	}
	return nil
}

// byteSize formats a size in bytes for a message.
func byteSize(n int) string {
	if n < 1024*1024 {
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.2f MiB", float64(n)/(1024*1024))
}

// ObjectName names the plan's object as kubectl does
// ("persistentvolumeclaim data-0 in namespace demo"), or by its key when
// it cannot.
func (p *Plan) ObjectName() string {
	var obj *codec.Object
	if p.Before != nil && p.Before.Obj != nil {
		obj = p.Before.Obj
	} else if o, err := codec.Decode(p.NewPlain); err == nil {
		obj = o
	}
	if obj == nil || obj.Meta == nil || obj.GVK.Kind == "" || obj.Meta.Name == "" {
		return p.Key
	}
	name := strings.ToLower(obj.GVK.Kind) + " " + obj.Meta.Name
	if obj.Meta.Namespace != "" {
		name += " in namespace " + obj.Meta.Namespace
	}
	return name
}

// UncertainError reports a write whose transaction was sent and whose
// outcome could not be established: the key may hold the old value or the
// new one, and a transaction still in flight may yet apply. It matches
// ErrUncertain and its cause.
type UncertainError struct {
	// Key is the etcd key; Object names it as kubectl does.
	Key, Object string
	// Expect is the revision the write compared against (0: a create).
	Expect int64
	// Delete: the write was a compare-and-delete.
	Delete bool
	// Backup is the backup of the value before the write.
	Backup string
	// Reason says what is known.
	Reason string
	// Cause is the transaction's error.
	Cause error
	// AuditErr is why the audit log could not record the outcome, if it
	// could not.
	AuditErr error
	// Fence is the revision of the last fence resolve landed (0: none):
	// a retry sent after it compares on it, and may still apply.
	Fence int64
}

func (e *UncertainError) Error() string {
	check := fmt.Sprintf("check whether it holds the new value now (etcdpvc get) and compare it with the backup %s", e.Backup)
	if e.Expect == 0 {
		check = fmt.Sprintf("check whether it exists now (etcdpvc get); the backup %s records the write", e.Backup)
	}
	verb := "write"
	if e.Delete {
		verb, check = "delete", fmt.Sprintf("check whether it still exists (etcdpvc get); the backup %s holds its value (etcdpvc restore puts it back)", e.Backup)
	}
	msg := fmt.Sprintf("%s %s: %v: %s; %s", verb, e.Object, ErrUncertain, e.Reason, check)
	if e.AuditErr != nil {
		msg += fmt.Sprintf(" (the audit log could not record it: %v)", e.AuditErr)
	}
	return msg
}

// Unwrap returns ErrUncertain and the transaction's error.
func (e *UncertainError) Unwrap() []error { return []error{ErrUncertain, e.Cause} }

// Bounds of resolve: how long it tries (from the caller giving up, when it
// does), and how many requests it sends.
const (
	resolveTimeout  = 30 * time.Second
	cancelledBudget = 5 * time.Second
	resolveAttempts = 8
	resolveRetries  = 3
	resolvePause    = 250 * time.Millisecond
)

// pauseOrDone waits resolvePause between two attempts of a resolve, or
// until ctx is done.
func pauseOrDone(ctx context.Context) {
	t := time.NewTimer(resolvePause)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// resolve finds out, after a transaction failed without an answer (a
// timeout, a leader lost, a connection reset, ctx cancelled while it was
// under way), whether it was applied, and makes the write if it was not
// and the caller is still waiting.
//
// A read that shows the key unchanged proves nothing: the transaction may
// still be on its way and apply later. The outcome is known only once the
// transaction can no longer apply, which for an update is established by a
// fence: a compare-and-swap on the same revision that rewrites the value
// read with itself (same bytes, same lease). Then:
//
//   - the key holds the new value: the write was made;
//   - the fence succeeded: the lost transaction compares against a revision
//     the key has left, so it can never apply: nothing was written. Unless
//     ctx is done (the caller gave up: report and stop), the write is sent
//     again against the fence's revision, and resolved the same way;
//   - the key moved on (the fence failed, or the re-read shows another
//     revision): no transaction of this write can apply any more; the
//     key's history since the plan's revision says whether it was made
//     (and then overwritten) or not (a conflict, or only a fence landed).
//
// A create (p.Expect 0) has no fence that leaves no visible object: unless
// a read shows the new value (or a retry's answer says it was written), its
// outcome is uncertain.
//
// It returns the write's revision and warnings, or an error that says
// whether anything was written (an *UncertainError when it cannot tell).
// It runs at most resolveTimeout, and at most cancelledBudget once ctx is
// done.
func resolve(ctx context.Context, w store.Writer, p *Plan, txnErr error) (int64, []string, error) {
	obj := p.ObjectName()
	// expect is the revision every transaction of this write still
	// outstanding compares against (or an older one): the plan's, then
	// each fence's.
	expect := p.Expect
	uncertain := func(reason string) error {
		e := &UncertainError{Key: p.Key, Object: obj, Expect: p.Expect, Reason: reason, Cause: txnErr}
		if expect != p.Expect {
			e.Fence = expect
		}
		return e
	}
	rd, ok := w.(store.Reader)
	if !ok {
		return 0, nil, uncertain(fmt.Sprintf("the transaction failed without an answer (%v) and the store cannot be read back", txnErr))
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(cancelledBudget, cancel)
		context.AfterFunc(rctx, func() { t.Stop() })
	})
	defer stop()
	pause := func() { pauseOrDone(rctx) }
	lost := fmt.Sprintf("the transaction's answer was lost (%v)", txnErr)
	if ctx.Err() != nil {
		lost = fmt.Sprintf("the write was interrupted while its transaction was under way (%v)", txnErr)
	}

	fenceSent := false
	retries := 0
	lastErr := txnErr

	// retry sends the write again against expect, unless the caller gave
	// up or the retries are spent (then it reports, writing nothing more).
	// It returns done with the outcome, or !done to re-read.
	retry := func(notWritten string) (done bool, rev int64, warn []string, err error) {
		if ctx.Err() != nil || retries >= resolveRetries {
			err := fmt.Errorf("write %s: %s; %s: nothing written: %w", obj, lost, notWritten, txnErr)
			if expect != p.Expect {
				err = &FenceError{Key: p.Key, Revision: expect, Err: err}
			}
			return true, 0, nil, err
		}
		retries++
		rev, err = w.CompareAndSwap(rctx, p.Key, expect, p.NewStored, p.Lease)
		var ce *store.ConflictError
		switch {
		case err == nil:
			return true, rev, []string{fmt.Sprintf("%s; %s, and the write was sent again and succeeded", lost, notWritten)}, nil
		case errors.As(err, &ce):
			// The re-read sorts out whether an attempt landed.
		case errors.Is(err, store.ErrLeaseNotFound):
			return true, 0, nil, fmt.Errorf("write %s: %s; %s, and sent again it failed: %w; nothing written", obj, lost, notWritten, err)
		default:
			lastErr = err
			pause()
		}
		return false, 0, nil, nil
	}
	// fenced takes note of a fence that landed at frev: no transaction of
	// this write sent so far can apply.
	fenced := func(frev int64) (done bool, rev int64, warn []string, err error) {
		from := expect
		expect = frev
		return retry(fmt.Sprintf("the key was still at revision %d and was rewritten with its own value at revision %d so that the transaction can no longer apply", from, frev))
	}

	for attempt := 0; ; attempt++ {
		if attempt >= resolveAttempts || rctx.Err() != nil {
			if p.Expect == 0 {
				return 0, nil, uncertain(fmt.Sprintf("%s; the reads did not show the key created, but a create cannot be fenced off and may still land (last error: %v)", lost, lastErr))
			}
			return 0, nil, uncertain(fmt.Sprintf("%s; the transaction could not be fenced off (last error: %v), so it may still apply", lost, lastErr))
		}
		kv, err := readAny(rctx, rd, p.Key)
		absent := errors.Is(err, store.ErrNotFound)
		if err != nil && !absent {
			lastErr = err
			pause()
			continue
		}
		switch {
		case !absent && bytes.Equal(kv.Value, p.NewStored):
			return kv.ModRevision, []string{fmt.Sprintf("%s, but a re-read shows the new value at revision %d: the write was made", lost, kv.ModRevision)}, nil

		case p.Expect == 0 && absent:
			// A create not (yet) applied: no fence exists. Retry while
			// the caller waits: a retry and the lost create cannot both
			// apply.
			if ctx.Err() != nil || retries >= resolveRetries {
				return 0, nil, uncertain(fmt.Sprintf("%s; a re-read shows the key still absent, but a create cannot be fenced off and may still land", lost))
			}
			retries++
			rev, err := w.CompareAndSwap(rctx, p.Key, 0, p.NewStored, p.Lease)
			var ce *store.ConflictError
			switch {
			case err == nil:
				return rev, []string{fmt.Sprintf("%s; the key was still absent, and the write was sent again and succeeded", lost)}, nil
			case errors.As(err, &ce):
			default:
				lastErr = err
				pause()
			}

		case p.Expect != 0 && !absent && kv.ModRevision == expect:
			// Unchanged: fence the lost transaction off.
			fenceSent = true
			frev, err := w.CompareAndSwap(rctx, p.Key, expect, kv.Value, kv.Lease)
			var ce *store.ConflictError
			switch {
			case err == nil:
				if done, rev, warn, err := fenced(frev); done {
					return rev, warn, err
				}
			case errors.As(err, &ce):
				// Moved between the read and the fence: the re-read
				// sorts it out.
			case errors.Is(err, store.ErrLeaseNotFound):
				// The key's lease is gone: the lost transaction, which
				// attaches it, cannot apply either.
				return 0, nil, fmt.Errorf("write %s: %s; the key's lease has expired (%w), so the transaction cannot apply: nothing written", obj, lost, store.ErrLeaseNotFound)
			default:
				lastErr = err
				pause()
			}

		default:
			// The key left the revision every transaction of this write
			// compares against (an update), or exists with another value
			// (a create).
			made, err := writtenSince(rctx, rd, p)
			switch {
			case err != nil && errors.Is(err, store.ErrCompacted):
				return 0, nil, uncertain(fmt.Sprintf("%s; the key has changed since (now at revision %s) and its history is compacted: whether the write was made cannot be told", lost, revString(currentRev(kv, absent))))
			case err != nil:
				lastErr = err
				pause()
				continue
			case made != 0:
				return made, []string{fmt.Sprintf("%s, but the key's history shows the new value written at revision %d; the key has changed since (now at %s)", lost, made, revString(currentRev(kv, absent)))}, nil
			case p.Expect == 0:
				return 0, nil, uncertain(fmt.Sprintf("%s; the key was created meanwhile with another value (revision %d), and the create may still land if that is deleted", lost, kv.ModRevision))
			case fenceSent && !absent && bytes.Equal(kv.Value, p.Before.KV.Value):
				// A fence whose answer was lost landed.
				if done, rev, warn, err := fenced(kv.ModRevision); done {
					return rev, warn, err
				}
				continue
			}
			current := currentRev(kv, absent)
			var cv *store.KeyValue
			if !absent {
				cv = kv
			}
			ce := &store.ConflictError{Key: p.Key, Expected: p.Expect, Current: current, CurrentValue: cv}
			return 0, nil, &ConflictError{Key: p.Key, Read: p.Expect, Current: current, Cause: ce}
		}
	}
}

// currentRev is a read key's mod revision, 0 when it is absent.
func currentRev(kv *store.KeyValue, absent bool) int64 {
	if absent || kv == nil {
		return 0
	}
	return kv.ModRevision
}

// writtenSince returns the revision at which the key held p.NewStored
// after the plan's revision, or 0 if it never did.
func writtenSince(ctx context.Context, rd store.Reader, p *Plan) (int64, error) {
	var made int64
	info, err := rd.History(ctx, p.Key, func(ev store.Event) error {
		if !ev.Deleted && ev.KV.ModRevision > p.Expect && bytes.Equal(ev.KV.Value, p.NewStored) {
			made = ev.KV.ModRevision
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if made == 0 && info.CompactRevision > p.Expect {
		return 0, fmt.Errorf("history compacted past revision %d: %w", p.Expect, store.ErrCompacted)
	}
	return made, nil
}

// intent is the intent line of the write r records: appended before its
// transaction is sent.
func (r Record) intent() Record {
	r.Outcome, r.ToRevision, r.Resolution = OutcomeIntent, 0, nil
	return r
}

// settleFailed appends the outcome line of a write whose transaction was
// sent and failed with err (rec: its intent): uncertain, or not written
// (with the fence, when one established it). It returns err, saying when
// audit.log could not take the line.
func settleFailed(logPath string, rec Record, err error) error {
	rec.ToRevision = 0
	var ue *UncertainError
	if errors.As(err, &ue) {
		ue.Backup = rec.Backup
		rec.Outcome, rec.Resolution, rec.Fence = OutcomeUncertain, []string{ue.Reason}, ue.Fence
		ue.AuditErr = appendAudit(logPath, rec)
		return err
	}
	rec.Outcome, rec.Reason = OutcomeNotWritten, err.Error()
	if errors.Is(err, store.ErrConflict) {
		rec.Outcome = OutcomeConflict
	}
	var fe *FenceError
	if errors.As(err, &fe) && fe.Key == rec.Key {
		rec.Fence = fe.Revision
	}
	if aerr := appendAudit(logPath, rec); aerr != nil {
		return fmt.Errorf("%w (audit.log could not record that nothing was written: %v)", err, aerr)
	}
	return err
}

// dropBackups removes the backups of writes that were not sent and never
// will be, and says what became of them (for an error's end).
func dropBackups(dir string, paths ...string) string {
	failed := 0
	for _, p := range paths {
		if p == "" {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			failed++
		}
	}
	if err := syncDir(dir); err != nil || failed > 0 {
		return "; its backups could not all be removed (they record writes that were not made, and are harmless)"
	}
	if len(paths) == 1 {
		return "; its backup was removed"
	}
	return "; its backups were removed"
}

// FenceError reports a write whose transaction's answer was lost and
// which was fenced off: Key was rewritten with its own bytes at Revision,
// so that the transaction can no longer apply; nothing was written. The
// fence is recorded in audit.log (Record.Fence), so that a restore run
// again takes it for what it is, not for a change by someone else.
type FenceError struct {
	Key      string
	Revision int64
	Err      error
}

func (e *FenceError) Error() string { return e.Err.Error() }

// Unwrap returns the error that says what was established.
func (e *FenceError) Unwrap() error { return e.Err }

// ErrNotRecorded means a write was made and audit.log could not take its
// outcome line (a full disk, an I/O error, a file-size limit); its intent
// line is there, and restore reads the backups themselves.
var ErrNotRecorded = errors.New("written, but audit.log could not record the outcome")

// NotRecordedError reports an Execute whose writes were made and some of
// whose outcome lines audit.log did not take. It matches ErrNotRecorded.
type NotRecordedError struct {
	Steps []Step
}

func (e *NotRecordedError) Error() string {
	var parts []string
	for _, s := range e.Steps {
		if s.Written() && s.Result.AuditErr != nil {
			parts = append(parts, fmt.Sprintf("%s was written (revision %s → %d; backup %s), but its outcome line could not be appended: %v", s.Plan.ObjectName(), revString(s.Plan.Expect), s.Result.Revision, s.Result.BackupPath, s.Result.AuditErr))
		}
	}
	return fmt.Sprintf("%v: %s; audit.log holds the intent of each, and restore reads their backups", ErrNotRecorded, strings.Join(parts, "; "))
}

// Is reports whether target is ErrNotRecorded.
func (e *NotRecordedError) Is(target error) bool { return target == ErrNotRecorded }
