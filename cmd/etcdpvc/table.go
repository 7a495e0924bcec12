package main

import (
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// tableWriter prints aligned columns without holding the whole table:
// rows are buffered one batch at a time and column widths only grow, so a
// million-row listing streams in bounded memory.
type tableWriter struct {
	w       io.Writer
	headers []string
	widths  []int
	batch   [][]string
	printed bool
	// BatchSize is how many rows are aligned together (default 500).
	BatchSize int
}

func newTable(w io.Writer, headers ...string) *tableWriter {
	t := &tableWriter{w: w, headers: headers, widths: make([]int, len(headers)), BatchSize: 500}
	t.fit(headers)
	return t
}

func (t *tableWriter) fit(row []string) {
	for i, c := range row {
		if n := utf8.RuneCountInString(c); n > t.widths[i] {
			t.widths[i] = n
		}
	}
}

// Row adds a row.
func (t *tableWriter) Row(cells ...string) error {
	t.fit(cells)
	t.batch = append(t.batch, cells)
	if len(t.batch) >= t.BatchSize {
		return t.Flush()
	}
	return nil
}

// Flush prints the rows buffered so far.
func (t *tableWriter) Flush() error {
	var b strings.Builder
	if !t.printed {
		t.line(&b, t.headers)
		t.printed = true
	}
	for _, r := range t.batch {
		t.line(&b, r)
	}
	t.batch = t.batch[:0]
	_, err := io.WriteString(t.w, b.String())
	return err
}

func (t *tableWriter) line(b *strings.Builder, cells []string) {
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

// now is the time ages are measured from: ETCDPVC_NOW (RFC 3339) when set,
// for reproducible output in tests and reports, else the clock.
func (e *env) now() time.Time {
	if s := e.getenv("ETCDPVC_NOW"); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
	}
	return time.Now()
}
