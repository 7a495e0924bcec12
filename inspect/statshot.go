package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// HotKeys are the keys that take the most revisions: held by a db file
// (every revision above its compaction), established by a write-ahead
// log, or, live, the changes etcd's watch replays from Since to
// ToRevision.
type HotKeys struct {
	// Counted says what Revisions counts: "revisions held" (a db file),
	// "revisions the log establishes" (--wal), "changes replayed by etcd's
	// watch" (live, --since).
	Counted string `json:"counted"`
	// Since is the first revision counted (0: every one held);
	// ToRevision the last.
	Since      int64 `json:"sinceRevision,omitempty"`
	ToRevision int64 `json:"toRevision"`
	// KeysChanged is how many keys have a revision counted, Revisions how
	// many revisions are counted in all.
	KeysChanged int64 `json:"keysChanged"`
	Revisions   int64 `json:"revisions"`
	// Keys are the top keys, most revisions first.
	Keys []HotKey `json:"keys"`
}

// HotKey is one of the keys with the most revisions.
type HotKey struct {
	Key       string `json:"key"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	// Revisions counted of the key (HotKeys.Counted).
	Revisions int64 `json:"revisions"`
	// LastRevision is the key's newest revision counted; Deleted is true
	// when it is a deletion.
	LastRevision int64 `json:"lastRevision"`
	Deleted      bool  `json:"deleted,omitempty"`
	// LastWrite is the field manager of the key's last write: of the
	// value at LastRevision, the metadata.managedFields entry with the
	// newest time; nil with ManagerUnknown saying why (a deletion records
	// no manager).
	LastWrite      *FieldManager `json:"lastWriteManager,omitempty"`
	ManagerUnknown string        `json:"managerUnknown,omitempty"`
}

// hotCount is one key's revisions counted.
type hotCount struct {
	revs, last int64
	deleted    bool
}

// count adds a revision at rev (a deletion when deleted).
func (h *hotCount) count(rev int64, deleted bool) {
	h.revs++
	if rev >= h.last {
		h.last, h.deleted = rev, deleted
	}
}

// eachCount hands fn each key's count of counts.
func eachCount(counts map[string]*hotCount) func(fn func(key string, revs, last int64, deleted bool)) {
	return func(fn func(key string, revs, last int64, deleted bool)) {
		for k, c := range counts {
			fn(k, c.revs, c.last, c.deleted)
		}
	}
}

// colderKey orders keys by revisions counted, ties by the greater key.
func colderKey(a, b HotKey) bool {
	if a.Revisions != b.Revisions {
		return a.Revisions < b.Revisions
	}
	return a.Key > b.Key
}

// topHot selects the n keys each hands over (with its revisions counted,
// the newest, and whether that is a deletion) with the most revisions,
// most first, ties in key order.
func topHot(n int, prefix string, each func(fn func(key string, revs, last int64, deleted bool))) *HotKeys {
	hk := &HotKeys{}
	top := topN[HotKey]{n: n, less: colderKey}
	each(func(key string, revs, last int64, deleted bool) {
		if revs == 0 {
			return
		}
		hk.KeysChanged++
		hk.Revisions += revs
		top.add(HotKey{Key: key, Revisions: revs, LastRevision: last, Deleted: deleted})
	})
	hk.Keys = top.sorted()
	for i := range hk.Keys {
		k := &hk.Keys[i]
		k.Resource = GroupOf(prefix, k.Key)
		if _, ns, _, ok := resource.ParseKey(prefix, k.Key); ok {
			k.Namespace = ns
		}
	}
	return hk
}

// getter reads one key at a revision (store.Reader's Get).
type getter interface {
	Get(ctx context.Context, key string, rev int64) (*store.KeyValue, error)
}

// ValueOpener decrypts and decodes a stored value (kubevalue.Codec.Open).
type ValueOpener func(ctx context.Context, kv store.KeyValue) (map[string]any, error)

// managers reads, for each hot key, the field manager of its last write:
// its value at LastRevision (a put), read from r and opened with open. A db
// file's values are sought by revision (store.Bolt.ValuesOf), not found
// by a walk of the file per key.
func (hk *HotKeys) managers(ctx context.Context, r getter, prefix string, open ValueOpener) {
	if b, ok := r.(*store.Bolt); ok && len(hk.Keys) > 0 {
		held := map[string][]byte{}
		var want []store.KeyValue
		for _, k := range hk.Keys {
			if !k.Deleted {
				want = append(want, store.KeyValue{Key: k.Key, ModRevision: k.LastRevision})
			}
		}
		err := b.ValuesOf(ctx, want, nil, func(kv *store.KeyValue) error {
			held[kv.Key] = append([]byte(nil), kv.Value...)
			return nil
		})
		r = heldValues{held, err}
	}
	for i := range hk.Keys {
		k := &hk.Keys[i]
		switch {
		case open == nil:
			k.ManagerUnknown = "values not read"
			continue
		case k.Deleted:
			k.ManagerUnknown = "the last write is a deletion, which records no manager"
			continue
		}
		if _, _, _, ok := resource.ParseKey(prefix, k.Key); !ok {
			k.ManagerUnknown = "not an object"
			continue
		}
		kv, err := r.Get(ctx, k.Key, k.LastRevision)
		if err != nil {
			k.ManagerUnknown = fmt.Sprintf("revision %d not read: %v", k.LastRevision, notReadReason(err))
			continue
		}
		content, err := open(ctx, *kv)
		if err != nil {
			k.ManagerUnknown = fmt.Sprintf("revision %d not read: %v", k.LastRevision, notReadReason(err))
			continue
		}
		k.LastWrite, k.ManagerUnknown = NewestManager(content)
	}
}

// notReadReason says why a value was not read, without quoting it (a
// Secret's bytes are never shown).
func notReadReason(err error) string {
	switch {
	case errors.Is(err, store.ErrCompacted):
		return "compacted"
	case errors.Is(err, store.ErrNotFound):
		return "not held"
	case errors.Is(err, codec.ErrEncrypted):
		return "encrypted at rest, no usable key"
	}
	return "undecodable or unreachable"
}

// NewestManager is the field manager of content's metadata.managedFields
// entry with the newest time: the apiserver dates an entry when its
// manager changes a field it owns, so the newest is the manager of the
// last write that changed a tracked field. When it cannot tell it returns
// nil and why: no managedFields, no entry dated, or several entries dated
// the same second (named: either may have made the last write).
func NewestManager(content map[string]any) (*FieldManager, string) {
	entries := managedEntries(content)
	if len(entries) == 0 {
		return nil, "no managedFields"
	}
	if fm := changeWriter(nil, content); fm != nil {
		return fm, ""
	}
	var newest time.Time
	var names []string
	for _, e := range entries {
		t, err := time.Parse(time.RFC3339, e.Time)
		switch {
		case err != nil:
		case t.After(newest):
			newest, names = t, []string{FieldManager{Manager: e.Manager, Operation: e.Operation, Subresource: e.Subresource}.String()}
		case t.Equal(newest):
			names = append(names, FieldManager{Manager: e.Manager, Operation: e.Operation, Subresource: e.Subresource}.String())
		}
	}
	if len(names) < 2 {
		return nil, "no managedFields entry is dated"
	}
	sort.Strings(names)
	return nil, "managers dated the same second: " + strings.Join(names, ", ")
}

// SinceError is a --since revision the source cannot count from: ahead
// of its revision, or compacted (then it wraps store.ErrCompacted).
type SinceError struct {
	Since, Revision, Oldest int64
	Compacted               bool
	Source                  string
}

func (e *SinceError) Error() string {
	if e.Compacted {
		return fmt.Sprintf("--since %d: revision %d is compacted: the oldest revision %s holds is %d", e.Since, e.Since, e.Source, e.Oldest)
	}
	return fmt.Sprintf("--since %d: %s is at revision %d", e.Since, e.Source, e.Revision)
}

// Unwrap is store.ErrCompacted for a compacted revision.
func (e *SinceError) Unwrap() error {
	if e.Compacted {
		return store.ErrCompacted
	}
	return nil
}

// Hint says which revisions may be given.
func (e *SinceError) Hint() string {
	if e.Compacted {
		return fmt.Sprintf("give a --since from %d to %d; older revisions are in a snapshot or member db taken before the compaction (--db FILE)", e.Oldest, e.Revision)
	}
	return fmt.Sprintf("give a --since at or below %d", e.Revision)
}

// liveHot counts the changes etcd's watch replays under prefix from since
// to the current revision rev.
func liveHot(ctx context.Context, w store.Watcher, prefix string, since, rev int64, top int, progress Progress) (*HotKeys, error) {
	counts := map[string]*hotCount{}
	var n int64
	err := w.Watch(ctx, prefix, store.WatchOptions{Prefix: true, From: since, Until: rev, NoPrev: true}, func(ev store.WatchEvent) error {
		c := counts[ev.KV.Key]
		if c == nil {
			c = &hotCount{}
			counts[ev.KV.Key] = c
		}
		c.count(ev.KV.ModRevision, ev.Deleted)
		if n++; progress != nil {
			progress(n, int64(len(ev.KV.Value)), ev.KV.ModRevision)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count the changes since revision %d: %w", since, err)
	}
	hk := topHot(top, prefix, eachCount(counts))
	hk.Counted, hk.Since, hk.ToRevision = "changes replayed by etcd's watch", since, rev
	return hk, nil
}

// ArchiveHotKeys counts the revisions a (an archive that is not a db
// file: a write-ahead log's replay) holds under prefix from since (0:
// every one) and returns the top keys with the manager of their last
// write.
func ArchiveHotKeys(ctx context.Context, a store.Archive, prefix string, since, rev int64, top int, open ValueOpener) (*HotKeys, error) {
	counts := map[string]*hotCount{}
	err := a.ScanRevisions(ctx, prefix, func(ev store.Event) error {
		if ev.KV.ModRevision < since {
			return nil
		}
		c := counts[ev.KV.Key]
		if c == nil {
			c = &hotCount{}
			counts[ev.KV.Key] = c
		}
		c.count(ev.KV.ModRevision, ev.Deleted)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count the revisions held: %w", err)
	}
	hk := topHot(top, prefix, eachCount(counts))
	hk.Counted, hk.Since, hk.ToRevision = "revisions the log establishes", since, rev
	hk.managers(ctx, a, prefix, open)
	return hk, nil
}

// heldValues are values read beforehand, by key, served as a Reader's Get
// for managers (err: why they could not be read).
type heldValues struct {
	values map[string][]byte
	err    error
}

// Get returns key's value held, at rev.
func (h heldValues) Get(_ context.Context, key string, rev int64) (*store.KeyValue, error) {
	if h.err != nil {
		return nil, h.err
	}
	v, ok := h.values[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	return &store.KeyValue{Key: key, ModRevision: rev, Value: v}, nil
}
