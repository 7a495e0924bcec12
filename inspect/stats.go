package inspect

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
)

// ResourceStats counts one resource's keys. The history columns are nil
// when unknown (live etcd).
type ResourceStats struct {
	Resource string `json:"resource"`
	Counts
	// Storage counts the objects stored under each provider and key
	// ("aescbc/key1", "kms/mykms", "identity" for plain values), as their
	// k8s:enc: header names it, most objects first.
	Storage []*StorageCount `json:"storage"`
	// WriteProvider is the provider and key the resource's writes use
	// (the encryption config's first; "identity" when no rule matches);
	// "" when no encryption config was given, so staleness is unknown.
	WriteProvider string `json:"writeProvider,omitempty"`
	// Stale counts the objects not stored under WriteProvider: what a key
	// rotation or a newly enabled provider still has to rewrite (nil when
	// WriteProvider is unknown).
	Stale *int64 `json:"stale,omitempty"`
	// StoredVersions counts the current objects by the apiVersion (and
	// kind) their value is stored at, most objects first: read from the
	// value's envelope (decrypted when it is encrypted at rest), not from
	// a full decode. A version a Kubernetes release stopped serving has
	// RemovedIn set (resource.RemovedIn): objects to rewrite before that
	// upgrade. Objects whose value could not be read are in Unreadable.
	StoredVersions []*VersionCount `json:"storedVersions"`
	// Unreadable counts the current objects whose value could not be read,
	// by why: "Encrypted (aescbc/key1): no key", "Undecodable: truncated
	// protobuf", "Undecodable: kind ConfigMap under a secret key".
	Unreadable []*ReasonCount `json:"unreadable,omitempty"`

	storage  map[string]int64
	readers  []string // the resource's providers in the encryption config (nil: unknown)
	versions map[versionKey]int64
	unread   map[string]int64
}

// VersionCount is how many of a resource's objects are stored at one
// apiVersion.
type VersionCount struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Objects    int64  `json:"objects"`
	// RemovedIn is the Kubernetes release that no longer serves
	// APIVersion for Kind ("v1.32"), "" when none is known to
	// (resource.RemovedIn).
	RemovedIn string `json:"removedIn,omitempty"`
}

// ReasonCount is how many of a resource's objects could not be read for
// one reason.
type ReasonCount struct {
	Reason  string `json:"reason"`
	Objects int64  `json:"objects"`
}

// versionKey is an apiVersion and kind.
type versionKey struct{ apiVersion, kind string }

// StorageCount is how many of a resource's objects are stored under one
// provider and key.
type StorageCount struct {
	Provider string `json:"provider"`
	Objects  int64  `json:"objects"`
	// Stale is true when Provider is not the resource's write provider,
	// but one of its providers in the encryption config: the apiserver
	// reads these objects and rewrites them under the write provider.
	Stale bool `json:"stale,omitempty"`
	// NotReadable is true when Provider is none of the resource's
	// providers in the encryption config (a value in the clear under a
	// config without identity, a key removed): the apiserver can neither
	// read nor rewrite these objects, and every LIST of the resource
	// fails. They are not counted Stale.
	NotReadable bool `json:"notReadable,omitempty"`
}

// StoredUnder names the provider and key a stored value is under, as an
// encryption config names them: "aescbc/key1", "kms/mykms", or
// "identity" for a value stored in the clear.
func StoredUnder(value []byte) string {
	h, ok := codec.ParseEncryptionHeader(value)
	if !ok {
		if codec.Detect(value) == codec.FormatEncrypted {
			return "k8s:enc: (malformed header)"
		}
		return "identity"
	}
	return h.Provider + "/" + h.KeyName
}

// WriteProviderFunc names the provider and key new values of a resource
// are written with (encryption.Config.Providers' first).
type WriteProviderFunc func(gr schema.GroupResource) string

// LargeObject is one of the largest current values.
type LargeObject struct {
	Key         string `json:"key"`
	Bytes       int64  `json:"bytes"`
	ModRevision int64  `json:"modRevision"`
}

