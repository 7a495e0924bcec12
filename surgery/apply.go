package surgery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

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
	// Now returns the time recorded (default time.Now).
	Now func() time.Time
	// AfterBackup, when set, is called after the backup is durable and
	// before the transaction. It is a test hook.
	AfterBackup func()
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
	// (the audit log could not be appended to, the outcome had to be
	// confirmed by a re-read).
	Warnings []string
}

// Apply makes a plan's write: it writes the backup (durably, before
// anything else), then writes p.NewStored with a compare-and-swap on
// p.Expect that keeps p.Lease, then appends to the audit log. If the
// backup cannot be written, nothing is written. If the key changed since
// the plan read it, nothing is written and the error is a *ConflictError
// (matching store.ErrConflict). A backup left by a write that did not
// happen is harmless.
func Apply(ctx context.Context, w store.Writer, p *Plan, o ApplyOptions) (*Result, error) {
	if p == nil || p.NoOp {
		return nil, fmt.Errorf("apply: %w", ErrNoOp)
	}
	if p.Expect != 0 && (p.Before == nil || p.Before.KV.ModRevision != p.Expect) {
		return nil, fmt.Errorf("apply %s: plan expects revision %d but holds no value read at it", p.Key, p.Expect)
	}
	if o.BackupDir == "" {
		o.BackupDir = DefaultBackupDir()
	}
	if abs, err := filepath.Abs(o.BackupDir); err == nil {
		o.BackupDir = abs
	}
	if p.Delete {
		return applyDelete(ctx, w, p, o)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	now := o.Now().UTC()
	b := &Backup{
		Kind:        BackupKind,
		Version:     BackupVersion,
		Key:         p.Key,
		Endpoints:   o.Endpoints,
		Absent:      p.Expect == 0,
		NewSHA256:   digest(p.NewStored),
		Timestamp:   now.Format(time.RFC3339Nano),
		ToolVersion: o.ToolVersion,
		Operation:   p.Description,
		Source:      o.Source,
	}
	if p.Expect != 0 {
		kv := p.Before.KV
		b.ModRevision, b.CreateRevision, b.KeyVersion, b.Lease = kv.ModRevision, kv.CreateRevision, kv.Version, kv.Lease
		b.Value = kv.Value
	}
	b.SHA256 = digest(b.Value)
	path, err := writeBackup(o.BackupDir, b, now)
	if err != nil {
		return nil, fmt.Errorf("apply %s: back up before writing: %w; nothing written", p.Key, err)
	}
	if o.AfterBackup != nil {
		o.AfterBackup()
	}

	res := &Result{BackupPath: path}
	rev, err := w.CompareAndSwap(ctx, p.Key, p.Expect, p.NewStored, p.Lease)
	if err != nil {
		var ce *store.ConflictError
		switch {
		case errors.As(err, &ce):
			return nil, &ConflictError{Key: p.Key, Read: p.Expect, Current: ce.Current, Cause: ce}
		case errors.Is(err, store.ErrLeaseNotFound):
			return nil, fmt.Errorf("write %s: %w; nothing written", p.Key, err)
		}
		var warnings []string
		rev, warnings, err = resolve(ctx, w, p, err)
		if err != nil {
			return nil, err
		}
		res.Warnings = append(res.Warnings, warnings...)
	}
	res.Revision = rev

	rec := AuditRecord{
		Time:         now.Format(time.RFC3339Nano),
		Key:          p.Key,
		Op:           p.Description,
		FromRevision: p.Expect,
		ToRevision:   rev,
		Backup:       path,
		SHA256:       b.SHA256,
		NewSHA256:    b.NewSHA256,
		Endpoints:    o.Endpoints,
		ToolVersion:  o.ToolVersion,
	}
	logPath := filepath.Join(o.BackupDir, AuditLogName)
	if err := appendAudit(logPath, rec); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the write succeeded but the audit log could not be appended to: %v", err))
	} else {
		res.AuditLog = logPath
	}
	return res, nil
}

// Bounds of resolve: how long it tries, and how many transactions it
// retries.
const (
	resolveTimeout = 30 * time.Second
	resolveRetries = 3
)

