package surgery

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/internal/regular"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
)

// RecordSchema identifies a write record of version 1: a line of
// audit.log, and an item of a write command's -o json|yaml result
// (RecordList). docs/write-records.md documents it.
const RecordSchema = "etcdpvc.io/write-record/v1"

// RecordListAPIVersion and RecordListKind identify the document a write
// command prints with -o json|yaml.
const (
	RecordListAPIVersion = "etcdpvc.io/v1"
	RecordListKind       = "WriteRecordList"
)

// Findings of the apiserver's check after a write
// (Record.VerificationOutcome).
const (
	// VerificationVerified: the apiserver reads the object as written.
	VerificationVerified = "verified"
	// VerificationNotVerified: the check could not be made or did not
	// establish it; Verification says why when it is known.
	VerificationNotVerified = "not-verified"
	// VerificationNotAccepted: the apiserver does not accept the object
	// written.
	VerificationNotAccepted = "not-accepted"
	// VerificationWithGroup: one of several deletes of values the
	// apiserver could not read in one resource and namespace, checked by
	// one LIST after the last of them.
	VerificationWithGroup = "checked-with-group"
)

// Outcomes of a Record: what became of one key of a write.
const (
	// OutcomeWritten: the write was made (ToRevision is its revision).
	OutcomeWritten = "written"
	// OutcomeNothingToDo: the key is already as asked; nothing written.
	OutcomeNothingToDo = "nothing-to-do"
	// OutcomeRefused: refused as unsafe, not confirmed, or not accepted
	// by the apiserver's check before the write; nothing written.
	OutcomeRefused = "refused"
	// OutcomeConflict: the key changed since it was read; nothing
	// written.
	OutcomeConflict = "conflict"
	// OutcomeUncertain: the write was sent and may or may not have been
	// applied (the audit log's "uncertain").
	OutcomeUncertain = "uncertain"
	// OutcomeIntent: in audit.log only, the write is about to be sent; a
	// later line of the same backup says its outcome. Alone, the run
	// stopped before recording it (killed, or audit.log could not take
	// the line): the key's state tells whether the write was made.
	OutcomeIntent = "intent"
	// OutcomeNotWritten: not written for another reason (not attempted
	// after an earlier key failed, or an error; Reason says).
	OutcomeNotWritten = "not-written"
	// OutcomeDryRun: planned by --dry-run; nothing written.
	OutcomeDryRun = "dry-run"
)

