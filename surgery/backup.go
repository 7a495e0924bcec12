package surgery

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/internal/durable"
	"github.com/etcdpvc/etcdpvc/internal/newfile"
	"github.com/etcdpvc/etcdpvc/internal/regular"
)

// BackupKind and BackupVersion identify the backup file format. Version 2
// added Source and Digest, version 3 OperationID (covered by the digest);
// backups of versions 1 and 2 are still read.
const (
	BackupKind    = "etcdpvc-backup"
	BackupVersion = 3
)

// Source says which etcd cluster a backup was taken from and how to reach
// it again: the connection settings that are not secret (never a
// password). Paths are absolute.
type Source struct {
	// ClusterID is etcd's cluster ID in hex, as etcdctl prints it; empty
	// when the store has none (a db file).
	ClusterID string `json:"clusterID,omitempty"`
	// Endpoints, CACert, Cert and Key are the connection used.
	Endpoints []string `json:"endpoints,omitempty"`
	CACert    string   `json:"cacert,omitempty"`
	Cert      string   `json:"cert,omitempty"`
	Key       string   `json:"key,omitempty"`
	// Prefix is the apiserver's --etcd-prefix in use.
	Prefix string `json:"prefix,omitempty"`
	// Kubeadm and ManifestsDir say the settings came from the
	// kube-apiserver manifest (--kubeadm, --manifests-dir).
	Kubeadm      bool   `json:"kubeadm,omitempty"`
	ManifestsDir string `json:"manifestsDir,omitempty"`
	// EncryptionConfig is the EncryptionConfiguration file in use.
	EncryptionConfig string `json:"encryptionConfig,omitempty"`
	// KubeSystemUID is the uid of the kube-system namespace, recorded
	// when the store has no cluster ID (kine): restore compares it with
	// the one it reads. Empty otherwise.
	KubeSystemUID string `json:"kubeSystemUID,omitempty"`
}

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
	// Source is the cluster the backup was taken from (version 2).
	Source *Source `json:"source,omitempty"`
	// Digest is the hex sha256 over the key, Absent, the revisions, the
	// lease, both value digests and the cluster ID (version 2), and the
	// operation id (version 3): a backup whose key or lease was edited is
	// refused.
	Digest string `json:"digest,omitempty"`
	// OperationID is the operation the write belongs to: every key one
	// command run writes shares it (version 3).
	OperationID string `json:"operationID,omitempty"`

	// Path is the file the backup was read from, absolute (not stored).
	Path string `json:"-"`
	// Warnings are what a reader should know about the backup itself (an
	// old format), found by ReadBackup (not stored).
	Warnings []string `json:"-"`
	// outcomeUnknown: audit.log records no outcome of the write
	// (OperationBackups): whether it was made is the key's to tell.
	outcomeUnknown bool
	// log is the audit log beside the backup as OperationBackups read it
	// (shared by the operation's backups); nil: read it when needed.
	log []Record
}

// loadAuditLog reads the audit log beside b once. One that exists and
// cannot be read is an error: what it records of b's write (its outcome
// unknown, a fence) decides what a restore of b may write.
func (b *Backup) loadAuditLog() error {
	if b.log != nil || b.Path == "" {
		return nil
	}
	recs, _, err := ReadAuditLog(filepath.Dir(b.Path))
	if err != nil {
		return err
	}
	b.log = recs
	return nil
}

// auditLog returns the records of the audit log beside b, as loadAuditLog
// read them (PlanRestore reads it first; nil when there is none).
func (b *Backup) auditLog() []Record {
	return b.log
}

// ClusterID returns the cluster ID the backup records, or "".
func (b *Backup) ClusterID() string {
	if b.Source == nil {
		return ""
	}
	return b.Source.ClusterID
}

// KubeSystemUID returns the kube-system namespace uid the backup records,
// or "".
func (b *Backup) KubeSystemUID() string {
	if b.Source == nil {
		return ""
	}
	return b.Source.KubeSystemUID
}

// FormatClusterID formats an etcd cluster ID as etcdctl prints it.
func FormatClusterID(id uint64) string {
	if id == 0 {
		return ""
	}
	return fmt.Sprintf("%x", id)
}

