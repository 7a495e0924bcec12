package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // kine's own pure-Go SQLite driver: the binary stays static
)

// sqliteHeader is how every SQLite database file begins.
const sqliteHeader = "SQLite format 3\x00"

// IsSQLite reports whether the file at path begins with SQLite's header,
// as kine's state.db does (an etcd db file never does).
func IsSQLite(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(sqliteHeader))
	_, err = io.ReadFull(f, b)
	return err == nil && string(b) == sqliteHeader
}

// ErrKineDB means the source is kine's SQLite database: what was asked
// reads or writes an etcd db file (its bbolt pages, its members, a write-
// ahead log, a copy to edit), which kine's table does not have.
var ErrKineDB = errors.New("the --db file is kine's SQLite database (k3s's state.db), not an etcd db")

// KineDBHint is the remedy of ErrKineDB.
const KineDBHint = "kine's database is read offline only (ls, get, history, ls --deleted, recover --dry-run, dump); to change an object, write through kine's etcd API: --endpoints unix:///var/lib/rancher/k3s/server/kine.sock"

// kineCompactKey is the row kine keeps its compaction revision in (in
// prev_revision); kineFillPrefix names the rows kine writes to fill a
// revision a failed insert skipped. Neither is a key kine serves.
const (
	kineCompactKey = "compact_rev_key"
	kineFillPrefix = "gap-"
)

// KineDB reads kine's table from an SQLite file, read-only: table kine, a
// row per revision (id), name the key, created 1 on a create, deleted 1
// on a delete, create_revision the incarnation's first revision (on rows
// that do not create it), prev_revision the key's previous row, lease,
// value. Compaction deletes the rows later rows replace and the deletes at
// or below the revision kept in compact_rev_key.
//
// Every read asks the database afresh and sees one state of it, pinned to
// the newest revision read at open: a live file kine keeps writing is read
// without a long transaction that would hold back its checkpoints.
type KineDB struct {
	db   *sql.DB
	path string
	live bool
	rev  int64
}

var _ Archive = (*KineDB)(nil)

// OpenKineDB opens kine's SQLite database at path read-only. A file with a
// -wal beside it may be in use by a running kine: it is opened read-only,
// as one more WAL reader, which takes no lock a writer waits for. Without
// one it is a copy or a stopped server's file and is opened immutable,
// touching nothing beside it.
func OpenKineDB(path string) (*KineDB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open kine database %s: %w", path, err)
	}
	_, werr := os.Stat(abs + "-wal")
	live := werr == nil
	q := url.Values{"mode": {"ro"}}
	if !live {
		q.Set("immutable", "1")
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: abs, RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("open kine database %s: %w", path, err)
	}
	k := &KineDB{db: db, path: path, live: live}
	if err := db.QueryRow(`SELECT COALESCE(MAX(id), 0) FROM kine`).Scan(&k.rev); err != nil {
		db.Close()
		return nil, fmt.Errorf("open kine database %s: read table kine: %w", path, err)
	}
	return k, nil
}

// Path is the file the database was opened from.
func (k *KineDB) Path() string { return k.path }

// Live reports whether the file had a write-ahead log beside it when it
// was opened: a running kine may be writing it.
func (k *KineDB) Live() bool { return k.live }

// Close closes the database.
func (k *KineDB) Close() error {
	if err := k.db.Close(); err != nil {
		return fmt.Errorf("close kine database %s: %w", k.path, err)
	}
	return nil
}

// compactRevision is kine's compaction revision, read afresh: a running
// kine may compact between two reads.
func (k *KineDB) compactRevision(ctx context.Context) (int64, error) {
	var c sql.NullInt64
	err := k.db.QueryRowContext(ctx, `SELECT MAX(prev_revision) FROM kine WHERE name = ?`, kineCompactKey).Scan(&c)
	if err != nil {
		return 0, fmt.Errorf("kine database %s: read the compaction revision: %w", k.path, err)
	}
	return c.Int64, nil
}

// Info describes the file: its path, the revision it was opened at and
// kine's compaction revision.
func (k *KineDB) Info(ctx context.Context) (Info, error) {
	c, err := k.compactRevision(ctx)
	return Info{Description: k.path, Revision: k.rev, CompactRevision: c}, err
}