// Record is what one write did to one key: a line of audit.log (a write
// made, or one whose outcome is unknown), and an item of a write command's
// result. Every key of one command run shares its OperationID. It never
// holds a value, only digests; Op (the description) never quotes a
// Secret's value.
//
// Lines of audit.log written before version 1 have no Schema, no
// OperationID and no identity fields, and an empty Outcome for a write
// made; ReadAuditLog reads them too (Outcome then "written").
type Record struct {
	// Schema is RecordSchema ("" in a line of an earlier format).
	Schema string `json:"schema,omitempty"`
	// OperationID is shared by every key one command run writes.
	OperationID string `json:"operationID,omitempty"`
	Time        string `json:"time,omitempty"`
	// Key is the etcd key; Resource (group/resource as kubectl names it:
	// "persistentvolumeclaims", "statefulsets.apps"), Namespace and Name
	// name its object when they are known.
	Key       string `json:"key"`
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Op describes the write.
	Op string `json:"op,omitempty"`
	// Outcome is one of the Outcome* constants; Reason says why for any
	// outcome but written.
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Deleted: the write deleted the key (a delete, or a restore of a
	// create).
	Deleted bool `json:"deleted,omitempty"`
	// FromRevision is the mod revision the write replaced (0: the key was
	// absent); ToRevision the revision of the write (0: none made).
	FromRevision int64 `json:"fromRevision"`
	ToRevision   int64 `json:"toRevision"`
	// Backup is the backup taken before the write; Restore the command
	// that undoes this key's write.
	Backup  string `json:"backup,omitempty"`
	Restore string `json:"restore,omitempty"`
	// SHA256 and NewSHA256 are the digests of the value before and after.
	SHA256    string `json:"sha256,omitempty"`
	NewSHA256 string `json:"newSha256,omitempty"`
	// VerificationOutcome is what the apiserver's check after the write
	// found, one of the Verification* constants, and Verification says it
	// in words, with why a write is not verified or not accepted. Both are
	// in a result only, not in audit.log: the check comes after the line
	// is written.
	VerificationOutcome string   `json:"verificationOutcome,omitempty"`
	Verification        string   `json:"verification,omitempty"`
	Endpoints           []string `json:"endpoints,omitempty"`
	ToolVersion         string   `json:"toolVersion,omitempty"`
	// Resolution says how a transaction whose answer was lost was
	// resolved: what the re-reads showed, and each fence, with revisions.
	Resolution []string `json:"resolution,omitempty"`
	// Fence is the revision at which etcdpvc rewrote the key with its own
	// bytes so that a transaction whose answer was lost can no longer
	// apply (a not-written outcome); 0: none.
	Fence int64 `json:"fence,omitempty"`
	// Settles is the backup of a write of unknown outcome that this write,
	// a fence by restore, made unable to apply: the key rewritten with
	// its own bytes, at a new revision.
	Settles string `json:"settles,omitempty"`
}

// AuditRecord is a line of audit.log: a Record.
type AuditRecord = Record

// RecordList is the document a write command prints with -o json|yaml:
// one Record per key it planned, in the order written.
type RecordList struct {
	APIVersion  string   `json:"apiVersion"`
	Kind        string   `json:"kind"`
	OperationID string   `json:"operationID,omitempty"`
	Items       []Record `json:"items"`
	// Restore undoes the whole operation (one key: restore BACKUP;
	// several: restore --operation ID --backup-dir DIR); "" when nothing
	// was written.
	Restore string `json:"restore,omitempty"`
	// Error is the command's error, when it failed.
	Error string `json:"error,omitempty"`
}

// NewOperationID returns a new operation id: the time and 8 random hex
// digits ("20261203T003510Z-1f2e3d4c").
func NewOperationID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

var operationIDPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$`)

// ErrBadOperationID means an operation id is not one NewOperationID makes.
var ErrBadOperationID = errors.New("not an operation id")

// CheckOperationID refuses an id NewOperationID would not make.
func CheckOperationID(id string) error {
	if !operationIDPattern.MatchString(id) {
		return fmt.Errorf("%q: %w (YYYYMMDDThhmmssZ-xxxxxxxx, as a write prints it)", id, ErrBadOperationID)
	}
	return nil
}

// identify fills in the record's Resource, Namespace and Name from the key
// under prefix ("": kubevalue.DefaultPrefix), or from the plan's object.
func (r *Record) identify(p *Plan, prefix string) {
	if prefix == "" {
		prefix = kubevalue.DefaultPrefix
	}
	if !p.GR.Empty() {
		r.Resource = p.GR.String()
	}
	if res, ns, name, ok := resource.ParseKey(prefix, p.Key); ok && name != "" {
		if r.Resource == "" {
			r.Resource = res.GroupResource().String()
		}
		r.Namespace, r.Name = ns, name
		return
	}
	if obj := p.object(); obj != nil && obj.Meta != nil {
		r.Namespace, r.Name = obj.Meta.Namespace, obj.Meta.Name
	}
}

// mayBeMade reports whether the write r records was made or may have
// been: an intent alone, a write made, or one of unknown outcome.
func (r Record) mayBeMade() bool {
	return r.Outcome == OutcomeIntent || r.Outcome == OutcomeWritten || r.Outcome == OutcomeUncertain
}

// PlanRecord is the record of plan p that was not written: outcome and
// reason say what became of it.
func PlanRecord(p *Plan, operationID, prefix, outcome, reason string) Record {
	r := Record{Schema: RecordSchema, OperationID: operationID, Key: p.Key, Op: p.Description, Outcome: outcome, Reason: reason,
		Deleted: p.Delete, FromRevision: p.Expect}
	r.identify(p, prefix)
	return r
}

// ReadAuditLog reads the audit log of dir, oldest line first: lines of
// this schema and of the earlier format (no schema; an empty outcome is
// a write made, read as "written"). A line that is not a record is
// skipped and counted in skipped; a missing log is no record and no error.
// A symbolic link is not followed.
func ReadAuditLog(dir string) (recs []Record, skipped int, err error) {
	f, err := regular.OpenNoFollow(filepath.Join(dir, AuditLogName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read audit log: %w", err)
	}
	defer f.Close()
	return readAudit(f)
}

func readAudit(rd io.Reader) (recs []Record, skipped int, err error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec Record
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Key == "" || (rec.Schema != "" && rec.Schema != RecordSchema) {
			skipped++
			continue
		}
		if rec.Outcome == "" {
			rec.Outcome = OutcomeWritten
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return recs, skipped, fmt.Errorf("read audit log: %w", err)
	}
	return recs, skipped, nil
}