// backupDigest returns the digest a version-2 backup records: the sha256 of
// a fixed JSON encoding of what says which key, which revision and which
// cluster the backup is of.
func backupDigest(b *Backup) string {
	covered := struct {
		Key            string `json:"key"`
		Absent         bool   `json:"absent"`
		ModRevision    int64  `json:"modRevision"`
		CreateRevision int64  `json:"createRevision"`
		KeyVersion     int64  `json:"keyVersion"`
		Lease          int64  `json:"lease"`
		SHA256         string `json:"sha256"`
		NewSHA256      string `json:"newSha256"`
		ClusterID      string `json:"clusterID"`
		// Omitted when empty, so that the digests of backups taken
		// before it was recorded stay the same.
		KubeSystemUID string `json:"kubeSystemUID,omitempty"`
	}{b.Key, b.Absent, b.ModRevision, b.CreateRevision, b.KeyVersion, b.Lease, b.SHA256, b.NewSHA256, b.ClusterID(), b.KubeSystemUID()}
	data, _ := json.Marshal(covered) // strings, bools and integers: cannot fail
	if b.Version >= 3 {
		// The operation id is appended after the version-2 fields.
		op, _ := json.Marshal(b.OperationID)
		return digest(append(append(append([]byte(BackupKind+"/v3\n"), data...), '\n'), op...))
	}
	return digest(append([]byte(BackupKind+"/v2\n"), data...))
}

// AuditLogName is the audit log's file name in the backup directory.
const AuditLogName = "audit.log"

// maxBackupSize bounds a backup file read: etcd's largest value (1.5 MiB
// by default, configurable) base64-encoded, with room to spare.
const maxBackupSize = 64 << 20

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
	if abs, err := filepath.Abs("etcdpvc-backups"); err == nil {
		return abs
	}
	return "etcdpvc-backups"
}

// CheckBackupDir returns warnings about a backup directory that others
// could tamper with: one writable by its group or by everyone, or not
// owned by the current user. A directory that does not exist yet gives
// none (it is created with mode 0700).
func CheckBackupDir(dir string) []string {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil
	}
	var out []string
	if fi.Mode().Perm()&0o022 != 0 {
		out = append(out, fmt.Sprintf("the backup directory %s is writable by its group or by everyone (mode %04o): others could replace backups or audit.log; chmod 700 it", dir, fi.Mode().Perm()))
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		out = append(out, fmt.Sprintf("the backup directory %s is owned by uid %d, not by you (uid %d): its owner could replace backups or audit.log", dir, uid, os.Getuid()))
	}
	return out
}

// ErrBackupDirUnwritable means the backup directory cannot be made or
// written (a read-only file system, a user without a home directory):
// no write is made without a backup.
var ErrBackupDirUnwritable = errors.New("not writable")

// ProbeBackupDir checks that the backup directory dir can be written,
// or, when it does not exist yet, made, so that a write is refused before
// anything is sent, and before its confirmation, rather than when its
// backup is due. It makes nothing that stays: a file is created and
// removed in dir, or in the nearest directory above it that exists (the
// backup write makes dir itself).
func ProbeBackupDir(dir string) error {
	probe := filepath.Clean(dir)
	for {
		fi, err := os.Stat(probe)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("backup directory %s: %w: %s is not a directory", dir, ErrBackupDirUnwritable, probe)
			}
			break
		}
		if !os.IsNotExist(err) {
			return fmt.Errorf("backup directory %s: %w: %w", dir, ErrBackupDirUnwritable, err)
		}
		up := filepath.Dir(probe)
		if up == probe {
			return fmt.Errorf("backup directory %s: %w: %w", dir, ErrBackupDirUnwritable, err)
		}
		probe = up
	}
	f, err := os.CreateTemp(probe, ".etcdpvc-probe-*.tmp")
	if err != nil {
		return fmt.Errorf("backup directory %s: %w: %w", dir, ErrBackupDirUnwritable, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// ErrUnsafeBackupDir means the backup directory holds a symbolic link
// where etcdpvc writes (audit.log): writing would follow it elsewhere.
var ErrUnsafeBackupDir = errors.New("unsafe backup directory")

// checkAuditLog refuses an audit log that is a symbolic link, planted to
// make the next append write elsewhere.
func checkAuditLog(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symbolic link; etcdpvc never writes through one (remove it, or use another --backup-dir)", ErrUnsafeBackupDir, path)
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file", ErrUnsafeBackupDir, path)
	}
	return nil
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

// writeBackupFile writes b into dir and returns its path: a temporary
// file is written and fsynced, linked to its final name (never replacing
// a file) and removed. The caller fsyncs the directory once after writing
// several backups, and before relying on any of them (writeBackups).
//
// The directory is made absolute first, so the path returned is absolute.
// A version-2 backup gets its Digest. An audit.log in dir that is a
// symbolic link is refused before anything is written.
func writeBackupFile(dir string, b *Backup, now time.Time) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("backup directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("backup directory: %w", err)
	}
	if err := checkAuditLog(filepath.Join(dir, AuditLogName)); err != nil {
		return "", fmt.Errorf("backup directory: %w", err)
	}
	if b.Version >= 2 {
		b.Digest = backupDigest(b)
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode backup: %w", err)
	}
	data = append(data, '\n')
	fill := func(tmp string) error { return os.WriteFile(tmp, data, 0o600) }
	base := fmt.Sprintf("%s-%s-r%d", now.Format("20060102T150405.000000000Z"), sanitizeKey(b.Key), b.ModRevision)
	var final string
	for i := 0; ; i++ {
		final = filepath.Join(dir, base+".json")
		if i > 0 {
			final = filepath.Join(dir, fmt.Sprintf("%s-%d.json", base, i))
		}
		err = newfile.Add(final, fill)
		if err == nil {
			break
		}
		if !errors.Is(err, newfile.ErrExists) || i >= 100 {
			return "", fmt.Errorf("write backup file: %w", err)
		}
	}
	return final, nil
}

// appendAudits appends one JSON line per record to the audit log, with one
// write and one fsync. A last line left torn by an append that failed part
// way (a full disk, a file-size limit) is ended first, so that it stays a
// line of its own that readers skip and the new lines read whole.
func appendAudits(path string, recs []AuditRecord) error {
	var line []byte
	for _, rec := range recs {
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		line = append(append(line, b...), '\n')
	}
	_, statErr := os.Lstat(path)
	f, err := regular.OpenAppend(path)
	switch {
	case errors.Is(err, regular.ErrSymlink):
		return fmt.Errorf("%w: %s is a symbolic link; etcdpvc never writes through one", ErrUnsafeBackupDir, path)
	case errors.Is(err, regular.ErrNotRegular):
		return fmt.Errorf("%w: %w", ErrUnsafeBackupDir, err)
	case err != nil:
		return err
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return err
	} else if size := fi.Size(); size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			f.Close()
			return err
		}
		if last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
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
		return durable.SyncDir(filepath.Dir(path))
	}
	return nil
}