// readRevision checks a requested revision (0: the one opened at).
func (k *KineDB) readRevision(ctx context.Context, rev int64) (int64, error) {
	switch {
	case rev == 0:
		return k.rev, nil
	case rev < 0:
		return 0, fmt.Errorf("revision %d: must not be negative", rev)
	case rev > k.rev:
		return 0, fmt.Errorf("revision %d is in the future (current revision %d)", rev, k.rev)
	}
	c, err := k.compactRevision(ctx)
	if err != nil {
		return 0, err
	}
	if rev < c {
		return 0, fmt.Errorf("revision %d (compacted at %d): %w", rev, c, ErrCompacted)
	}
	return rev, nil
}

// kineInternal reports whether name is a row kine keeps for itself.
func kineInternal(name string) bool {
	return name == kineCompactKey || strings.HasPrefix(name, kineFillPrefix)
}

// nameRange is the SQL condition and arguments selecting the names
// under prefix, which must be "" or end in "/" (the Reader.List rule).
func nameRange(prefix string) (string, []any, error) {
	if _, err := prefixMatch(prefix); err != nil {
		return "", nil, err
	}
	if prefix == "" {
		return "1", nil, nil
	}
	// Names compare as bytes; "/" + 1 is "0", so the range ends before
	// the first name past the prefix.
	end := prefix[:len(prefix)-1] + "0"
	return "name >= ? AND name < ?", []any{prefix, end}, nil
}

// kineRow is one row of kine's table.
type kineRow struct {
	id, createRev, prevRev, lease int64
	name                          string
	created, deleted              bool
	value                         []byte
}

// kineColumns are the columns scan reads, in its order.
const kineColumns = "id, name, created, deleted, create_revision, prev_revision, lease, value"

