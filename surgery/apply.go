package surgery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// BackupKind and BackupVersion identify the backup file format.
const (
	BackupKind    = "etcdpvc-backup"
	BackupVersion = 1
)

// Backup is a backup file: the key as it was before a write, and digests of
// the value before and after.
type Backup struct {
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	// Key is the etcd key.
	Key string `json:"key"`
	// Endpoints are the etcd endpoints the write went to.
	Endpoints []string `json:"endpoints,omitempty"`
	// Absent is true when the key did not exist: the write created it.
	Absent bool `json:"absent,omitempty"`
	// ModRevision, CreateRevision, KeyVersion and Lease are the key's as
	// read before the write.
	ModRevision    int64 `json:"modRevision"`
	CreateRevision int64 `json:"createRevision"`
	KeyVersion     int64 `json:"keyVersion"`
	Lease          int64 `json:"lease"`
	// Value is the stored value before the write, byte for byte (ciphertext
	// when encrypted at rest); base64 in the file.
	Value []byte `json:"value"`
	// SHA256 is the hex sha256 of Value; NewSHA256 that of the value the
	// write stores.
	SHA256    string `json:"sha256"`
	NewSHA256 string `json:"newSha256"`
	// Timestamp is when the backup was taken (RFC 3339).
	Timestamp   string `json:"timestamp"`
	ToolVersion string `json:"toolVersion,omitempty"`
	// Operation describes the write.
	Operation string `json:"operation"`

	// Path is the file the backup was read from (not stored).
	Path string `json:"-"`
}

// AuditRecord is one line of audit.log: a write that succeeded.
type AuditRecord struct {
	Time string `json:"time"`
	Key  string `json:"key"`
	Op   string `json:"op"`
	// FromRevision is the mod revision the write replaced (0: created);
	// ToRevision the key's mod revision after it.
	FromRevision int64    `json:"fromRevision"`
	ToRevision   int64    `json:"toRevision"`
	Backup       string   `json:"backup"`
	SHA256       string   `json:"sha256"`
	NewSHA256    string   `json:"newSha256"`
	Endpoints    []string `json:"endpoints,omitempty"`
	ToolVersion  string   `json:"toolVersion,omitempty"`
}

// AuditLogName is the audit log's file name in the backup directory.
const AuditLogName = "audit.log"

// DefaultBackupDir returns $XDG_STATE_HOME/etcdpvc/backups, or
// ~/.local/state/etcdpvc/backups when XDG_STATE_HOME is unset or not an
// absolute path, or ./etcdpvc-backups when there is no home directory.
func DefaultBackupDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "etcdpvc", "backups")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".local", "state", "etcdpvc", "backups")
	}
	return "etcdpvc-backups"
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

// digest returns the hex sha256 of b.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sanitizeKey turns an etcd key into a file name fragment.
func sanitizeKey(key string) string {
	var sb strings.Builder
	for _, r := range strings.Trim(key, "/") {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	s := sb.String()
	const max = 160
	if len(s) > max {
		s = s[:max]
	}
	if s == "" {
		s = "key"
	}
	return s
}

// writeBackup writes b durably into dir and returns its path: a temporary
// file is written and fsynced, linked to its final name (never replacing
// a file) and removed, and the directory is fsynced.
func writeBackup(dir string, b *Backup, now time.Time) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("backup directory: %w", err)
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode backup: %w", err)
	}
	data = append(data, '\n')
	tmp, err := os.CreateTemp(dir, ".backup-*.tmp")
	if err != nil {
		return "", fmt.Errorf("create backup file: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("backup file mode: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write backup file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("sync backup file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("close backup file: %w", err)
	}
	base := fmt.Sprintf("%s-%s-r%d", now.Format("20060102T150405.000000000Z"), sanitizeKey(b.Key), b.ModRevision)
	var final string
	for i := 0; ; i++ {
		final = filepath.Join(dir, base+".json")
		if i > 0 {
			final = filepath.Join(dir, fmt.Sprintf("%s-%d.json", base, i))
		}
		err = os.Link(tmpName, final)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || i >= 100 {
			return "", fmt.Errorf("name backup file: %w", err)
		}
	}
	if err := syncDir(dir); err != nil {
		return "", err
	}
	return final, nil
}

// syncDir fsyncs a directory, making renames and links in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// appendAudit appends one JSON line to the audit log and fsyncs it.
func appendAudit(path string, rec AuditRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if os.IsNotExist(statErr) {
		return syncDir(filepath.Dir(path))
	}
	return nil
}

// ReadBackup reads a backup file and checks it: its kind and version, and
// the sha256 of the value it holds. Errors wrap ErrBadBackup.
func ReadBackup(path string) (*Backup, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read backup: %w", err)
	}
	b := &Backup{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(b); err != nil {
		return nil, fmt.Errorf("read backup %s: %w: %v", path, ErrBadBackup, err)
	}
	if b.Kind != BackupKind || b.Version != BackupVersion {
		return nil, fmt.Errorf("read backup %s: %w: kind %q version %d, want %q version %d", path, ErrBadBackup, b.Kind, b.Version, BackupKind, BackupVersion)
	}
	if b.Key == "" {
		return nil, fmt.Errorf("read backup %s: %w: no key", path, ErrBadBackup)
	}
	if got := digest(b.Value); got != b.SHA256 {
		return nil, fmt.Errorf("read backup %s: %w: value has sha256 %s, the file records %s", path, ErrBadBackup, got, b.SHA256)
	}
	if b.Absent && len(b.Value) != 0 {
		return nil, fmt.Errorf("read backup %s: %w: records an absent key with a value", path, ErrBadBackup)
	}
	b.Path = path
	return b, nil
}
