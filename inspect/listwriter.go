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
// aligned in bounded memory, nothing at all when no object is listed), as
// a Kubernetes List in JSON or YAML (ListDocument), as kubectl's -o name
// lines, or as custom columns of each object. Two forms hold what they
// write until Close: -o jsonpath, whose template runs over the List of
// every object listed as kubectl's does, and --sort-by, which sorts them.
type ListWriter struct {
	// Table is the table's form; its rows are not used for other formats.
	Table *ListTable
	// Skipped is told of each object a format that reads objects whole
	// (jsonpath, custom-columns) could not print: its value was not read.
	Skipped func(Listed)
	// Filtered says the listing keeps objects by their content (a
	// selector, --terminating): -o name then leaves out, and tells
	// Skipped of, the values not read, which are not known to match (a
	// table and a List show why each was not read).
	Filtered bool
	w        io.Writer
	format   ListFormat
	t        *textout.Table
	doc      *ListDocument
	// held are the objects Close writes (--sort-by), items the contents
	// the jsonpath template runs over.
	held  []Listed
	items []any
	n     int
}

// NewListWriter returns a writer of a listing to w in format f; table is
// the listing's own table (-o table, wide).
func NewListWriter(w io.Writer, f ListFormat, table *ListTable) *ListWriter {
	p := &ListWriter{Table: table, w: w, format: f}
	// Sorted claims do not come namespace by namespace.
	table.KeepMounts = f.SortBy != ""
	switch f.Kind {
	case FormatJSON, FormatYAML:
		p.doc = NewListDocument(w, f.Kind == FormatJSON)
	case FormatTable, FormatWide:
		p.t = newTable(w, f.NoHeaders, table.Columns())
	case FormatCustomColumns:
		p.t = newTable(w, f.NoHeaders, f.Headers())
	}
	return p
}

// newTable is a table of these headers, or without them (noHeaders).
func newTable(w io.Writer, noHeaders bool, headers []string) *textout.Table {
	if noHeaders {
		return textout.NewHeadlessTable(w, len(headers))
	}
	return textout.NewTable(w, headers...)
}

// IsTable reports whether the listing is written as the listing's table
// (whose columns may need the claims' joins).
func (p *ListWriter) IsTable() bool {
	return p.format.Kind == FormatTable || p.format.Kind == FormatWide
}

// Row writes one listed object (holds it, with --sort-by).
func (p *ListWriter) Row(it Listed) error {
	if p.format.SortBy != "" {
		p.held = append(p.held, it)
		return nil
	}
	return p.write(it)
}

// write writes one object in the format.
func (p *ListWriter) write(it Listed) error {
	p.n++
	switch p.format.Kind {
	case FormatJSON, FormatYAML:
		return p.doc.Add(it.Object())
	case FormatTable, FormatWide:
		return p.t.Row(p.Table.Row(it)...)
	case FormatName:
		if !p.Filtered || it.Unread == "" {
			return it.PrintName(p.w)
		}
	}
	if it.Content == nil {
		p.n--
		if p.Skipped != nil {
			p.Skipped(it)
		}
		return nil
	}
	if p.format.Kind == FormatJSONPath {
		p.items = append(p.items, it.Content)
		return nil
	}
	cells, err := p.format.ColumnCells(it.Content)
	if err != nil {
		return err
	}
	return p.t.Row(cells...)
}

// Spans records, for a List, that the listing was read at revisions from
// to to (ListDocument.Spans); a table does not show it.
func (p *ListWriter) Spans(from, to int64) {
	if p.doc != nil {
		p.doc.Spans(from, to)
	}
}

// Close writes what is held and buffered, ending a List (also of a
// listing cut short). A --sort-by that cannot sort the objects is a
// *SortError, nothing written.
func (p *ListWriter) Close() error {
	if p.format.SortBy != "" && len(p.held) > 0 {
		if err := sortListed(p.held, p.format.SortBy); err != nil {
			return err
		}
		for _, it := range p.held {
			if err := p.write(it); err != nil {
				return err
			}
		}
		p.held = nil
	}
	switch {
	case p.doc != nil:
		return p.doc.Close()
	case p.format.Kind == FormatJSONPath:
		if p.items == nil {
			p.items = []any{}
		}
		list := map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": p.items}
		return p.format.ExecuteTemplate(p.w, list)
	case p.t == nil || p.n == 0:
		return nil
	}
	return p.t.Flush()
}
