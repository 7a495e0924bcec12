// Package store gives one interface over the two places Kubernetes objects
// live: a running etcd cluster (clientv3) and an etcd backend file (a member's
// bbolt db or an `etcdctl snapshot save` file).
//
// etcd's data model, as seen through this package:
//
//   - Every write to the keyspace gets a new main revision, cluster-wide and
//     monotonically increasing. A key's ModRevision is the revision of its last
//     write, CreateRevision the revision that created its current incarnation,
//     and Version counts writes since that creation (1 on create, reset when
//     the key is deleted and created again).
//   - A delete writes a tombstone. After a delete the key no longer exists;
//     a later put starts a new incarnation with Version 1.
//   - kine, which serves the etcd API from a SQL table, counts no versions:
//     a key it serves has Version 1 while its ModRevision is its
//     CreateRevision, and 0, a count not known, once written since.
//   - Compaction discards every revision older than the compaction revision,
//     except the newest revision of each live key.
//   - A key may be attached to a lease; a put without the lease detaches it,
//     so every write this project makes passes the lease it read.
//
// Values are the raw bytes the kube-apiserver stored; this package never
// interprets them (see package codec for that).
package store

import (
	"context"
	"errors"
	"fmt"
)

// Sentinel errors callers branch on. Errors returned by the backends wrap
// them, so test with errors.Is.
var (
	// ErrNotFound means the key does not exist at the revision read.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a compare-and-swap found the key at another revision
	// than expected; nothing was written. The error is a *ConflictError.
	ErrConflict = errors.New("conflict")
	// ErrCompacted means the revision asked for has been compacted away.
	ErrCompacted = errors.New("revision compacted")
	// ErrReadOnly means the backend cannot write (an offline db file).
	ErrReadOnly = errors.New("store is read-only")
	// ErrUnavailable means the store could not be reached (dial, TLS or
	// timeout failure). The error chain carries the cause.
	ErrUnavailable = errors.New("etcd unavailable")
	// ErrNoWatch means the store has no watch: a db file, a log.
	ErrNoWatch = errors.New("no watch: only a live etcd can be watched")
	// ErrSpansStores means a watch would span etcds whose revisions are
	// unrelated (the apiserver's --etcd-servers-overrides).
	ErrSpansStores = errors.New("the keys watched live in several etcds")
)

