package wal

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/etcdpvc/etcdpvc/store"
)

// PastIncarnation is an incarnation of a key that a deletion ended and
// that another followed: for an apiserver's object, another object under
// the same name, with a new uid. ScanLatest gives the newest only.
type PastIncarnation struct {
	// KV is its last live state the source establishes, only Key when
	// that is not held.
	KV store.KeyValue
	// DeleteRevision is the revision of the deletion that ended it, -1
	// when not established; DeleteIndex is its raft entry.
	DeleteRevision int64
	DeleteIndex    uint64
	// RecreateRevision is the create revision of the incarnation that
	// followed it, -1 when not established; RecreateIndex is the raft
	// entry that created it, 0 when the db holds it and no write of the
	// log establishes it.
	RecreateRevision int64
	RecreateIndex    uint64
}

// Incarnations is what a source that tells a key's incarnations apart can
// do beyond Archive. Callers test for it with a type assertion.
type Incarnations interface {
	// PastIncarnations calls fn for every past incarnation of the keys
	// under prefix, in key order and, for one key, oldest first.
	PastIncarnations(ctx context.Context, prefix string, fn func(PastIncarnation) error) error
}

var _ Incarnations = (*WAL)(nil)

// PastIncarnations calls fn for every incarnation of a key under prefix
// that a deletion the log establishes ended and that another followed: a
// write the log applied after the deletion, or, for a deletion among the
// entries the db holds, the db's live key. Writes whose outcome is not
// established end or start no incarnation.
func (w *WAL) PastIncarnations(ctx context.Context, prefix string, fn func(PastIncarnation) error) error {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("past incarnations: prefix %q must end in \"/\"", prefix)
	}
	for _, k := range w.keysUnder(prefix) {
		if err := ctx.Err(); err != nil {
			return err
		}
		// The incarnation a deletion ended is read only when a new one
		// follows it.
		live, del, delLive := int32(-1), int32(-1), int32(-1)
		for _, id := range w.writesOf(k) {
			x := &w.r.all[id]
			if x.mod == 0 && !w.isUnplaced(id) {
				continue // not applied, or not established
			}
			index := w.r.entries[x.entry].index
			if x.deleted {
				del, delLive, live = id, live, -1
				continue
			}
			if del >= 0 {
				ended, err := w.endedBy(ctx, k, del, delLive)
				if err != nil {
					return err
				}
				ended.RecreateRevision, ended.RecreateIndex = -1, index
				if x.mod != 0 && x.create != 0 {
					ended.RecreateRevision = x.create
				}
				if err := fn(*ended); err != nil {
					return err
				}
				del = -1
			}
			live = id
		}
		if del < 0 || w.base == nil || w.r.entries[w.r.all[del].entry].index > w.cov.ConsistentIndex {
			continue
		}
		// A deletion the db holds: a live key there was created again.
		cur, ok := w.baseState(k)
		delRev := w.r.all[del].mod
		switch {
		case !ok:
			continue
		case delRev > 0 && cur.ModRevision <= delRev:
			continue
		}
		ended, err := w.endedBy(ctx, k, del, delLive)
		if err != nil {
			return err
		}
		ended.RecreateRevision = -1
		if cur.CreateRevision > ended.DeleteRevision && ended.DeleteRevision > 0 {
			ended.RecreateRevision = cur.CreateRevision
		}
		if err := fn(*ended); err != nil {
			return err
		}
	}
	return nil
}

// endedBy is the incarnation of key that deletion del ended; live is the
// key's last live write before it, -1 for none.
func (w *WAL) endedBy(ctx context.Context, key string, del, live int32) (*PastIncarnation, error) {
	x := &w.r.all[del]
	p := &PastIncarnation{KV: store.KeyValue{Key: key}, DeleteRevision: x.mod, DeleteIndex: w.r.entries[x.entry].index}
	if x.mod == 0 {
		p.DeleteRevision = -1
	}
	switch {
	case live >= 0:
		kv, err := w.kv(live, true)
		if err != nil {
			return nil, err
		}
		p.KV = *kv
	case w.base != nil && x.mod > 0 && w.before(key, del) < 0:
		// Its state before the log's first write of it.
		kv, err := w.Get(ctx, key, x.mod-1)
		switch {
		case err == nil:
			p.KV = *kv
		case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrCompacted) && !errors.Is(err, ErrUndetermined):
			return nil, err
		}
	}
	return p, nil
}
