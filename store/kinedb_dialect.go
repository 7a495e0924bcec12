package store

import (
	"fmt"
	"strconv"
	"strings"
)

// kineDialect is what differs in the reader's SQL between the databases
// kine keeps its table in; the queries are written once, with ?
// placeholders, and name compared through nameIs, nameRange and byName.
type kineDialect struct {
	// name is the database's, as its makers write it.
	name string
	// dollar numbers the placeholders $1, $2 (PostgreSQL).
	dollar bool
	// nameBytes is the expression, %s the column, that orders and compares
	// names byte by byte, as etcd does.
	nameBytes string
	// foldsCase means the name column compares case-insensitively (kine's
	// MySQL table is ascii with its default collation): a condition on
	// names is given twice, as the column compares, which its index
	// serves, and byte by byte, which decides.
	foldsCase bool
}

var (
	kineSQLite   = kineDialect{name: "SQLite", nameBytes: "%s"}
	kinePostgres = kineDialect{name: "PostgreSQL", dollar: true, nameBytes: `%s COLLATE "C"`}
	kineMySQL    = kineDialect{name: "MySQL", nameBytes: "BINARY %s", foldsCase: true}
)

// bind rewrites q's ? placeholders as the database takes them. The
// reader's queries hold no ? but its placeholders.
func (d kineDialect) bind(q string) string {
	if !d.dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c != '?' {
			b.WriteRune(c)
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	return b.String()
}

// byName is col compared and ordered byte by byte.
func (d kineDialect) byName(col string) string { return fmt.Sprintf(d.nameBytes, col) }

// nameIs is the condition and arguments selecting the rows of key.
func (d kineDialect) nameIs(key string) (string, []any) {
	if d.foldsCase {
		return "name = ? AND " + d.byName("name") + " = ?", []any{key, key}
	}
	return "name = ?", []any{key}
}

// nameRange is the condition and arguments selecting the names under
// prefix, which must be "" or end in "/" (the Reader.List rule).
func (d kineDialect) nameRange(prefix string) (string, []any, error) {
	if _, err := prefixMatch(prefix); err != nil {
		return "", nil, err
	}
	if prefix == "" {
		return "1 = 1", nil, nil
	}
	// Names compare as bytes; "/" + 1 is "0", so the range ends before
	// the first name past the prefix.
	end := prefix[:len(prefix)-1] + "0"
	cond := d.byName("name") + " >= ? AND " + d.byName("name") + " < ?"
	if d.foldsCase {
		return "name >= ? AND name < ? AND " + cond, []any{prefix, end, prefix, end}, nil
	}
	return cond, []any{prefix, end}, nil
}