// resolve finds out, after a transaction failed without an answer (a
// timeout, a leader lost, a connection reset), whether it was applied, and
// makes it if it was not. It reads the key again with a linearizable read:
//
//   - still as the plan read it: nothing was written; unless ctx is done
//     (the caller gave up), the same compare-and-swap is sent again, which
//     is safe: had the first attempt landed meanwhile, the retry would fail
//     its comparison;
//   - holding the new value: the write was made;
//   - holding another value: the key's history since the plan's revision
//     says whether the write was made and then overwritten, or never made
//     (a conflict).
//
// It returns the write's revision and warnings, or an error that says
// whether anything was written (ErrUncertain when it cannot tell).
func resolve(ctx context.Context, w store.Writer, p *Plan, txnErr error) (int64, []string, error) {
	uncertain := func(err error) error {
		return fmt.Errorf("write %s: %w: %w; checking the key failed too (%v): check whether it is still at revision %d", p.Key, ErrUncertain, txnErr, err, p.Expect)
	}
	rd, ok := w.(store.Reader)
	if !ok {
		return 0, nil, fmt.Errorf("write %s: %w: %w", p.Key, ErrUncertain, txnErr)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	pause := func() bool {
		select {
		case <-rctx.Done():
			return false
		case <-time.After(250 * time.Millisecond):
			return true
		}
	}
	lastErr := txnErr
	for attempt := 0; ; attempt++ {
		kv, err := rd.Get(rctx, p.Key, 0)
		absent := errors.Is(err, store.ErrNotFound)
		switch {
		case err != nil && !absent:
			if !pause() {
				return 0, nil, uncertain(err)
			}
			continue
		case !absent && bytes.Equal(kv.Value, p.NewStored) && kv.ModRevision != p.Expect:
			return kv.ModRevision, []string{fmt.Sprintf("the transaction failed (%v), but a re-read shows the new value at revision %d: the write was made", lastErr, kv.ModRevision)}, nil
		case (absent && p.Expect == 0) || (!absent && kv.ModRevision == p.Expect):
			// Not written: retry below.
		default:
			current := int64(0)
			if !absent {
				current = kv.ModRevision
			}
			made, err := writtenSince(rctx, rd, p)
			switch {
			case err != nil:
				return 0, nil, uncertain(err)
			case made != 0:
				return made, []string{fmt.Sprintf("the transaction failed (%v), but the key's history shows the new value written at revision %d; the key has changed since (now %s)", lastErr, made, revString(current))}, nil
			}
			ce := &store.ConflictError{Key: p.Key, Expected: p.Expect, Current: current, CurrentValue: kv}
			return 0, nil, &ConflictError{Key: p.Key, Read: p.Expect, Current: current, Cause: ce}
		}
		if ctx.Err() != nil {
			// The caller gave up: report, never write on its behalf.
			return 0, nil, fmt.Errorf("write %s: %w; a re-read shows the key still at %s, unchanged: nothing written", p.Key, lastErr, revString(p.Expect))
		}
		if attempt >= resolveRetries {
			return 0, nil, fmt.Errorf("write %s: %w; re-reads show the key still at %s, unchanged: nothing written", p.Key, lastErr, revString(p.Expect))
		}
		rev, err := w.CompareAndSwap(rctx, p.Key, p.Expect, p.NewStored, p.Lease)
		var ce *store.ConflictError
		switch {
		case err == nil:
			return rev, []string{fmt.Sprintf("the transaction failed (%v) without writing; it was sent again and succeeded", txnErr)}, nil
		case errors.As(err, &ce):
			// Loop: the re-read sorts out whether an earlier attempt
			// landed.
		case errors.Is(err, store.ErrLeaseNotFound):
			return 0, nil, fmt.Errorf("write %s: %w; nothing written", p.Key, err)
		default:
			lastErr = err
			if !pause() {
				return 0, nil, uncertain(err)
			}
		}
	}
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
		return 0, fmt.Errorf("history compacted past revision %d", p.Expect)
	}
	return made, nil
}
