package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etcdpvc/etcdpvc/clock"
	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
)

// HistoryOptions tune History.
type HistoryOptions struct {
	// Codec decrypts and decodes each revision.
	Codec kubevalue.Codec
	// ShowSecrets puts a Secret's values in the change labels; by default
	// a changed value is reported by its size only (see codec.Changes).
	ShowSecrets bool
}

// HistoryRow is one revision of a key.
type HistoryRow struct {
	Revision       int64 `json:"revision"`
	Version        int64 `json:"version"`
	CreateRevision int64 `json:"createRevision"`
	Lease          int64 `json:"lease,omitempty"`
	Deleted        bool  `json:"deleted,omitempty"`
	// Change says what this revision changed: "created", "deleted",
	// "first revision held", a summary of the changed fields, or why the
	// value could not be read ("undecodable: ...").
	Change string `json:"change"`
	// Undecodable is true when the value could not be decrypted or
	// decoded (Change says why).
	Undecodable bool `json:"undecodable,omitempty"`
	// Index and Term are the raft entry of a write read from a
	// write-ahead log (0: a revision read from a db or etcd).
	Index uint64 `json:"index,omitempty"`
	Term  uint64 `json:"term,omitempty"`
	// Outcome, for a write read from a write-ahead log: "applied", "not
	// applied" or "unknown"; Revision is 0 unless applied with an
	// established revision. Reason says why it was not applied or is
	// unknown.
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Manager is the field manager whose managedFields entry the write
	// added or dated anew (see changeWriter): nil where that is not known
	// (a deletion, a first revision held whose previous one is gone, a
	// write the apiserver did not date).
	Manager *FieldManager `json:"manager,omitempty"`
	// Time is when the write happened (clock.Clock, over the log's
	// entries or over the revisions the db or etcd holds; nil where not
	// asked for or not placed).
	Time *clock.Interval `json:"time,omitempty"`
	// EtcdUser, for a write read from a write-ahead log, is the etcd user
	// its request carried (see wal.WAL.User): set only where etcd's
	// authentication was enabled.
	EtcdUser string `json:"etcdUser,omitempty"`
}

// HistoryReport is what History found: every revision of the key the
// store still holds, oldest first.
type HistoryReport struct {
	Key string `json:"key"`
	// Revision is the store's revision when the history was read.
	Revision int64 `json:"revision"`
	// CompactRevision is the revision up to which the store's history was
	// compacted (0: never).
	CompactRevision int64 `json:"compactRevision"`
	// CompactedStart, when not empty, says that the first revisions of the
	// object are no longer held and where what is left starts.
	CompactedStart string       `json:"compactedStart,omitempty"`
	Rows           []HistoryRow `json:"events"`
	// Log, for a history read from a write-ahead log, says what the log
	// covers.
	Log *wal.WALCoverage `json:"log,omitempty"`
	// TimeNotes say what a reader of the rows' times should know
	// (writers whose clocks are off, values not read for their times).
	TimeNotes []string `json:"timeNotes,omitempty"`
	// Now and Zone are when and where TIME cells are shown: with the date
	// where it is not Now's, in Zone (nil: the local zone).
	Now  time.Time      `json:"-"`
	Zone *time.Location `json:"-"`
	// Undecodable counts the rows whose value could not be read.
	Undecodable int `json:"-"`
}

// NoHistoryError says that the store holds no revision of a key, and
// over which range of revisions that is known. It matches
// store.ErrNotFound.
type NoHistoryError struct {
	// What names the object as kubectl would, or is its key.
	What string
	// Revision is the store's revision; CompactRevision the revision up to
	// which history was compacted (0: never, so the key never existed).
	Revision, CompactRevision int64
}

func (e *NoHistoryError) Error() string {
	switch {
	case e.CompactRevision == 0:
		return fmt.Sprintf("history of %s: no revision in revisions 1 to %d, all of which the store holds: it never existed there", e.What, e.Revision)
	case e.CompactRevision >= e.Revision:
		return fmt.Sprintf("history of %s: no revision held: the store was compacted at revision %d, its current revision, so it may have existed before", e.What, e.CompactRevision)
	}
	held := fmt.Sprintf("revisions %d to %d", e.CompactRevision+1, e.Revision)
	if e.CompactRevision+1 == e.Revision {
		held = fmt.Sprintf("revision %d", e.Revision)
	}
	return fmt.Sprintf("history of %s: no revision in %s, the range the store holds; it was compacted at revision %d, so it may have existed before", e.What, held, e.CompactRevision)
}

// Hint says where an older history may still be found.
func (e *NoHistoryError) Hint() string {
	if e.CompactRevision == 0 {
		return ""
	}
	return fmt.Sprintf("an etcd snapshot or member db taken before revision %d may still hold it: etcdpvc --db FILE history ...; so may a member's write-ahead log: etcdpvc --wal DIR history ...", e.CompactRevision)
}

// Is reports whether target is store.ErrNotFound.
func (e *NoHistoryError) Is(target error) bool { return target == store.ErrNotFound }

