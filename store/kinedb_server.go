package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// kineURLSchemes are the schemes of k3s's --datastore-endpoint that name
// a SQL server, as kine takes them.
var kineURLSchemes = []string{"postgres://", "postgresql://", "mysql://"}

// IsKineURL reports whether src names kine's table on a PostgreSQL or
// MySQL server: a postgres://, postgresql:// or mysql:// URL, written as
// k3s's --datastore-endpoint is.
func IsKineURL(src string) bool {
	for _, s := range kineURLSchemes {
		if strings.HasPrefix(src, s) {
			return true
		}
	}
	return false
}

// redactedPassword stands for a password in what is printed.
const redactedPassword = "xxxxx"

// RedactKineURL returns src with the password of a kine URL replaced by
// xxxxx; anything else it returns as it is. A URL that does not parse is
// shown by its scheme alone.
func RedactKineURL(src string) string {
	if !IsKineURL(src) {
		return src
	}
	scheme, rest, _ := strings.Cut(src, "://")
	if scheme == "mysql" {
		// user[:password]@net(addr)/db: the password ends at the last @
		// before the last /, as the MySQL driver reads it.
		head := rest
		if i := strings.LastIndex(head, "/"); i >= 0 {
			head = head[:i]
		}
		at := strings.LastIndex(head, "@")
		if user, _, ok := strings.Cut(rest[:max(at, 0)], ":"); at >= 0 && ok {
			return scheme + "://" + user + ":" + redactedPassword + rest[at:]
		}
		return src
	}
	u, err := url.Parse(src)
	if err != nil {
		return scheme + "://…"
	}
	return u.Redacted()
}

// ErrKineURL means a postgres:// or mysql:// --db does not parse.
var ErrKineURL = errors.New("not a kine datastore URL")

// KineURLHint is the remedy of ErrKineURL.
const KineURLHint = "give the URL as k3s's --datastore-endpoint: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE or mysql://USER[:PASSWORD]@tcp(HOST:PORT)/DATABASE (without a password: PGPASSWORD or MYSQL_PWD)"

// kineConnectTimeout bounds connecting to kine's server.
const kineConnectTimeout = 30 * time.Second

// kineDefaultDatabase is the database kine uses when its URL names none.
const kineDefaultDatabase = "kubernetes"

// OpenKineServer opens kine's table on the PostgreSQL or MySQL server src
// names (IsKineURL), as kine reads its URL: no database is kine's
// default, kubernetes. The password is the URL's, else PGPASSWORD (and
// what else PostgreSQL's clients read: the PG variables, ~/.pgpass) or
// MYSQL_PWD; it is never printed. Every read is made in a read-only
// transaction, REPEATABLE READ, which takes no lock kine's writes or its
// compaction wait for; the connection's transactions are read-only too
// on PostgreSQL. On PostgreSQL every read sees the snapshot of the open;
// on MySQL each read sees its own, pinned to the revision read at open.
func OpenKineServer(src string) (*KineDB, error) {
	red := RedactKineURL(src)
	db, d, secret, err := openKineSQL(src)
	if err != nil {
		return nil, fmt.Errorf("open kine database %s: %w", red, redactErr(err, secret))
	}
	ctx, cancel := context.WithTimeout(context.Background(), kineConnectTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open kine database %s: %w", red, &kineUnreachable{redactErr(err, secret)})
	}
	k := &KineDB{db: db, d: d, path: red, live: true, server: true}
	if d.dollar {
		// PostgreSQL: one transaction held open exports its snapshot,
		// which every read imports.
		if k.hold, err = db.BeginTx(context.Background(), &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}); err == nil {
			err = k.hold.QueryRowContext(ctx, `SELECT pg_export_snapshot()`).Scan(&k.snapshot)
		}
		if err != nil {
			k.Close()
			return nil, fmt.Errorf("open kine database %s: export a read-only snapshot: %w", red, redactErr(err, secret))
		}
	}
	return k, k.pin()
}

// openKineSQL opens the database of src with its dialect; secret is the
// password, to keep out of errors.
func openKineSQL(src string) (db *sql.DB, d kineDialect, secret string, err error) {
	if dsn, ok := strings.CutPrefix(src, "mysql://"); ok {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, d, "", fmt.Errorf("%w: %w; %s", ErrKineURL, err, KineURLHint)
		}
		if cfg.DBName == "" {
			cfg.DBName = kineDefaultDatabase
		}
		if cfg.Passwd == "" {
			cfg.Passwd = os.Getenv("MYSQL_PWD")
		}
		if cfg.Timeout == 0 {
			cfg.Timeout = kineConnectTimeout
		}
		cfg.Logger = &mysql.NopLogger{}
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, d, cfg.Passwd, err
		}
		return sql.OpenDB(c), kineMySQL, cfg.Passwd, nil
	}
	u, err := url.Parse(src)
	if err != nil {
		return nil, d, "", fmt.Errorf("%w; %s", ErrKineURL, KineURLHint)
	}
	pw, _ := u.User.Password()
	u.Scheme = "postgres"
	if u.Path == "" || u.Path == "/" {
		u.Path = "/" + kineDefaultDatabase
	}
	// kine folds the database's name to lower case, as PostgreSQL does
	// an unquoted name.
	u.Path = strings.ToLower(u.Path)
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, d, pw, fmt.Errorf("%w: %w; %s", ErrKineURL, err, KineURLHint)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = kineConnectTimeout
	}
	cfg.RuntimeParams["default_transaction_read_only"] = "on"
	return stdlib.OpenDB(*cfg), kinePostgres, cfg.Password, nil
}

// kineUnreachable is a failure to connect to kine's server (or to be let
// in): it matches ErrUnavailable, whose words name etcd.
type kineUnreachable struct{ err error }

func (e *kineUnreachable) Error() string   { return "connect: " + e.err.Error() }
func (e *kineUnreachable) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// redactedError is an error whose message shows a password as xxxxx.
type redactedError struct {
	err    error
	secret string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.secret, redactedPassword)
}
func (e *redactedError) Unwrap() error { return e.err }

// redactErr is err with secret, if it holds it, shown as xxxxx.
func redactErr(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redactedError{err, secret}
}
