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

// ErrKineDB means the source is kine's database, its SQLite file or its
// table on a PostgreSQL or MySQL server: what was asked reads or writes
// an etcd db file (its bbolt pages, its members, a write-ahead log, a
// copy to edit), which kine's table does not have.
var ErrKineDB = errors.New("the --db is kine's database (k3s's state.db, or its PostgreSQL or MySQL datastore), not an etcd db")

// KineDBHint is the remedy of ErrKineDB.
const KineDBHint = "kine's database is read with --db only (ls, get, history, ls --deleted, recover --dry-run, dump, stats, report, diff); to change an object, write through kine's etcd API: --endpoints unix:///var/lib/rancher/k3s/server/kine.sock"

// kineCompactKey is the row kine keeps its compaction revision in (in
// prev_revision); kineFillPrefix names the rows kine writes to fill a
// revision a failed insert skipped. Neither is a key kine serves.
const (
	kineCompactKey = "compact_rev_key"
	kineFillPrefix = "gap-"
)

// KineDB reads kine's table read-only, from an SQLite file or from a
// PostgreSQL or MySQL server (OpenKineServer): table kine, a row per
// revision (id), name the key, created 1 on a create, deleted 1 on a
// delete, create_revision the incarnation's first revision (on rows that
// do not create it), prev_revision the key's previous row, lease, value.
// Compaction deletes the rows later rows replace and the deletes at or
// below the revision kept in compact_rev_key.
//
// Every read is pinned to the newest revision read at open and made in a
// short read-only transaction of its own, which sees one state of the
// table: no long transaction holds back a live SQLite file's checkpoints.
// A read at a revision kine has since compacted past is refused
// (ErrCompacted), never answered with rows missing. On PostgreSQL every
// read sees the snapshot of the open.
type KineDB struct {
	db   *sql.DB
	d    kineDialect
	path string
	live bool
	rev  int64
	// server: each read is a read-only transaction of its own, which
	// imports snapshot when set (PostgreSQL's, exported by hold).
	server   bool
	snapshot string
	hold     *sql.Tx
}

var _ Archive = (*KineDB)(nil)

// OpenKineDB opens kine's database src read-only: a postgres:// or
// mysql:// URL (IsKineURL) is a server's, read by OpenKineServer; anything
// else an SQLite file. A file with a -wal beside it may be in use by a
// running kine: it is opened read-only, as one more WAL reader, which
// takes no lock a writer waits for. Without one it is a copy or a stopped
// server's file and is opened immutable, touching nothing beside it.
func OpenKineDB(src string) (*KineDB, error) {
	if IsKineURL(src) {
		return OpenKineServer(src)
	}
	path := src
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
	k := &KineDB{db: db, d: kineSQLite, path: path, live: live}
	return k, k.pin()
}

// pin reads the newest revision, which every read is pinned to; on an
// error it closes the database.
func (k *KineDB) pin() error {
	if err := k.scalar(context.Background(), &k.rev, `SELECT COALESCE(MAX(id), 0) FROM kine`); err != nil {
		k.Close()
		return fmt.Errorf("open kine database %s: read table kine: %w", k.path, err)
	}
	return nil
}

// read runs q, written with ? placeholders, and calls fn with its rows,
// in a read-only transaction of its own: on a server REPEATABLE READ, in
// the snapshot of the open when there is one. With at > 0 the transaction
// first checks that kine has not compacted past revision at, which
// deletes rows of that state (those a later row replaced): ErrCompacted,
// before any row; the query, in the same snapshot, then sees the state at
// at whole, whatever kine compacts while it runs. Reads may run at once
// and one inside another.
func (k *KineDB) read(ctx context.Context, at int64, fn func(*sql.Rows) error, q string, args ...any) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if k.server {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := k.db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if k.snapshot != "" {
		// The snapshot's name is the server's, not a parameter.
		if _, err := tx.ExecContext(ctx, `SET TRANSACTION SNAPSHOT '`+k.snapshot+`'`); err != nil {
			return err
		}
	}
	if at > 0 {
		var c sql.NullInt64
		cond, cargs := k.d.nameIs(kineCompactKey)
		if err := tx.QueryRowContext(ctx, k.d.bind(`SELECT MAX(prev_revision) FROM kine WHERE `+cond), cargs...).Scan(&c); err != nil {
			return err
		}
		if c.Int64 > at {
			return fmt.Errorf("revision %d (compacted at %d): %w", at, c.Int64, ErrCompacted)
		}
	}
	rows, err := tx.QueryContext(ctx, k.d.bind(q), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := fn(rows); err != nil {
		return err
	}
	return rows.Close()
}

// scalar reads the one value q returns into dest.
func (k *KineDB) scalar(ctx context.Context, dest any, q string, args ...any) error {
	return k.read(ctx, 0, func(rows *sql.Rows) error {
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return sql.ErrNoRows
		}
		return rows.Scan(dest)
	}, q, args...)
}

