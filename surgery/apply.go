package surgery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/internal/durable"
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

// Apply makes a plan's write as a transaction of one (singleTxn) through
// the write step, writeTxn: members compared, backup, intent line, a
// compare-and-swap on p.Expect that keeps p.Lease (a compare-and-delete
// for a delete), a lost answer resolved, a majority checked, outcome line.
// A value larger than etcd accepts is refused (ErrTooLarge) before the
// backup. If the backup or the intent line cannot be written, or ctx is
// done before the transaction is sent, nothing is sent (and the backup is
// removed). If the key changed since the plan read it, nothing is written
// and the error is a *ConflictError (matching store.ErrConflict); its
// backup stays, harmless, with a not-written outcome line. An outcome that
// cannot be established is an *UncertainError (ErrUncertain). A write
// made whose outcome line audit.log did not take is reported in
// Result.AuditErr.
func Apply(ctx context.Context, w store.Writer, p *Plan, o ApplyOptions) (*Result, error) {
	if err := checkPlan(p, o); err != nil {
		return nil, err
	}
	t, err := singleTxn(w, p)
	if err != nil {
		return nil, err
	}
	out, err := writeTxn(ctx, w, t, o.withDefaults())
	if err != nil {
		return nil, err
	}
	return out[0], nil
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
	// transaction durable before it is sent (writeTxn). 0 writes one
	// compare-and-swap or compare-and-delete per plan.
	MaxTxnOps int
}

// Execute makes the writes of plans that belong together (one plan, a
// recipe's several, or a recovery's many), in order, each with its own
// backup and compare-and-swap, as Apply does, or with o.MaxTxnOps each run
// of creates or of deletes in transactions of several keys (writeTxn);
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
		if end, t := batchEnd(w, plans, i, o); t != nil && i >= single && end-i > 1 {
			results, err := writeTxn(ctx, w, t, o.ApplyOptions)
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
func batchEnd(w store.Writer, plans []*Plan, i int, o ExecuteOptions) (end int, t *txn) {
	isCreate := func(p *Plan) bool { return p != nil && !p.NoOp && !p.Delete && p.Expect == 0 }
	isDelete := func(p *Plan) bool { return p != nil && !p.NoOp && p.Delete && p.Expect != 0 }
	var same func(p *Plan) bool
	var size func(p *Plan) int
	var mk func(plans []*Plan) *txn
	bc, creates := w.(store.BatchCreator)
	bd, deletes := w.(store.BatchDeleter)
	switch {
	case o.MaxTxnOps <= 0:
		return i + 1, nil
	case creates && isCreate(plans[i]):
		same, mk = isCreate, func(plans []*Plan) *txn { return batchTxn(bc.CreateBatch, plans, true) }
		size = func(p *Plan) int { return store.CompareAndSwapSize(p.Key, p.NewStored) }
	case deletes && isDelete(plans[i]):
		same, mk = isDelete, func(plans []*Plan) *txn { return batchTxn(bd.DeleteBatch, plans, false) }
		size = func(p *Plan) int { return store.DeleteBatchSize([]store.KeyValue{{Key: p.Key}}) - 512 }
	default:
		return i + 1, nil
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
	t = mk(plans[i:end])
	t.maxOps = o.MaxTxnOps
	return end, t
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
	obj := p.object()
	if obj == nil || obj.Meta == nil || obj.GVK.Kind == "" || obj.Meta.Name == "" {
		return p.Key
	}
	name := strings.ToLower(obj.GVK.Kind) + " " + obj.Meta.Name
	if obj.Meta.Namespace != "" {
		name += " in namespace " + obj.Meta.Namespace
	}
	return name
}

// object is the plan's object as read, or as written when it was absent;
// nil when neither decodes.
func (p *Plan) object() *codec.Object {
	if p.Before != nil && p.Before.Obj != nil {
		return p.Before.Obj
	}
	if obj, err := codec.Decode(p.NewPlain); err == nil {
		return obj
	}
	return nil
}

// dropBackups removes the backups of writes that were not sent and never
// will be, and says what became of them (for an error's end).
func dropBackups(dir string, paths ...string) string {
	failed, removed := 0, 0
	for _, p := range paths {
		if p == "" {
			continue
		}
		removed++
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			failed++
		}
	}
	switch err := durable.SyncDir(dir); {
	case removed == 0:
		return ""
	case err != nil || failed > 0:
		return "; its backups could not all be removed (they record writes that were not made, and are harmless)"
	case removed == 1:
		return "; its backup was removed"
	}
	return "; its backups were removed"
}

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
