package main

import (
	"io"
	"time"

	"github.com/etcdpvc/etcdpvc/internal/textout"
)

// tableWriter prints aligned columns in bounded memory (textout.Table).
type tableWriter = textout.Table

func newTable(w io.Writer, headers ...string) *tableWriter { return textout.NewTable(w, headers...) }

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
