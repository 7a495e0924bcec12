package flows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"

	"github.com/etcdpvc/etcdpvc/clock"
	"github.com/etcdpvc/etcdpvc/store"
)

// heldRevisions names the writes a revision clock reads, in its notes.
const heldRevisions = "the revisions held"

// RevisionClock reads the revisions s's store holds from revision from on
// (0: all; a compacted one: from the oldest held) into a clock.Clock over
// revisions: a db file's (read by revision, the values of the writes the
// clock samples read when it asks for them), or a live etcd's (replayed by
// its watch up to its current revision). It is nil for a store that can
// be read neither way (a log, a kine database file).
func (s *Session) RevisionClock(ctx context.Context, from int64) (*clock.Clock[int64], error) {
	if s.WAL != nil {
		return nil, nil
	}
	src := &revisionTimes{ctx: ctx, s: s, lastKey: map[string]int32{}, lastHash: map[uint64]int32{}, cache: map[int]clock.Write[int64]{}}
	prefix := s.Options.Prefix + "/"
	var err error
	switch r := s.Reader.(type) {
	case *store.Bolt:
		src.db, src.compacted = r, r.CompactRevision()
		if from > src.compacted+1 {
			// Not every revision above the compaction is read: a key's
			// first revision read is not known to be its creation.
			src.compacted = math.MaxInt64
		}
		src.prefix, src.seed = []byte(prefix), maphash.MakeSeed()
		// About one write a revision.
		n := max(r.Meta().Revision-max(from, r.CompactRevision()), 0)
		src.rev, src.deleted, src.before = make([]int64, 0, n), make([]bool, 0, n), make([]int32, 0, n)
		err = r.Revisions(ctx, from, r.Meta().Revision, func(rev int64, key []byte, tombstone bool, _ []byte) error {
			if bytes.HasPrefix(key, src.prefix) {
				src.addHeld(rev, key, tombstone)
			}
			return nil
		})
	case store.Watcher:
		var info store.Info
		if info, err = s.Reader.Info(ctx); err != nil {
			break
		}
		if from <= info.CompactRevision {
			from = info.CompactRevision + 1
		}
		err = r.Watch(ctx, prefix, store.WatchOptions{Prefix: true, From: from, Until: info.Revision, NoPrev: true}, func(ev store.WatchEvent) error {
			src.addLive(ev)
			return nil
		})
	default:
		return nil, nil
	}
	if err == nil {
		// A watch ended by Ctrl-C ends without an error: the clock is
		// not whole.
		err = ctx.Err()
	}
	var c *clock.Clock[int64]
	if err == nil {
		c, err = clock.New[int64](src), src.err
	}
	if err != nil {
		return nil, fmt.Errorf("read the times of the revisions held: %w", err)
	}
	return c, nil
}

// readsRevisions reports whether RevisionClock reads s's store (a db
// file or a live etcd, without a log).
func (s *Session) readsRevisions() bool {
	if s.WAL != nil {
		return false
	}
	switch s.Reader.(type) {
	case *store.Bolt, store.Watcher:
		return true
	}
	return false
}

// revisionTimes is the revisions a db or etcd holds as a clock.Source. Of
// a db, only each revision's place is kept as it is walked (a hash of its
// key, not the key); the writes the clock asks for are read again by
// revision. Of a live etcd, each write's times are read as it comes.
type revisionTimes struct {
	ctx context.Context
	s   *Session
	// rev, deleted and before are each revision's: its main revision,
	// whether it is a deletion, the position of its key's revision before
	// it (-1: none held).
	rev     []int64
	deleted []bool
	before  []int32
	// live holds a live etcd's writes, their times read.
	live    []clock.Write[int64]
	lastKey map[string]int32
	// db, when set, is read for a write when the clock asks for it;
	// compacted is its compaction revision, prefix the keys read, lastHash
	// the position of each key's newest revision so far by its hash.
	db        *store.Bolt
	compacted int64
	prefix    []byte
	seed      maphash.Seed
	lastHash  map[uint64]int32
	cache     map[int]clock.Write[int64]
	err       error
}

// place appends a revision whose key's revision before it is at before
// (-1: none).
func (t *revisionTimes) place(rev int64, deleted bool, before int32) {
	t.rev, t.deleted, t.before = append(t.rev, rev), append(t.deleted, deleted), append(t.before, before)
}

// addHeld places a db's revision by its key's hash.
func (t *revisionTimes) addHeld(rev int64, key []byte, deleted bool) {
	h := maphash.Bytes(t.seed, key)
	before, seen := t.lastHash[h]
	if !seen {
		before = -1
	}
	t.lastHash[h] = int32(len(t.rev))
	t.place(rev, deleted, before)
}

// addLive places a live etcd's revision and reads its times.
func (t *revisionTimes) addLive(ev store.WatchEvent) {
	before, seen := t.lastKey[ev.KV.Key]
	if !seen {
		before = -1
	}
	t.lastKey[ev.KV.Key] = int32(len(t.rev))
	t.place(ev.KV.ModRevision, ev.Deleted, before)
	w := clock.Write[int64]{Index: ev.KV.ModRevision, Key: ev.KV.Key, Deleted: ev.Deleted, Created: !ev.Deleted && ev.KV.Version == 1}
	if !ev.Deleted {
		w.Times, w.Read = t.s.valueTimes(t.ctx, ev.KV.Key, ev.KV.Value)
	}
	t.live = append(t.live, w)
}

func (t *revisionTimes) Len() int { return len(t.rev) }

func (t *revisionTimes) Index(i int) int64 { return t.rev[i] }

// Before is the position of the revision before i of i's key. Of a db,
// where keys were told apart by their hashes, the two keys are compared.
func (t *revisionTimes) Before(i int) (int, bool) {
	b := int(t.before[i])
	if b < 0 || t.db != nil && t.Write(b).Key != t.Write(i).Key {
		return 0, false
	}
	return b, true
}

// Write is revision i. A db's is read again by its revision, once: a
// revision read before its key's revision before it is a creation when
// that is a deletion, or when none is held and it lies above the
// compaction revision (every revision above it is held, and each key
// then live kept its newest one at or below it). A value that cannot be
// read is one whose times are unknown; the first error reading the db
// is kept.
func (t *revisionTimes) Write(i int) clock.Write[int64] {
	if t.db == nil {
		return t.live[i]
	}
	if w, ok := t.cache[i]; ok {
		return w
	}
	rev := t.rev[i]
	w := clock.Write[int64]{Index: rev, Deleted: t.deleted[i]}
	if b := t.before[i]; !w.Deleted {
		w.Created = b >= 0 && t.deleted[b] || b < 0 && rev > t.compacted
	}
	// The revision's writes under the prefix before i's, in this
	// transaction.
	skip := 0
	for j := i - 1; j >= 0 && t.rev[j] == rev; j-- {
		skip++
	}
	err := t.db.Revisions(t.ctx, rev, rev, func(_ int64, key []byte, _ bool, value []byte) error {
		if !bytes.HasPrefix(key, t.prefix) {
			return nil
		}
		if skip--; skip >= 0 {
			return nil
		}
		w.Key = string(key)
		if !w.Deleted {
			w.Times, w.Read = t.s.valueTimes(t.ctx, w.Key, value)
		}
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) && t.err == nil && !errors.Is(err, context.Canceled) {
		t.err = err
	}
	t.cache[i] = w
	return w
}

// errStop ends a walk of a db's revisions early.
var errStop = errors.New("stop")