// Path is the file the database was opened from, or the server's URL
// with its password redacted.
func (k *KineDB) Path() string { return k.path }

// Database names the database kine keeps its table in: SQLite,
// PostgreSQL or MySQL.
func (k *KineDB) Database() string { return k.d.name }

// Live reports whether a running kine may be writing the database: the
// file had a write-ahead log beside it when it was opened, or it is a
// server's.
func (k *KineDB) Live() bool { return k.live }

// Close closes the database.
func (k *KineDB) Close() error {
	var err error
	if k.hold != nil {
		err = k.hold.Rollback()
	}
	if err := errors.Join(err, k.db.Close()); err != nil {
		return fmt.Errorf("close kine database %s: %w", k.path, err)
	}
	return nil
}

// compactRevision is kine's compaction revision, read afresh: a running
// kine may compact between two reads.
func (k *KineDB) compactRevision(ctx context.Context) (int64, error) {
	var c sql.NullInt64
	cond, args := k.d.nameIs(kineCompactKey)
	err := k.scalar(ctx, &c, `SELECT MAX(prev_revision) FROM kine WHERE `+cond, args...)
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

// readRevision checks a requested revision (0: the one opened at); the
// read at it checks that kine has not compacted past it.
func (k *KineDB) readRevision(rev int64) (int64, error) {
	switch {
	case rev == 0:
		return k.rev, nil
	case rev < 0:
		return 0, fmt.Errorf("revision %d: must not be negative", rev)
	case rev > k.rev:
		return 0, fmt.Errorf("revision %d is in the future (current revision %d)", rev, k.rev)
	}
	return rev, nil
}

// kineInternal reports whether name is a row kine keeps for itself.
func kineInternal(name string) bool {
	return name == kineCompactKey || strings.HasPrefix(name, kineFillPrefix)
}

// kineRow is one row of kine's table.
type kineRow struct {
	id, createRev, prevRev, lease int64
	name                          string
	created, deleted              bool
	value                         []byte
	// prev is the live row a delete replaced, when read and still held.
	prev *kineRow
}

// kineColumns are the columns scan reads, in its order.
const kineColumns = "id, name, created, deleted, create_revision, prev_revision, lease, value"

// kinePrevColumns are the columns of the row a delete replaced, which
// scanRows reads after kineColumns when asked to: name, created,
// deleted, create_revision, lease, value.
const kinePrevColumns = "p.name, p.created, p.deleted, p.create_revision, p.lease, p.value"

// scanRows calls fn with every row of rows; withPrev
// reads kinePrevColumns too, into r.prev when they name a live row of
// the same key.
func scanRows(ctx context.Context, rows *sql.Rows, withPrev bool, fn func(r *kineRow) error) error {
	for n := 0; rows.Next(); n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var r, p kineRow
		var createRev, prevRev, lease, pCreateRev, pLease sql.NullInt64
		var created, deleted, pCreated, pDeleted sql.NullBool
		var pName sql.NullString
		dest := []any{&r.id, &r.name, &created, &deleted, &createRev, &prevRev, &lease, &r.value}
		if withPrev {
			dest = append(dest, &pName, &pCreated, &pDeleted, &pCreateRev, &pLease, &p.value)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		r.created, r.deleted = created.Bool, deleted.Bool
		r.createRev, r.prevRev, r.lease = createRev.Int64, prevRev.Int64, lease.Int64
		if kineInternal(r.name) {
			continue
		}
		if pName.Valid && pName.String == r.name && !pDeleted.Bool {
			p.id, p.name, p.created = r.prevRev, pName.String, pCreated.Bool
			p.createRev, p.lease = pCreateRev.Int64, pLease.Int64
			r.prev = &p
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

// query runs q, written with ? placeholders, and calls fn with each row
// kine serves, wrapping errors with what; at > 0 is the revision read at,
// refused when compacted (read).
func (k *KineDB) query(ctx context.Context, what string, at int64, withPrev bool, fn func(r *kineRow) error, q string, args ...any) error {
	err := k.read(ctx, at, func(rows *sql.Rows) error { return scanRows(ctx, rows, withPrev, fn) }, q, args...)
	if err != nil {
		return fmt.Errorf("%s: kine database %s: %w", what, k.path, err)
	}
	return nil
}

// Get returns key's newest row at revision rev (0: the current one).
func (k *KineDB) Get(ctx context.Context, key string, rev int64) (*KeyValue, error) {
	at, err := k.readRevision(rev)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	var found *KeyValue
	cond, args := k.d.nameIs(key)
	err = k.query(ctx, "get "+key, at, false, func(r *kineRow) error {
		if !r.deleted {
			found = r.kv()
		}
		return nil
	}, `SELECT `+kineColumns+` FROM kine WHERE `+cond+` AND id <= ? ORDER BY id DESC LIMIT 1`, append(args, at)...)
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("get %s at revision %d: %w", key, at, ErrNotFound)
	}
	return found, nil
}

// newest calls fn with the newest row at or below revision at of every
// name under prefix, in name order; keysOnly leaves the values out,
// withPrev reads the row a delete replaced into r.prev.
func (k *KineDB) newest(ctx context.Context, what, prefix string, at int64, keysOnly, withPrev bool, fn func(r *kineRow) error) error {
	cond, args, err := k.d.nameRange(prefix)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	cols := "kv." + strings.ReplaceAll(kineColumns, ", ", ", kv.")
	if keysOnly {
		cols = strings.Replace(cols, "kv.value", "NULL", 1)
	}
	join := ""
	if withPrev {
		cols += ", " + kinePrevColumns
		join = ` LEFT JOIN kine AS p ON kv.deleted = 1 AND p.id = kv.prev_revision`
	}
	q := `SELECT ` + cols + ` FROM kine AS kv JOIN (SELECT MAX(id) AS mid FROM kine WHERE ` + cond +
		` AND id <= ? GROUP BY ` + k.d.byName("name") + `) AS m ON kv.id = m.mid` + join + ` ORDER BY ` + k.d.byName("kv.name")
	return k.query(ctx, what+" "+prefix, at, withPrev, fn, q, append(args, at)...)
}

// List calls fn with every key under prefix live at opts.Revision, in key
// order, from one query.
func (k *KineDB) List(ctx context.Context, prefix string, opts ListOptions, fn func(*KeyValue) error) (int64, error) {
	at, err := k.readRevision(opts.Revision)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	err = k.newest(ctx, "list", prefix, at, opts.KeysOnly, false, func(r *kineRow) error {
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
	cond, args := k.d.nameIs(key)
	err = k.query(ctx, "history "+key, 0, false, func(r *kineRow) error { return fn(r.event()) },
		`SELECT `+kineColumns+` FROM kine WHERE `+cond+` AND id <= ? ORDER BY id`, append(args, k.rev)...)
	return info, err
}

// ScanRevisions calls fn for every row under prefix, in revision order.
func (k *KineDB) ScanRevisions(ctx context.Context, prefix string, fn func(Event) error) error {
	cond, args, err := k.d.nameRange(prefix)
	if err != nil {
		return fmt.Errorf("scan revisions: %w", err)
	}
	return k.query(ctx, "scan revisions "+prefix, 0, false, func(r *kineRow) error { return fn(r.event()) },
		`SELECT `+kineColumns+` FROM kine WHERE `+cond+` AND id <= ? ORDER BY id`, append(args, k.rev)...)
}

// ScanLatest calls fn once per key under prefix with its newest row; a
// key whose newest row is a delete only with includeDeleted, with the row
// the delete replaced (its prev_revision) when the table still holds it.
func (k *KineDB) ScanLatest(ctx context.Context, prefix string, includeDeleted bool, fn func(kv *KeyValue, deleted bool, deleteRev int64) error) error {
	return k.newest(ctx, "scan", prefix, k.rev, false, includeDeleted, func(r *kineRow) error {
		switch {
		case !r.deleted:
			return fn(r.kv(), false, 0)
		case includeDeleted:
			return fn(r.replaced(), true, r.id)
		}
		return nil
	})
}

// ScanDeleted calls fn for every key under prefix whose newest row is a
// delete, with the row it replaced.
func (k *KineDB) ScanDeleted(ctx context.Context, prefix string, fn func(kv *KeyValue, deleteRev int64) error) error {
	return k.newest(ctx, "scan deleted", prefix, k.rev, true, true, func(r *kineRow) error {
		if !r.deleted {
			return nil
		}
		return fn(r.replaced(), r.id)
	})
}

// replaced is the live row the delete r replaced, or a KeyValue with only
// its key when the table no longer holds it.
func (r *kineRow) replaced() *KeyValue {
	if r.prev == nil {
		return &KeyValue{Key: r.name}
	}
	return r.prev.kv()
}