// scanRows calls fn with every row of rows, then closes them.
func scanRows(ctx context.Context, rows *sql.Rows, fn func(r *kineRow) error) error {
	defer rows.Close()
	for n := 0; rows.Next(); n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var r kineRow
		var createRev, prevRev, lease sql.NullInt64
		var created, deleted sql.NullBool
		if err := rows.Scan(&r.id, &r.name, &created, &deleted, &createRev, &prevRev, &lease, &r.value); err != nil {
			return err
		}
		r.created, r.deleted = created.Bool, deleted.Bool
		r.createRev, r.prevRev, r.lease = createRev.Int64, prevRev.Int64, lease.Int64
		if kineInternal(r.name) {
			continue
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// kv is the row as the key's state after it, as kine serves it: a
// create's create revision is its own, and kine counts no versions, so
// Version is 1 on the create and 0 (not known) after.
func (r *kineRow) kv() *KeyValue {
	kv := &KeyValue{Key: r.name, Value: r.value, CreateRevision: r.createRev, ModRevision: r.id, Lease: r.lease}
	if r.created {
		kv.CreateRevision = r.id
	}
	if kv.CreateRevision == kv.ModRevision {
		kv.Version = 1
	}
	if kv.Value == nil {
		kv.Value = []byte{}
	}
	return kv
}

// event is the row as an Event.
func (r *kineRow) event() Event {
	if r.deleted {
		return Event{KV: KeyValue{Key: r.name, ModRevision: r.id}, Deleted: true}
	}
	return Event{KV: *r.kv()}
}

// query runs q and calls fn with each row kine serves, wrapping errors
// with what.
func (k *KineDB) query(ctx context.Context, what string, fn func(r *kineRow) error, q string, args ...any) error {
	rows, err := k.db.QueryContext(ctx, q, args...)
	if err == nil {
		err = scanRows(ctx, rows, fn)
	}
	if err != nil {
		return fmt.Errorf("%s: kine database %s: %w", what, k.path, err)
	}
	return nil
}

// Get returns key's newest row at revision rev (0: the current one).
func (k *KineDB) Get(ctx context.Context, key string, rev int64) (*KeyValue, error) {
	at, err := k.readRevision(ctx, rev)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	var found *KeyValue
	err = k.query(ctx, "get "+key, func(r *kineRow) error {
		if !r.deleted {
			found = r.kv()
		}
		return nil
	}, `SELECT `+kineColumns+` FROM kine WHERE name = ? AND id <= ? ORDER BY id DESC LIMIT 1`, key, at)
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("get %s at revision %d: %w", key, at, ErrNotFound)
	}
	return found, nil
}

// newest calls fn with the newest row at or below revision at of every
// name under prefix, in name order; keysOnly leaves the values out.
func (k *KineDB) newest(ctx context.Context, what, prefix string, at int64, keysOnly bool, fn func(r *kineRow) error) error {
	cond, args, err := nameRange(prefix)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	cols := "kv." + strings.ReplaceAll(kineColumns, ", ", ", kv.")
	if keysOnly {
		cols = strings.Replace(cols, "kv.value", "NULL", 1)
	}
	q := `SELECT ` + cols + ` FROM kine AS kv JOIN (SELECT MAX(id) AS mid FROM kine WHERE ` + cond +
		` AND id <= ? GROUP BY name) AS m ON kv.id = m.mid ORDER BY kv.name`
	return k.query(ctx, what+" "+prefix, fn, q, append(args, at)...)
}

// List calls fn with every key under prefix live at opts.Revision, in key
// order, from one query.
func (k *KineDB) List(ctx context.Context, prefix string, opts ListOptions, fn func(*KeyValue) error) (int64, error) {
	at, err := k.readRevision(ctx, opts.Revision)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	err = k.newest(ctx, "list", prefix, at, opts.KeysOnly, func(r *kineRow) error {
		if r.deleted {
			return nil
		}
		kv := r.kv()
		if opts.KeysOnly {
			kv.Value = nil
		}
		return fn(kv)
	})
	return at, err
}

// History calls fn for every row of key the table still holds, oldest
// first; a delete is a Deleted event.
func (k *KineDB) History(ctx context.Context, key string, fn func(Event) error) (HistoryInfo, error) {
	c, err := k.compactRevision(ctx)
	info := HistoryInfo{CompactRevision: c, Revision: k.rev}
	if err != nil {
		return info, fmt.Errorf("history %s: %w", key, err)
	}
	err = k.query(ctx, "history "+key, func(r *kineRow) error { return fn(r.event()) },
		`SELECT `+kineColumns+` FROM kine WHERE name = ? AND id <= ? ORDER BY id`, key, k.rev)
	return info, err
}

// ScanRevisions calls fn for every row under prefix, in revision order.
func (k *KineDB) ScanRevisions(ctx context.Context, prefix string, fn func(Event) error) error {
	cond, args, err := nameRange(prefix)
	if err != nil {
		return fmt.Errorf("scan revisions: %w", err)
	}
	return k.query(ctx, "scan revisions "+prefix, func(r *kineRow) error { return fn(r.event()) },
		`SELECT `+kineColumns+` FROM kine WHERE `+cond+` AND id <= ? ORDER BY id`, append(args, k.rev)...)
}

// ScanLatest calls fn once per key under prefix with its newest row; a
// key whose newest row is a delete only with includeDeleted, with the row
// the delete replaced (its prev_revision) when the table still holds it.
func (k *KineDB) ScanLatest(ctx context.Context, prefix string, includeDeleted bool, fn func(kv *KeyValue, deleted bool, deleteRev int64) error) error {
	return k.newest(ctx, "scan", prefix, k.rev, false, func(r *kineRow) error {
		if !r.deleted {
			return fn(r.kv(), false, 0)
		}
		if !includeDeleted {
			return nil
		}
		prev, err := k.replaced(ctx, r)
		if err != nil {
			return err
		}
		return fn(prev, true, r.id)
	})
}

// ScanDeleted calls fn for every key under prefix whose newest row is a
// delete, with the row it replaced.
func (k *KineDB) ScanDeleted(ctx context.Context, prefix string, fn func(kv *KeyValue, deleteRev int64) error) error {
	var dels []kineRow
	err := k.newest(ctx, "scan deleted", prefix, k.rev, true, func(r *kineRow) error {
		if r.deleted {
			dels = append(dels, *r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range dels {
		prev, err := k.replaced(ctx, &dels[i])
		if err != nil {
			return err
		}
		if err := fn(prev, dels[i].id); err != nil {
			return err
		}
	}
	return nil
}

// replaced is the live row the delete del replaced, or a KeyValue with
// only its key when the table no longer holds it.
func (k *KineDB) replaced(ctx context.Context, del *kineRow) (*KeyValue, error) {
	prev := &KeyValue{Key: del.name}
	err := k.query(ctx, "read "+del.name, func(r *kineRow) error {
		if !r.deleted && r.name == del.name {
			prev = r.kv()
		}
		return nil
	}, `SELECT `+kineColumns+` FROM kine WHERE id = ?`, del.prevRev)
	return prev, err
}