// StatsReport is what `etcdpvc stats` reports: per-resource counts, the
// largest objects, the revision range and the compaction state.
type StatsReport struct {
	// SchemaVersion is StatsSchemaVersion (docs/stats-schema.md).
	SchemaVersion            int              `json:"schemaVersion"`
	Source                   string           `json:"source"`
	Revision                 int64            `json:"revision"`
	OldestRevision           int64            `json:"oldestRevisionHeld,omitempty"`
	CompactRevision          int64            `json:"compactRevision"`
	ScheduledCompactRevision *int64           `json:"scheduledCompactRevision,omitempty"`
	Objects                  int64            `json:"objects"`
	Bytes                    int64            `json:"bytes"`
	Leased                   int64            `json:"leasedKeys"`
	Revisions                *int64           `json:"revisions,omitempty"`
	Tombstones               *int64           `json:"tombstones,omitempty"`
	Deleted                  *int64           `json:"deletedKeys,omitempty"`
	Snapshot                 string           `json:"snapshot"`
	DB                       *DBStats         `json:"db,omitempty"`
	Resources                []*ResourceStats `json:"resources"`
	// By is what Groups are grouped by (--by), Groups the counts.
	By      []string      `json:"by"`
	Groups  []*GroupStats `json:"groups"`
	Largest []LargeObject `json:"largest"`
	// Details are the lists StatsOptions.Details asks for (nil: none).
	Details *StatsDetails `json:"details,omitempty"`
	// HotKeys are the keys with the most revisions (nil when not
	// counted: live etcd without --since).
	HotKeys *HotKeys `json:"hotKeys"`
	// Leases are the keys attached per lease.
	Leases *LeaseStats `json:"leases"`
	Notes  []string    `json:"notes,omitempty"`
	// Incomplete says why the counts cover only part of the store ("" when
	// everything was read).
	Incomplete string `json:"incomplete,omitempty"`
	// NotRead counts the current objects whose value could not be read
	// (decrypted and its envelope decoded), so their stored version is
	// unknown; Unread says why, in all.
	NotRead int    `json:"valuesNotRead"`
	Unread  Unread `json:"-"`
	// ReadFrom and ReadTo, when set, are the revisions a live read spans
	// because etcd was compacted while it ran (it continued from the last
	// key read at the newer revision).
	ReadFrom int64 `json:"readFromRevision,omitempty"`
	ReadTo   int64 `json:"readToRevision,omitempty"`
	// KeyBytes is the size of the current objects' keys: with Bytes,
	// what space estimates the live data's db size from; HelmReleases
	// the Helm releases stored as Secrets (space's; not in the schema).
	KeyBytes     int64          `json:"-"`
	HelmReleases []*HelmRelease `json:"-"`
}

// DBStats describes a db file.
type DBStats struct {
	FileSize        int64  `json:"fileSize"`
	DataSize        int64  `json:"dataSize"`
	PageSize        int    `json:"pageSize"`
	ConsistentIndex uint64 `json:"consistentIndex"`
	Term            uint64 `json:"term"`
	StorageVersion  string `json:"storageVersion,omitempty"`
	// FileSHA256 is the file's sha256, as sha256sum prints it, where the
	// file was read whole (store.SnapshotInfo.FileSHA256); TrailerSHA256
	// its snapshot trailer, the sha256 of all but its last 32 bytes.
	FileSHA256    string `json:"fileSHA256,omitempty"`
	TrailerSHA256 string `json:"trailerSHA256,omitempty"`
}

