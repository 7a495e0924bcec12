package store

import (
	"errors"
	"strings"
	"testing"
)

func TestRedactKineURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://kine:s3cr@t@db.example:5432/k3s?sslmode=disable", "postgres://kine:xxxxx@db.example:5432/k3s?sslmode=disable"},
		{"postgresql://kine@db:5432/k3s", "postgresql://kine@db:5432/k3s"},
		{"mysql://kine:p@ss/w@tcp(10.0.0.1:3306)/kine", "mysql://kine:xxxxx@tcp(10.0.0.1:3306)/kine"},
		{"mysql://kine@tcp(10.0.0.1:3306)/kine", "mysql://kine@tcp(10.0.0.1:3306)/kine"},
		{"postgres://kine:pw%zz@db/k3s", "postgres://…"},
		{"/var/lib/rancher/k3s/server/db/state.db", "/var/lib/rancher/k3s/server/db/state.db"},
	} {
		if got := RedactKineURL(tc.in); got != tc.want {
			t.Errorf("RedactKineURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestOpenKineServerRedacts opens URLs no server answers: the errors
// name the URL with its password redacted, and match ErrKineURL or
// ErrUnavailable.
func TestOpenKineServerRedacts(t *testing.T) {
	const pw = "Very-Secret-1"
	for _, tc := range []struct {
		src  string
		want error
	}{
		{"postgres://kine:" + pw + "@127.0.0.1:1/kine?sslmode=disable&connect_timeout=5", ErrUnavailable},
		{"mysql://kine:" + pw + "@tcp(127.0.0.1:1)/kine", ErrUnavailable},
		{"mysql://kine:" + pw + "@127.0.0.1:1/kine", ErrKineURL},
	} {
		k, err := OpenKineDB(tc.src)
		if err == nil {
			k.Close()
			t.Fatalf("OpenKineDB(%s): no error", RedactKineURL(tc.src))
		}
		if !errors.Is(err, tc.want) || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("OpenKineDB: %v; want %v, the password redacted", err, tc.want)
		}
	}
}

func TestKineDialect(t *testing.T) {
	if got := kinePostgres.bind("SELECT a FROM kine WHERE name = ? AND id <= ?"); got != "SELECT a FROM kine WHERE name = $1 AND id <= $2" {
		t.Errorf("bind: %s", got)
	}
	cond, args, err := kineMySQL.nameRange("/registry/pods/")
	if err != nil || cond != "name >= ? AND name < ? AND BINARY name >= ? AND BINARY name < ?" || len(args) != 4 || args[1] != "/registry/pods0" {
		t.Errorf("MySQL nameRange: %s %v %v", cond, args, err)
	}
	if cond, args := kineSQLite.nameIs("k"); cond != "name = ?" || len(args) != 1 {
		t.Errorf("SQLite nameIs: %s %v", cond, args)
	}
}
