package inspect

import (
	"context"
	"io"

	"github.com/etcdpvc/etcdpvc/internal/textout"
	"github.com/etcdpvc/etcdpvc/store"
)

// LoadJoins reads what a table of claims shows besides the claims: every
// volume, for VOLUME, and with Wide, for MOUNTED BY, the pods of each
// namespace as its claims come. It returns how many volumes could not be
// read (their claims' VOLUME may show "?"). Other tables need nothing.
func (t *ListTable) LoadJoins(ctx context.Context, r store.Reader, enc Decrypter, prefix string, rev int64) (unread int, err error) {
	if t.Kind != ListClaims {
		return 0, nil
	}
	vols, err := LoadVolumes(ctx, r, enc, prefix, rev)
	if err != nil {
		return 0, err
	}
	t.Volumes = vols
	if t.Wide {
		t.Mounts = func(ns string) (*Mounts, error) { return LoadMounts(ctx, r, enc, prefix, ns, rev) }
	}
	return vols.Unread, nil
}

// ListWriter writes a listing as it comes: as a table (Table's columns,
// aligned in bounded memory, nothing at all when no object is listed) or
// as a Kubernetes List in JSON or YAML (ListDocument).
type ListWriter struct {
	// Table is the table's form; its rows are not used for a List.
	Table *ListTable
	t     *textout.Table
	doc   *ListDocument
	n     int
}

// NewListWriter returns a writer of table's table to w, or with format
// "json" or "yaml" of a List.
func NewListWriter(w io.Writer, format string, table *ListTable) *ListWriter {
	p := &ListWriter{Table: table}
	if format == "json" || format == "yaml" {
		p.doc = NewListDocument(w, format == "json")
	} else {
		p.t = textout.NewTable(w, table.Columns()...)
	}
	return p
}

// IsTable reports whether the listing is written as a table.
func (p *ListWriter) IsTable() bool { return p.t != nil }

// Row writes one listed object.
func (p *ListWriter) Row(it Listed) error {
	p.n++
	if p.t == nil {
		return p.doc.Add(it.Object())
	}
	return p.t.Row(p.Table.Row(it)...)
}

// Spans records, for a List, that the listing was read at revisions from
// to to (ListDocument.Spans); a table does not show it.
func (p *ListWriter) Spans(from, to int64) {
	if p.doc != nil {
		p.doc.Spans(from, to)
	}
}

// Close writes what is buffered, ending a List (also of a listing cut
// short).
func (p *ListWriter) Close() error {
	switch {
	case p.doc != nil:
		return p.doc.Close()
	case p.n == 0:
		return nil
	}
	return p.t.Flush()
}