// GroupOf names the group a key is counted in: its resource, or for keys
// that name no object, "(first path segment)". prefix ends in "/".
func GroupOf(prefix, key string) string {
	if r, _, _, ok := resource.ParseKey(prefix, key); ok {
		return r.String()
	}
	rest := strings.TrimPrefix(key, strings.TrimSuffix(prefix, "/")+"/")
	if rest == key {
		return "(outside " + prefix + ")"
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return "(" + rest + ")"
}

// Progress is told of each record read: how many so far, the record's
// bytes and revision.
type Progress func(n, bytes, rev int64)

// StatsOptions are what BoltStats and LiveStats read and how.
type StatsOptions struct {
	// Prefix is the key prefix read, ending in "/".
	Prefix string
	// Top is how many of the largest objects to report.
	Top int
	// PageSize is the keys per range request (live etcd).
	PageSize int64
	// Progress, when set, is told of each key read.
	Progress Progress
	// Write names each resource's write provider (nil: unknown, so which
	// objects are stale is unknown).
	Write WriteProviderFunc
	// Readers names each resource's providers in the encryption config
	// (nil: unknown): a value stored under any other is one the apiserver
	// cannot read, nor rewrite (StorageCount.NotReadable), not a stale one.
	Readers func(gr schema.GroupResource) []string
	// Dec decrypts values encrypted at rest to read their stored version
	// (nil: no encryption config; their version is not read, and they are
	// counted as not read).
	Dec Decrypter
	// By is what the Groups are grouped by (zero: by resource).
	By GroupBy
	// Since is the first revision the hot keys count (0: every revision a
	// db file holds; live etcd counts hot keys only with one).
	Since int64
	// Open decrypts and decodes the hot keys' last values for their field
	// manager (nil: not read).
	Open ValueOpener
	// Details, above 0, lists in StatsReport.Details up to that many
	// objects stuck Terminating, values not read, and deleted keys.
	Details int
}

// keyState is a key's newest state during a db scan.
type keyState struct {
	groups *keyGroups
	size   int64
	modRev int64
	lease  int64
	// revs counts the revisions from StatsOptions.Since on (the hottest
	// keys); under is the provider and key the value is stored under
	// (stats.unders).
	revs  int32
	under uint32
	// all, tombs and hist are the key's revisions, tombstones and
	// history bytes, added to its groups' counts once the walk ends (not
	// at each revision, where they would cost a lookup of each group).
	all, tombs int32
	hist       int64
	deleted    bool
	// put is true once a value of the key is seen: a deleted key whose
	// value before the deletion is held.
	put bool
	// value is the newest value, in the mapped file, while the read
	// lasts (nil for a deleted key).
	value []byte
}

// BoltStats reads every revision a db file holds under prefix (ending in
// "/") and reports the counts, the top largest current objects, the
// revision range, the compaction state and the file's sizes. When a page
// of the file cannot be read, it returns the report of what was read, with
// Incomplete set, and the error (wrapping store.ErrCorrupt).
//
// Each resource's objects are counted by the provider and key they are
// stored under; with write (nil: unknown), those not under the resource's
// write provider are counted as stale.
//
// One read walks the revisions and then reads the current values' stored
// versions on every core; no value is copied out of the mapped file. The
// memory it takes grows with the keys, not the revisions nor the values:
// a key's state is about 100 bytes beside the key itself (150 in all
// with the bench data's keys of some 50 bytes), and 24 more per current key
// while the versions are read.
func BoltStats(ctx context.Context, b *store.Bolt, o StatsOptions) (*StatsReport, error) {
	s := newStats(o, true)
	prefix := o.Prefix
	rep := s.rep
	m := b.Meta()
	if err := checkSince(o.Since, m.CompactRevision, m.Revision, "the db file"); err != nil {
		return nil, err
	}
	snap := b.Snapshot()
	rep.Revision, rep.CompactRevision = m.Revision, m.CompactRevision
	sched := m.ScheduledCompactRevision
	rep.ScheduledCompactRevision = &sched
	rep.DB = &DBStats{FileSize: snap.Size, DataSize: m.DataSize, PageSize: m.PageSize, ConsistentIndex: m.ConsistentIndex, Term: m.Term, StorageVersion: m.StorageVersion, FileSHA256: snap.FileSHA256, TrailerSHA256: snap.SHA256}
	switch {
	case !snap.IsSnapshot:
		rep.Snapshot = "no sha256 trailer (a member db, or a copy of one)"
	case snap.VerifiedEarlier:
		rep.Snapshot = "sha256 trailer verified (by an earlier run; the file has not changed since)"
	case snap.Verified:
		rep.Snapshot = "sha256 trailer verified"
	default:
		rep.Snapshot = "sha256 trailer NOT verified (--skip-hash-check)"
	}
	if sched > m.CompactRevision {
		rep.Notes = append(rep.Notes, fmt.Sprintf("compaction to revision %d was interrupted (finished: %d): etcd resumes it at start", sched, m.CompactRevision))
	}
	revs, tombs, deleted := new(int64), new(int64), new(int64)
	rep.Revisions, rep.Tombstones, rep.Deleted = revs, tombs, deleted
	keys := map[string]*keyState{}
	// The values stay in the mapped file: a key's state holds its newest
	// value there, and its stored version is read before the read ends.
	var valuesErr error
	err := b.ScanRevisionsBorrowed(ctx, prefix, func(ev *store.BorrowedRevision) error {
		if rep.OldestRevision == 0 || ev.ModRevision < rep.OldestRevision {
			rep.OldestRevision = ev.ModRevision
		}
		ks := keys[string(ev.Key)]
		if ks == nil {
			key := string(ev.Key)
			ks = &keyState{groups: s.groupsOf(key)}
			keys[key] = ks
		}
		ks.all++
		*revs++
		if ev.ModRevision >= o.Since {
			ks.revs++
		}
		if ev.Deleted {
			ks.tombs++
			*tombs++
			ks.deleted, ks.size, ks.lease, ks.modRev, ks.value = true, 0, 0, ev.ModRevision, nil
		} else {
			sz := int64(len(ev.Value))
			ks.hist += sz
			ks.deleted, ks.size, ks.lease, ks.modRev, ks.put, ks.value = false, sz, ev.Lease, ev.ModRevision, true, ev.Value
			ks.under = s.unders.index(StoredUnder(ev.Value))
		}
		s.tick(int64(len(ev.Value)), ev.ModRevision)
		return nil
	}, func() error {
		valuesErr = s.boltValues(ctx, b, keys)
		return nil
	})
	if err == nil {
		err = valuesErr
	}
	if err != nil && !errors.Is(err, store.ErrCorrupt) {
		return nil, err
	}
	for key, ks := range keys {
		ks.value = nil // the read has ended
		for _, c := range []*Counts{&ks.groups.rs.Counts, &ks.groups.by.Counts} {
			*c.Revisions += int64(ks.all)
			*c.Tombstones += int64(ks.tombs)
			*c.HistoryBytes += ks.hist
		}
		if ks.deleted {
			*ks.groups.rs.Deleted++
			*ks.groups.by.Deleted++
			*deleted++
			if s.details != nil {
				s.details.deletedKey(prefix, key, ks.modRev, ks.put)
			}
			continue
		}
		s.object(ks.groups, key, ks.size, ks.modRev, ks.lease, s.unders.names[ks.under])
	}
	rep = s.finish(ctx, b, "the db's lease bucket", "")
	rep.HotKeys = topHot(o.Top, prefix, func(fn func(key string, revs, last int64, deleted bool)) {
		for key, ks := range keys {
			fn(key, int64(ks.revs), ks.modRev, ks.deleted)
		}
	})
	rep.HotKeys.Counted, rep.HotKeys.Since, rep.HotKeys.ToRevision = "revisions held", o.Since, m.Revision
	rep.HotKeys.managers(ctx, b, prefix, o.Open)
	if err != nil {
		rep.Incomplete = fmt.Sprintf("the scan stopped after %s: %v", Count(int(s.read), "revision", "revisions"), err)
		return rep, err
	}
	return rep, nil
}

// LiveStats reads every key under prefix (ending in "/") from live etcd,
// page by page, and reports the counts and the top largest objects.
// Deleted keys, tombstones and the revisions held are unknown there.
// Objects are counted by provider and key as in BoltStats. A compaction
// while it reads does not stop it: it continues from the last key read at
// the newer revision (store.ListOptions.OnCompacted), and the report says
// which revisions it spans (ReadFrom, ReadTo, and a note).
func LiveStats(ctx context.Context, r store.Reader, o StatsOptions) (*StatsReport, error) {
	s := newStats(o, false)
	prefix := o.Prefix
	rep := s.rep
	info, err := r.Info(ctx)
	if err != nil {
		return nil, err
	}
	rep.Revision, rep.CompactRevision = info.Revision, info.CompactRevision
	rep.Snapshot = "not a file (live etcd)"
	rep.Notes = append(rep.Notes, "live etcd: deleted keys, tombstones and the revisions held are unknown (read a snapshot with --db for them)")
	var span store.Span
	rev, err := r.List(ctx, prefix, store.ListOptions{PageSize: o.PageSize, OnCompacted: span.Record}, func(kv *store.KeyValue) error {
		sz := int64(len(kv.Value))
		g := s.groupsOf(kv.Key)
		s.object(g, kv.Key, sz, kv.ModRevision, kv.Lease, StoredUnder(kv.Value))
		s.value(ctx, g.rs, kv)
		s.tick(sz, kv.ModRevision)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Revision = max(rep.Revision, rev)
	switch a, isArchive := r.(store.Archive); {
	case isArchive:
		if err := checkSince(o.Since, 0, rep.Revision, "the log"); err != nil {
			return nil, err
		}
		rep.HotKeys, err = ArchiveHotKeys(ctx, a, prefix, o.Since, rep.Revision, o.Top, o.Open)
		if err != nil {
			return nil, err
		}
	case o.Since > 0:
		w, ok := r.(store.Watcher)
		if !ok {
			return nil, fmt.Errorf("--since: %w", store.ErrNoWatch)
		}
		if err := checkSince(o.Since, info.CompactRevision, rep.Revision, "etcd"); err != nil {
			return nil, err
		}
		rep.HotKeys, err = liveHot(ctx, w, prefix, o.Since, rep.Revision, o.Top, nil)
		if err != nil {
			return nil, err
		}
		rep.HotKeys.managers(ctx, r, prefix, o.Open)
	default:
		rep.Notes = append(rep.Notes, "live etcd: the hottest keys are counted over a window: --since REV counts the changes etcd's watch replays from REV to now")
	}
	if span.Spans() {
		rep.ReadFrom, rep.ReadTo = span.From, span.To
		rep.Revision = max(rep.Revision, span.To)
		rep.Notes = append(rep.Notes, span.Note())
		// The compaction read before is out of date.
		if info, err := r.Info(ctx); err == nil {
			rep.Revision, rep.CompactRevision = max(rep.Revision, info.Revision), info.CompactRevision
		}
	}
	switch l, ok := r.(store.Leaser); {
	case ok:
		return s.finish(ctx, l, "etcd's lease list", ""), nil
	case isRouted(r):
		return s.finish(ctx, nil, "", "several etcds (--etcd-servers-overrides): the leases each holds are not read"), nil
	default:
		return s.finish(ctx, nil, "", "the source lists no leases (a write-ahead log's replay)"), nil
	}
}

// isRouted reports whether r is a store routed over several etcds.
func isRouted(r store.Reader) bool {
	_, ok := r.(*store.Routed)
	return ok
}

// checkSince refuses a --since revision outside what a source at revision
// rev compacted at compactRev counts from (0: none asked).
func checkSince(since, compactRev, rev int64, source string) error {
	switch {
	case since == 0:
		return nil
	case since <= compactRev:
		return &SinceError{Since: since, Revision: rev, Oldest: compactRev + 1, Compacted: true, Source: source}
	case since > rev:
		return &SinceError{Since: since, Revision: rev, Source: source}
	}
	return nil
}

// topN keeps the n elements a less orders last (a min-heap of them).
type topN[T any] struct {
	n    int
	less func(a, b T) bool
	h    []T
}

// heapOf is t's heap, for container/heap.
type heapOf[T any] struct{ t *topN[T] }

func (h heapOf[T]) Len() int           { return len(h.t.h) }
func (h heapOf[T]) Less(i, j int) bool { return h.t.less(h.t.h[i], h.t.h[j]) }
func (h heapOf[T]) Swap(i, j int)      { h.t.h[i], h.t.h[j] = h.t.h[j], h.t.h[i] }
func (h heapOf[T]) Push(x any)         { h.t.h = append(h.t.h, x.(T)) }
func (h heapOf[T]) Pop() any {
	x := h.t.h[len(h.t.h)-1]
	h.t.h = h.t.h[:len(h.t.h)-1]
	return x
}

// add keeps o if it is among the n last.
func (t *topN[T]) add(o T) {
	if t.n == 0 {
		return
	}
	if len(t.h) < t.n {
		heap.Push(heapOf[T]{t}, o)
		return
	}
	if t.less(t.h[0], o) {
		t.h[0] = o
		heap.Fix(heapOf[T]{t}, 0)
	}
}

// sorted returns the elements kept, the last in less's order first.
func (t *topN[T]) sorted() []T {
	out := append([]T{}, t.h...)
	sort.Slice(out, func(i, j int) bool { return t.less(out[j], out[i]) })
	return out
}

// smallerObject orders objects by size, ties by the greater key.
func smallerObject(a, b LargeObject) bool {
	if a.Bytes != b.Bytes {
		return a.Bytes < b.Bytes
	}
	return a.Key > b.Key
}

// HumanBytes renders a byte count for people, the same everywhere
// (stats, doctor, ls): exactly below 10 KiB ("2090"), else with one
// decimal and Kubernetes' binary suffixes ("12.3Ki", "4.5Mi", "1.2Gi",
// "1.0Ti").
func HumanBytes(n int64) string {
	if n < 10<<10 {
		return strconv.FormatInt(n, 10)
	}
	f := float64(n)
	for _, unit := range []string{"Ki", "Mi", "Gi", "Ti", "Pi"} {
		f /= 1 << 10
		if f < 10<<10 || unit == "Pi" {
			return fmt.Sprintf("%.1f%s", f, unit)
		}
	}
	return strconv.FormatInt(n, 10)
}

// FromWAL marks rep, counted by LiveStats over the replay of a write-ahead
// log, as the log's: what it read, and, when the log's revisions stop
// before its end (cov.RevisionsStop), that the counts are incomplete
// (rep.Incomplete): the writes after the last revision established are
// not in them.
func FromWAL(rep *StatsReport, cov wal.WALCoverage) {
	rep.Snapshot = "not a file (write-ahead log " + cov.Dir + ")"
	what := "the log alone"
	if cov.DB != "" {
		what = "the log replayed over db " + cov.DB
	}
	rep.Notes = []string{"counts are the keyspace " + what + " establishes; deleted keys, tombstones and the revisions held are not counted"}
	if cov.RevisionsStop == "" {
		return
	}
	if cov.LastRevision == 0 {
		rep.Incomplete = fmt.Sprintf("the log establishes no revision: its writes are not counted (%s)", cov.RevisionsStop)
		return
	}
	rep.Incomplete = fmt.Sprintf("the log establishes the keyspace up to revision %d only: its later writes are not counted (%s)", cov.LastRevision, cov.RevisionsStop)
}

// FromKine rewrites what LiveStats says of its source for kine's database
// read offline, which is no etcd file and no live etcd; database names
// it (SQLite, PostgreSQL, MySQL).
func FromKine(rep *StatsReport, database string) {
	rep.Snapshot = "not an etcd file (kine's " + database + " database)"
	rep.Notes = []string{"kine's database: deleted keys, tombstones and the revisions held are not counted here (ls --deleted and history read them)"}
}

// interned numbers strings (the few providers values are stored under),
// so that a key's state holds a number.
type interned struct {
	names  []string
	byName map[string]uint32
}

// index is name's number.
func (in *interned) index(name string) uint32 {
	if i, ok := in.byName[name]; ok {
		return i
	}
	if in.byName == nil {
		in.byName = map[string]uint32{}
	}
	i := uint32(len(in.names))
	in.names = append(in.names, name)
	in.byName[name] = i
	return i
}
