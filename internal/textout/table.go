// Package textout writes terminal text: aligned tables that stream in
// bounded memory, and messages wrapped to a terminal's width.
package textout

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Table prints aligned columns without holding the whole table: rows are
// buffered one batch at a time and column widths only grow, so a
// million-row listing streams in bounded memory. Columns are separated by
// three spaces; the last one is not padded. Cells are escaped (Escape):
// a stored name cannot move the cursor, and the columns stay aligned.
type Table struct {
	w       io.Writer
	headers []string
	widths  []int
	batch   [][]string
	printed bool
	// BatchSize is how many rows are aligned together (default 500).
	BatchSize int
}

// NewTable returns a table with these column headers, printed with the
// first batch.
func NewTable(w io.Writer, headers ...string) *Table {
	headers = escapeCells(headers)
	t := &Table{w: w, headers: headers, widths: make([]int, len(headers)), BatchSize: 500}
	t.fit(headers)
	return t
}

// NewHeadlessTable returns a table of n columns printed without headers
// (--no-headers): their widths are the rows' own.
func NewHeadlessTable(w io.Writer, n int) *Table {
	return &Table{w: w, widths: make([]int, n), BatchSize: 500}
}

func (t *Table) fit(row []string) {
	for i, c := range row {
		if n := utf8.RuneCountInString(c); n > t.widths[i] {
			t.widths[i] = n
		}
	}
}

// Row adds a row.
func (t *Table) Row(cells ...string) error {
	cells = escapeCells(cells)
	t.fit(cells)
	t.batch = append(t.batch, cells)
	if len(t.batch) >= t.BatchSize {
		return t.Flush()
	}
	return nil
}

// Rows adds rows and prints them all.
func (t *Table) Rows(rows [][]string) error {
	for _, r := range rows {
		if err := t.Row(r...); err != nil {
			return err
		}
	}
	return t.Flush()
}

// Flush prints the rows buffered so far (the headers first, once, unless
// the table is headless).
func (t *Table) Flush() error {
	var b strings.Builder
	if !t.printed {
		if t.headers != nil {
			t.line(&b, t.headers)
		}
		t.printed = true
	}
	for _, r := range t.batch {
		t.line(&b, r)
	}
	t.batch = t.batch[:0]
	_, err := io.WriteString(t.w, b.String())
	return err
}

func (t *Table) line(b *strings.Builder, cells []string) {
	for i, c := range cells {
		if i == len(cells)-1 {
			b.WriteString(c)
			break
		}
		b.WriteString(c)
		b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c)+3))
	}
	b.WriteByte('\n')
}

// escapeCells returns cells escaped, a copy when one changes.
func escapeCells(cells []string) []string {
	for i, c := range cells {
		if e := Escape(c); e != c {
			out := append([]string(nil), cells...)
			for j := i; j < len(out); j++ {
				out[j] = Escape(out[j])
			}
			return out
		}
	}
	return cells
}