// History reads every revision of ref's key that r still holds, oldest
// first, deletions and re-creations included, and says for each what
// changed since the one before. A history whose start was compacted away
// says so in CompactedStart. A key of which r holds no revision gives a
// *NoHistoryError. A history that etcd's compaction cuts while it is read
// (store.ErrCompacted) is read again whole, a few times at most: nothing
// of it has been shown yet.
func History(ctx context.Context, r store.Reader, ref resource.Ref, o HistoryOptions) (*HistoryReport, error) {
	for attempt := 1; ; attempt++ {
		rep, err := history(ctx, r, ref, o)
		if attempt == historyAttempts || !errors.Is(err, store.ErrCompacted) {
			return rep, err
		}
	}
}

// historyAttempts is how many times History reads a history that etcd's
// compaction cuts.
const historyAttempts = 3

// history is one read of History.
func history(ctx context.Context, r store.Reader, ref resource.Ref, o HistoryOptions) (*HistoryReport, error) {
	rep := &HistoryReport{Key: ref.Key}
	var prev map[string]any
	var prevEnc string
	info, err := r.History(ctx, ref.Key, func(ev store.Event) error {
		row := HistoryRow{Revision: ev.KV.ModRevision, Version: ev.KV.Version, CreateRevision: ev.KV.CreateRevision, Lease: ev.KV.Lease, Deleted: ev.Deleted}
		switch {
		case ev.Deleted:
			row.Change = "deleted"
			prev = nil
		default:
			cur, err := o.Codec.Open(ctx, ev.KV)
			if err != nil {
				row.Change = "undecodable: " + err.Error()
				row.Undecodable = true
				rep.Undecodable++
				prev = nil
				break
			}
			enc := encLabel(cur)
			row.Change = changeLabel(ev.KV.Version, prev, cur.Obj.Content, prevEnc, enc, o.ShowSecrets)
			row.Manager = rowManager(ev.KV.Version, prev, cur.Obj.Content)
			prev, prevEnc = cur.Obj.Content, enc
		}
		rep.Rows = append(rep.Rows, row)
		return nil
	})
	rep.Revision, rep.CompactRevision = info.Revision, info.CompactRevision
	if err != nil {
		return nil, err
	}
	if len(rep.Rows) == 0 {
		if info.CompactRevision == 0 {
			// The store holds every revision: the key never existed. Say
			// so as a not-found naming the namespaces that hold the name.
			prefix := o.Codec.Prefix
			if prefix == "" {
				prefix = kubevalue.DefaultPrefix
			}
			return nil, kubevalue.NotFound(ctx, r, prefix, ref.Key, 0, store.ErrNotFound)
		}
		return nil, &NoHistoryError{What: ObjectName(ref), Revision: info.Revision, CompactRevision: info.CompactRevision}
	}
	rep.CompactedStart = compactedStart(rep.Rows[0], info.CompactRevision)
	return rep, nil
}

// changeLabel says what a revision of version version changed, from the
// previous content prev (nil: none read, or deleted) stored as prevEnc to
// cur stored as enc.
func changeLabel(version int64, prev, cur map[string]any, prevEnc, enc string, showSecrets bool) string {
	if version == 1 {
		return "created"
	}
	if prev == nil {
		return "first revision held"
	}
	changes := codec.Changes(prev, cur, showSecrets)
	switch {
	case len(changes) == 0 && enc != prevEnc:
		return "content unchanged, now stored " + enc
	case len(changes) == 0:
		return "rewritten, content unchanged"
	}
	return codec.SummarizeChanges(changes, 4)
}

// rowManager is the field manager of a revision of version version with
// content cur after prev (nil: not read): known for a creation and for a
// revision whose previous one was read.
func rowManager(version int64, prev, cur map[string]any) *FieldManager {
	if version != 1 && prev == nil {
		return nil
	}
	if version == 1 {
		prev = nil
	}
	return changeWriter(prev, cur)
}

// compactedStart says where a history starts when its beginning is no
// longer held: "" when the first row held is the object's creation.
func compactedStart(first HistoryRow, compactRev int64) string {
	switch {
	case first.Deleted && compactRev > 0:
		return fmt.Sprintf("history before revision %d was compacted (compaction revision %d); the first event held is the deletion at revision %d: the revisions before it are gone",
			compactRev+1, compactRev, first.Revision)
	case first.Deleted:
		return fmt.Sprintf("the first event held is the deletion at revision %d: the revisions before it are not held", first.Revision)
	case first.Version > 1 && compactRev > 0:
		return fmt.Sprintf("history before revision %d was compacted (compaction revision %d); the first revision held is version %d of the object created at revision %d",
			first.Revision, compactRev, first.Version, first.CreateRevision)
	case first.Version > 1:
		return fmt.Sprintf("the first revision held is version %d of the object created at revision %d: the versions before it are not held", first.Version, first.CreateRevision)
	}
	return ""
}

// ObjectName names ref's object the way kubectl does ("secret web-secret
// in namespace demo"), or by its key when its resource is unknown.
func ObjectName(ref resource.Ref) string {
	kind := ref.Resource.Singular
	if kind == "" {
		kind = ref.Resource.String()
	}
	if kind == "" || ref.Name == "" {
		return ref.Key
	}
	if ref.Namespace != "" {
		return fmt.Sprintf("%s %s in namespace %s", kind, ref.Name, ref.Namespace)
	}
	return kind + " " + ref.Name
}