// ConflictError reports a failed compare-and-swap. It matches ErrConflict.
type ConflictError struct {
	Key string
	// Expected is the mod revision the caller read (0: the key must not exist).
	Expected int64
	// Current is the key's mod revision when the transaction ran (0: deleted).
	Current int64
	// CurrentValue is the key's value when the transaction ran, if it exists.
	CurrentValue *KeyValue
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: object changed since it was read (revision %d → %d)", e.Key, e.Expected, e.Current)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// KeyValue is one stored revision of one key: an mvccpb.KeyValue without the
// protobuf dependency.
type KeyValue struct {
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64
	Version        int64
	Lease          int64
}

// Event is one entry of a key's revision history.
type Event struct {
	// KV holds the key's state after the event. For a delete, KV.Value is
	// nil, KV.ModRevision is the revision of the delete, and CreateRevision
	// and Version are zero (as etcd's tombstones record them).
	KV KeyValue
	// Deleted is true for a tombstone.
	Deleted bool
}

// HistoryInfo describes how much of a history the store still holds.
type HistoryInfo struct {
	// CompactRevision is the revision up to which history was compacted
	// (0 if never). Revisions at or below it may be missing: a history that
	// starts after it is complete; one whose first event is after
	// CompactRevision while the key's CreateRevision is at or below it is
	// "compacted start", not missing data. Compaction keeps each live key's
	// newest revision at or below CompactRevision, so a history may also
	// start with that one revision, older than CompactRevision.
	CompactRevision int64
	// LogStart, for a write-ahead log read over a db, is the revision
	// before the log where the log establishes it (0: not established,
	// or no log): the log's entries give back the db's compacted
	// revisions above it. It is no compaction: CompactRevision is the
	// db's.
	LogStart int64
	// Revision is the store's current revision when the history was read.
	Revision int64
}

// ListOptions tunes a paged range read.
type ListOptions struct {
	// Revision pins the read to a past revision; 0 means the latest. Every
	// page of one List is read at the same revision.
	Revision int64
	// PageSize is the number of keys per range request (default 500).
	PageSize int64
	// KeysOnly skips the values (KeyValue.Value is nil).
	KeysOnly bool
	// OnCompacted, when set on a read of the latest revision (Revision 0)
	// of a live etcd, lets the read outlive a compaction that passes the
	// revision it reads at: instead of failing, List continues from the
	// key after the last one it handed over, at the store's current
	// revision, and calls OnCompacted with the revision it read at until
	// then and the one it continues at. Every key is still handed over
	// once, but the keys after the call are as of a later revision than
	// those before it: set it only where that is acceptable, and tell the
	// user. Without it, or with a Revision, the read keeps to one
	// revision and a compaction fails it (ErrCompacted). Stores that are
	// not compacted while they are read (db files) never call it.
	OnCompacted func(from, to int64)
}

// Span is the revisions a read of the latest revision was made at: From
// the one it started at, To the last one a compaction moved it to (0: the
// read kept to From), Compactions how many it met. Record feeds it as a
// ListOptions.OnCompacted.
type Span struct {
	From, To    int64
	Compactions int
}

// Record notes that a read moved from revision from to revision to.
func (s *Span) Record(from, to int64) {
	if s.Compactions == 0 {
		s.From = from
	}
	s.To = to
	s.Compactions++
}

// Spans reports whether the read was made at more than one revision.
func (s *Span) Spans() bool { return s != nil && s.Compactions > 0 }

// Note says, for the user, that the read spans revisions because etcd was
// compacted during it ("" when it kept to one revision).
func (s *Span) Note() string {
	if !s.Spans() {
		return ""
	}
	return fmt.Sprintf("the read spans revisions %d–%d: etcd was compacted %s while it ran, so it continued from the last key read at the newer revision (each key was read once, as of the revision its page was read at)",
		s.From, s.To, times(s.Compactions))
}

// times is "once", "twice" or "N times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// Info describes the store itself, for `stats`, `doctor` and reports.
type Info struct {
	// Description names the store: endpoints or a file path.
	Description string
	// Revision is the current revision.
	Revision int64
	// CompactRevision is the last finished compaction (0 if none).
	CompactRevision int64
}

// Reader reads keys. Both backends implement it.
type Reader interface {
	// Get returns key at revision rev (0: latest). It returns an error
	// wrapping ErrNotFound when the key does not exist at that revision.
	Get(ctx context.Context, key string, rev int64) (*KeyValue, error)
	// List calls fn for every key under prefix in key order, reading page by
	// page. prefix must end in "/" unless it is a full key; List rejects a
	// prefix without a trailing "/" so that "pods/default" can never match
	// "pods/default-2". It returns the revision the list was read at.
	List(ctx context.Context, prefix string, opts ListOptions, fn func(*KeyValue) error) (int64, error)
	// History calls fn for every revision of key that the store still holds,
	// oldest first, deletions included.
	History(ctx context.Context, key string, fn func(Event) error) (HistoryInfo, error)
	// Info describes the store.
	Info(ctx context.Context) (Info, error)
	// Close releases the store.
	Close() error
}

// Writer writes keys with compare-and-swap. Only the live backend (and the
// snapshot-surgery copy) implements it.
type Writer interface {
	// CompareAndSwap puts value at key if and only if the key's mod revision
	// is still expect (expect 0: the key must not exist; a create). The put
	// carries lease (0 for none) so a key's lease survives an edit. On
	// success it returns the new revision; otherwise it returns a
	// *ConflictError and writes nothing.
	CompareAndSwap(ctx context.Context, key string, expect int64, value []byte, lease int64) (int64, error)
}

// AsWriter returns s as a Writer, or an error wrapping ErrReadOnly.
func AsWriter(s Reader) (Writer, error) {
	w, ok := s.(Writer)
	if !ok {
		return nil, fmt.Errorf("%T: %w", s, ErrReadOnly)
	}
	return w, nil
}

// Archive is what a source that keeps every revision it holds can do
// beyond Reader: an etcd db or snapshot file (Bolt), and a member's
// write-ahead log. A live etcd is not one: it keeps no listable record of
// deleted keys. Callers test for it with a type assertion and say what
// they cannot do when the source is not an Archive.
type Archive interface {
	Reader
	// ScanRevisions calls fn for every revision held of every key under
	// prefix (ending in "/", or ""), in revision order, deletions as
	// Deleted events. It streams.
	ScanRevisions(ctx context.Context, prefix string, fn func(Event) error) error
	// ScanLatest calls fn once per key under prefix (ending in "/", or
	// ""), in key order, with the key's newest state: for a live key its
	// newest revision (deleted false, deleteRev 0); with includeDeleted,
	// for a key whose newest revision is a deletion, the last live revision
	// before it (or a KeyValue with only Key set when that is not held),
	// deleted true and deleteRev the deletion's revision (-1: a deletion
	// a write-ahead log establishes without its revision).
	ScanLatest(ctx context.Context, prefix string, includeDeleted bool, fn func(kv *KeyValue, deleted bool, deleteRev int64) error) error
	// ScanDeleted calls fn for the keys ScanLatest with includeDeleted
	// reports deleted, with the same kv and deleteRev, and reads nothing
	// of the live keys' values: what `ls --deleted` reads.
	ScanDeleted(ctx context.Context, prefix string, fn func(kv *KeyValue, deleteRev int64) error) error
}

var _ Archive = (*Bolt)(nil)

// Cluster is what only a live etcd can tell beyond Reader: its cluster ID,
// members and each endpoint's status. Callers get it with AsCluster and
// say what they cannot check when the source is not a Cluster.
type Cluster interface {
	Reader
	// ClusterID is the ID of the cluster the endpoints serve.
	ClusterID(ctx context.Context) (uint64, error)
	// MemberList lists the cluster's members.
	MemberList(ctx context.Context) ([]Member, error)
	// Status asks each endpoint for its status; a failure is recorded in
	// that endpoint's EndpointStatus.
	Status(ctx context.Context) []EndpointStatus
}

var _ Cluster = (*Etcd)(nil)

// AsCluster returns r as a Cluster: r itself, or, for a Routed store, its
// main etcd (the one the cluster ID, members and status describe).
func AsCluster(r Reader) (Cluster, bool) {
	if rt, ok := r.(*Routed); ok {
		r = rt.main
	}
	c, ok := r.(Cluster)
	return c, ok
}