// ReadBackup reads a backup file and checks it: its kind and version, the
// sha256 of the value it holds and, from version 2, the digest over its
// key, revisions, lease and cluster. A version-1 backup is read with a
// warning (in Warnings) that its key is not covered. A symbolic link is
// not followed. Errors wrap ErrBadBackup.
func ReadBackup(path string) (*Backup, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	f, err := regular.OpenNoFollow(path)
	switch {
	case errors.Is(err, regular.ErrSymlink):
		return nil, fmt.Errorf("read backup %s: it is a symbolic link; give the file it points to", path)
	case errors.Is(err, regular.ErrNotRegular):
		return nil, fmt.Errorf("read backup: %w: %w", ErrBadBackup, err)
	case err != nil:
		return nil, fmt.Errorf("read backup: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBackupSize+1))
	if err != nil {
		return nil, fmt.Errorf("read backup: %w", err)
	}
	if len(data) > maxBackupSize {
		return nil, fmt.Errorf("read backup %s: %w: larger than %d bytes", path, ErrBadBackup, maxBackupSize)
	}
	b := &Backup{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(b); err != nil {
		return nil, fmt.Errorf("read backup %s: %w: %v", path, ErrBadBackup, err)
	}
	if b.Kind != BackupKind || b.Version < 1 || b.Version > BackupVersion {
		return nil, fmt.Errorf("read backup %s: %w: kind %q version %d, want %q version 1 to %d", path, ErrBadBackup, b.Kind, b.Version, BackupKind, BackupVersion)
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
	switch {
	case b.Version < 3 && b.OperationID != "":
		return nil, fmt.Errorf("read backup %s: %w: version %d with a version-3 field", path, ErrBadBackup, b.Version)
	case b.Version == 1:
		if b.Source != nil || b.Digest != "" {
			return nil, fmt.Errorf("read backup %s: %w: version 1 with version-2 fields", path, ErrBadBackup)
		}
		b.Warnings = append(b.Warnings, fmt.Sprintf("%s is a version-1 backup: its key, revisions and lease are not covered by a digest and it does not record its cluster; check that key %s and the cluster are the ones you mean", filepath.Base(path), b.Key))
	case b.Digest == "":
		return nil, fmt.Errorf("read backup %s: %w: no digest", path, ErrBadBackup)
	case backupDigest(b) != b.Digest:
		return nil, fmt.Errorf("read backup %s: %w: its key, revisions, lease, cluster ID or operation id were changed after it was written (the digest does not match)", path, ErrBadBackup)
	}
	b.Path = path
	return b, nil
}
