package surgery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

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
}

// SetWritten is what WriteRecoverSet did with one item.
type SetWritten struct {
	Item       *SetItem
	Revision   int64
	BackupPath string
}

// RecoverSetResult reports WriteRecoverSet.
type RecoverSetResult struct {
	// Written are the items written, in order.
	Written []SetWritten
	// BackupDir is where the backups and audit.log are.
	BackupDir string
	// Warnings are problems that did not stop the writes.
	Warnings []string
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

// WriteRecoverSet writes a RecoverSet plan: the creates in plan order, in
// transactions of at most o.MaxTxnOps keys and etcd's request size, each
// all or nothing (store.BatchCreator; one create-only compare-and-swap per
// key on a store that cannot), each batch's backups (recording the absent
// keys, so that restore deletes what was created) written durably before
// the batch; then each replace with its own compare-and-swap and backup,
// as Apply does. It stops at the first failure: the error is the failure's
// when nothing was written, else a *SetPartialError (ErrPartial). A
// second run of the same plan resumes: what was created exists identical.
func WriteRecoverSet(ctx context.Context, w store.Writer, plan *SetPlan, o RecoverSetWriteOptions) (*RecoverSetResult, error) {
	if o.BackupDir == "" {
		o.BackupDir = DefaultBackupDir()
	}
	if abs, err := filepath.Abs(o.BackupDir); err == nil {
		o.BackupDir = abs
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	maxOps := o.MaxTxnOps
	if maxOps <= 0 {
		maxOps = store.MaxTxnOps
	}
	limit := o.MaxRequestBytes
	if limit <= 0 {
		limit = store.MaxRequestBytes
	}
	var creates, replaces []*SetItem
	for _, it := range plan.Items {
		switch it.Action {
		case ActionCreate:
			creates = append(creates, it)
		case ActionReplace:
			replaces = append(replaces, it)
		}
	}
	total := len(creates) + len(replaces)
	for _, it := range append(append([]*SetItem(nil), creates...), replaces...) {
		if err := checkPlan(it.Plan, o.ApplyOptions); err != nil {
			return nil, err
		}
	}
	res := &RecoverSetResult{BackupDir: o.BackupDir}
	fail := func(items []*SetItem, err error) (*RecoverSetResult, error) {
		if len(res.Written) == 0 {
			return res, err
		}
		var names []string
		for _, it := range items {
			names = append(names, it.Plan.ObjectName())
		}
		return res, &SetPartialError{Written: len(res.Written), Total: total, Failed: names, Cause: err}
	}
	bc, batched := w.(store.BatchCreator)
	for start := 0; start < len(creates); {
		end := start
		size := 512
		for end < len(creates) && end-start < maxOps {
			n := store.CompareAndSwapSize(creates[end].Key, creates[end].Plan.NewStored)
			if end > start && size+n > limit {
				break
			}
			size += n
			end++
		}
		batch := creates[start:end]
		start = end
		// oneByOne writes the batch one compare-and-swap per key: on a
		// store that cannot batch, or keys kept in several etcds.
		oneByOne := func() (failed *SetItem, err error) {
			for _, it := range batch {
				r, err := Apply(ctx, w, it.Plan, o.ApplyOptions)
				if err != nil {
					return it, err
				}
				res.Warnings = append(res.Warnings, r.Warnings...)
				res.record(o, it, r.Revision, r.BackupPath)
			}
			return nil, nil
		}
		if !batched {
			if it, err := oneByOne(); err != nil {
				return fail([]*SetItem{it}, err)
			}
			continue
		}
		ws, err := writeBatch(ctx, w, bc, batch, o.ApplyOptions)
		if errors.Is(err, store.ErrCrossStore) {
			// Not one store: one transaction per key (the backups
			// written for the batch are harmless: nothing was written).
			if it, err := oneByOne(); err != nil {
				return fail([]*SetItem{it}, err)
			}
			continue
		}
		if err != nil {
			return fail(batch, err)
		}
		for _, sw := range ws {
			res.record(o, sw.Item, sw.Revision, sw.BackupPath)
		}
	}
	for _, it := range replaces {
		r, err := Apply(ctx, w, it.Plan, o.ApplyOptions)
		if err != nil {
			return fail([]*SetItem{it}, err)
		}
		res.Warnings = append(res.Warnings, r.Warnings...)
		res.record(o, it, r.Revision, r.BackupPath)
	}
	return res, nil
}

func (r *RecoverSetResult) record(o RecoverSetWriteOptions, it *SetItem, rev int64, backup string) {
	r.Written = append(r.Written, SetWritten{Item: it, Revision: rev, BackupPath: backup})
	if o.OnWritten != nil {
		o.OnWritten(it)
	}
}

// backupWriters is how many backup files of a batch are written and
// fsynced at once: the file system commits concurrent fsyncs together.
const backupWriters = 16

// writeBatch writes the backups of a batch of creates (each file fsynced,
// several at once, then the directory once), then creates them in one
// transaction, then appends them to the audit log with one fsync.
func writeBatch(ctx context.Context, w store.Writer, bc store.BatchCreator, batch []*SetItem, o ApplyOptions) ([]SetWritten, error) {
	now := o.Now().UTC()
	out := make([]SetWritten, len(batch))
	kvs := make([]store.KeyValue, len(batch))
	errs := make([]error, len(batch))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(backupWriters, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := batch[i].Plan
				b := &Backup{
					Kind: BackupKind, Version: BackupVersion, Key: p.Key, Endpoints: o.Endpoints, Absent: true,
					NewSHA256: digest(p.NewStored), SHA256: digest(nil), Timestamp: now.Format(time.RFC3339Nano),
					ToolVersion: o.ToolVersion, Operation: p.Description, Source: o.Source,
				}
				out[i].BackupPath, errs[i] = writeBackupFile(o.BackupDir, b, now)
			}
		}()
	}
	for i := range batch {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, it := range batch {
		if errs[i] != nil {
			return nil, fmt.Errorf("write %s: back up before writing: %w; this batch of %d was not written", it.Plan.ObjectName(), errs[i], len(batch))
		}
		out[i].Item = it
		kvs[i] = store.KeyValue{Key: it.Plan.Key, Value: it.Plan.NewStored}
	}
	if err := syncDir(o.BackupDir); err != nil {
		return nil, fmt.Errorf("create %d objects: back up before writing: %w; this batch was not written", len(batch), err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("create %d objects: %w before the transaction was sent; this batch was not written", len(batch), err)
	}
	logPath := filepath.Join(o.BackupDir, AuditLogName)
	audit := func(rev int64, outcome string) error {
		recs := make([]AuditRecord, len(batch))
		for i, it := range batch {
			recs[i] = AuditRecord{Time: now.Format(time.RFC3339Nano), Key: it.Key, Op: it.Plan.Description, ToRevision: rev,
				Backup: out[i].BackupPath, SHA256: digest(nil), NewSHA256: digest(it.Plan.NewStored),
				Endpoints: o.Endpoints, ToolVersion: o.ToolVersion, Outcome: outcome}
		}
		return appendAudits(logPath, recs)
	}
	rev, err := bc.CreateBatch(ctx, kvs)
	if err != nil {
		var ce *store.BatchConflictError
		switch {
		case errors.As(err, &ce), errors.Is(err, store.ErrCrossStore):
			return nil, fmt.Errorf("%w; nothing of this transaction was written", err)
		case errors.Is(err, store.ErrTooLarge):
			return nil, fmt.Errorf("create %d objects: %w: %w; nothing of this transaction was written", len(batch), ErrTooLarge, err)
		}
		rev, err = resolveBatch(ctx, w, bc, kvs, err)
		if err != nil {
			if errors.Is(err, ErrUncertain) {
				if aerr := audit(0, OutcomeUncertain); aerr != nil {
					err = fmt.Errorf("%w (the audit log could not record it: %v)", err, aerr)
				}
			}
			return nil, err
		}
	}
	for i := range out {
		out[i].Revision = rev
	}
	_ = audit(rev, "") // the writes are made; a failing audit log is not a failed write
	return out, nil
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
			time.Sleep(resolvePause)
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
