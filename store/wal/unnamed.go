package wal

import (
	"context"
	"errors"
	"fmt"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// unnamedDeleter is an entry before the db that may have deleted keys
// the log never names, entry its position in the log.
type unnamedDeleter struct {
	UnnamedDeletion
	entry int32
}

// unnamedDeleters lists the prefix entries that may have deleted keys the
// log never names: those step says so of, over a state that knows the
// leases the log grants and no key.
func unnamedDeleters(prefix []pxEntry, keys *pxKeys) []unnamedDeleter {
	var out []unnamedDeleter
	ps := newPxState(keys)
	for i := range prefix {
		pe := &prefix[i]
		if req := pe.request(keys.names); req == nil || !step(ps, req, pe.index).unnamed {
			continue
		}
		u := unnamedDeleter{UnnamedDeletion{Index: pe.index, Kind: pe.kind, From: pe.from, End: pe.end}, int32(i)}
		if !pe.ranged {
			u.Lease = pe.id
		}
		out = append(out, u)
	}
	return out
}

// UnnamedDeletion is an entry the db holds that may have deleted keys no
// source names: a range delete, or the revoke of a lease granted before
// the log, whose deletions the db's compaction removed. A key the log
// never writes and the db does not hold may have existed until then.
type UnnamedDeletion struct {
	Index uint64       `json:"index"`
	Kind  walfile.Kind `json:"kind"`
	// From and End bound a range delete's keys, End "\x00" for every key
	// from From on; Lease is a revoke's lease.
	From  string `json:"from,omitempty"`
	End   string `json:"end,omitempty"`
	Lease int64  `json:"lease,omitempty"`
}

// Covers reports whether key may be one of the keys u deleted.
func (u UnnamedDeletion) Covers(key string) bool {
	return u.Lease != 0 || key >= u.From && (u.End == "\x00" || key < u.End)
}

// Under reports whether u may have deleted keys under prefix.
func (u UnnamedDeletion) Under(prefix string) bool {
	if u.Lease != 0 || prefix == "" {
		return true
	}
	end := prefixEnd(prefix)
	return (end == "" || u.From < end) && (u.End == "\x00" || u.End > prefix)
}

// UnderPrefix reports whether u's range is every key under its From.
func (u UnnamedDeletion) UnderPrefix() bool {
	return u.End == prefixEnd(u.From)
}

// prefixEnd is the end of the range of keys starting with prefix, "" for
// none.
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// unnamedDeletions lists the unnamed deleters whose deletions no source
// names: not established to have failed or deleted nothing, at a revision
// the db may have compacted. n is the number of entries the db holds.
func (w *WAL) unnamedDeletions(n int) []UnnamedDeletion {
	var out []UnnamedDeletion
	compacted := w.base.CompactRevision()
	for _, u := range w.unnamed {
		e := w.r.entry(u.entry)
		if e.Outcome == OutcomeNotApplied || e.Outcome == OutcomeSkipped {
			continue
		}
		// Each later entry made one revision at most.
		lowest := w.cov.DBRevision - int64(n-1-int(u.entry))
		if e.Revision != 0 {
			lowest = e.Revision
		}
		if lowest > compacted {
			continue
		}
		if e.Outcome == OutcomeApplied && e.Revision == 0 && w.prefixRevisionKnown(e.Index) {
			continue // it made no revision: it deleted nothing
		}
		out = append(out, u.UnnamedDeletion)
	}
	return out
}

// prefixRevisionKnown reports whether the revision of the prefix's entry
// at index is established, 0 included.
func (w *WAL) prefixRevisionKnown(index uint64) bool {
	if !w.prefixResolved() {
		return false
	}
	for _, u := range w.cov.PrefixUnknown {
		if index >= u.FromIndex && index <= u.ToIndex {
			return false
		}
	}
	return true
}

// UnnamedCovering returns the first of the coverage's unnamed deletions
// that may have deleted key, and whether there is one.
func (c WALCoverage) UnnamedCovering(key string) (UnnamedDeletion, bool) {
	for _, u := range c.Unnamed {
		if u.Covers(key) {
			return u, true
		}
	}
	return UnnamedDeletion{}, false
}

// UnnamedUnder lists the coverage's unnamed deletions that may have
// deleted keys under prefix.
func (c WALCoverage) UnnamedUnder(prefix string) []UnnamedDeletion {
	var out []UnnamedDeletion
	for _, u := range c.Unnamed {
		if u.Under(prefix) {
			out = append(out, u)
		}
	}
	return out
}

// unnamedOpen says why the state of key, which the log never writes and
// the db does not hold, is not established at a point of the log: an
// entry that may have deleted it is not established to be before the
// point, as before reports.
func (w *WAL) unnamedOpen(key string, before func(WALEntry) bool) string {
	for _, u := range w.unnamed {
		e := w.r.entry(u.entry)
		if !u.Covers(key) || e.Outcome == OutcomeNotApplied || e.Outcome == OutcomeSkipped || before(e) {
			continue
		}
		return fmt.Sprintf("entry %d (%s), which may have deleted it, is not established to be before it; the log never writes it, so whether it existed then is not established", e.Index, e.Kind)
	}
	return ""
}

// beforeLog returns key as it was before the log's first entry, when the
// log and the db establish it; for a key the log never writes, as it was
// at a point of the log before the db, as unnamedOpen takes it.
func (w *WAL) beforeLog(ctx context.Context, key string, before func(WALEntry) bool) (*store.KeyValue, error) {
	writes := w.writesOf(key)
	if len(writes) == 0 {
		kv, err := w.base.Get(ctx, key, 0)
		if errors.Is(err, store.ErrNotFound) {
			if why := w.unnamedOpen(key, before); why != "" {
				return nil, fmt.Errorf("%s: %w", why, ErrUndetermined)
			}
		}
		return kv, err
	}
	return nil, fmt.Errorf("its value before the log's first write of it is not in the log: %w", ErrUndetermined)
}
