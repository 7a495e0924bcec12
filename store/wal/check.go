package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/etcdpvc/etcdpvc/store"
)

// An operator often has an older snapshot of the member and its current
// db. The log replays exactly over the older one when its consistent
// index lies inside the log; the current db then checks that replay: at
// its consistent index the replay must hold its revision, every key's
// state, and the value of every key the replay wrote. A disagreement
// means one of the three is not what it claims, and nothing is answered
// from them.

// ErrCheckFailed means the db given to check the replay disagrees with it
// at its consistent index.
var ErrCheckFailed = errors.New("the replay of the write-ahead log disagrees with the db that checks it")

// WALCheck says what the db that checked the replay established.
type WALCheck struct {
	// DB is the checking db, with its consistent index and revision.
	DB              string
	ConsistentIndex uint64
	Revision        int64
	// Keys counts the keys whose state agreed, Values the values compared.
	Keys, Values int
	// NotChecked, when not empty, says why the replay could not be
	// checked (its revisions were not established at the checking db's
	// consistent index).
	NotChecked string
}

// walChecker compares the replay with the checking db when the replay has
// applied every entry up to that db's consistent index.
type walChecker struct {
	db     *store.Bolt
	result WALCheck
	done   bool
	// written lists the keys the replay wrote before the check, with the
	// write that left each: their values are compared once the log is
	// read (values are read from the log's segments).
	written []checkedValue
}

type checkedValue struct {
	key string
	mod int64 // the key's mod revision in the db
	id  int32
}

func newWALChecker(db *store.Bolt) *walChecker {
	m := db.Meta()
	return &walChecker{db: db, result: WALCheck{DB: db.Path(), ConsistentIndex: m.ConsistentIndex, Revision: m.Revision}}
}

// before is called before the replay applies the entry at index: the
// check runs once, when every entry up to the db's consistent index has
// been applied and none after it.
func (c *walChecker) before(ctx context.Context, index uint64, r *replay) error {
	if c == nil || c.done || index <= c.result.ConsistentIndex {
		return nil
	}
	return c.check(ctx, r)
}

// check compares r's keyspace with the db's.
func (c *walChecker) check(ctx context.Context, r *replay) error {
	c.done = true
	if !r.known {
		c.result.NotChecked = "revisions are not established there: " + r.stopWhy
		return nil
	}
	at := c.result.ConsistentIndex
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: at the db %s's consistent index %d, %s", ErrCheckFailed, c.db.Path(), at, fmt.Sprintf(format, args...))
	}
	if r.rev != c.result.Revision {
		return fail("the replay reached revision %d, the db holds revision %d", r.rev, c.result.Revision)
	}
	n := 0
	_, err := c.db.List(ctx, "", store.ListOptions{KeysOnly: true}, func(kv *store.KeyValue) error {
		s := r.keys[kv.Key]
		if s == nil || !s.exists {
			return fail("the db holds %s (mod revision %d), the replay does not", kv.Key, kv.ModRevision)
		}
		if s.create != kv.CreateRevision || s.mod != kv.ModRevision || s.version != kv.Version || s.lease != kv.Lease {
			return fail("%s: the replay has create revision %d, mod revision %d, version %d, lease %x; the db has %d, %d, %d, %x",
				kv.Key, s.create, s.mod, s.version, s.lease, kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease)
		}
		if s.last >= 0 {
			c.written = append(c.written, checkedValue{kv.Key, kv.ModRevision, s.last})
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	live := 0
	for k, s := range r.keys {
		if s.exists {
			if live++; live > n {
				return fail("the replay holds %s (mod revision %d), the db does not", k, s.mod)
			}
		}
	}
	c.result.Keys = n
	return nil
}

// checkValues compares the values of the keys the replay wrote with the
// db's, once w reads its log; shift is the number of writes prepended to
// the replay's since the check (the entries the base db holds).
func (c *walChecker) checkValues(ctx context.Context, w *WAL, shift int32) error {
	if c == nil || c.result.NotChecked != "" {
		return nil
	}
	for i, v := range c.written {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		got, err := w.value(v.id + shift)
		if err != nil {
			return err
		}
		// A seek to the revision the check found the key at, not a walk
		// of every revision (Bolt.Get).
		dbValue, err := c.db.ValueCopy(v.key, v.mod)
		if err != nil {
			return fmt.Errorf("check %s against the db %s: %w", v.key, c.db.Path(), err)
		}
		if !bytes.Equal(got, dbValue) {
			return fmt.Errorf("%w: at the db %s's consistent index %d, %s: the replay's value (%d bytes) is not the db's (%d bytes)",
				ErrCheckFailed, c.db.Path(), c.result.ConsistentIndex, v.key, len(got), len(dbValue))
		}
	}
	c.result.Values = len(c.written)
	c.written = nil
	return nil
}
