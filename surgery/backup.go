package surgery

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

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

// AuditRecord is one line of audit.log: a write that succeeded, or one
// whose outcome is unknown.
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
	// Outcome is empty for a write that was made, OutcomeUncertain for one
	// whose outcome is unknown (ToRevision 0).
	Outcome string `json:"outcome,omitempty"`
}

// OutcomeUncertain is AuditRecord.Outcome for a write that was sent and
// may or may not have been applied.
const OutcomeUncertain = "uncertain"

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
