package inspect

import (
	"strings"
	"testing"
	"time"
)

// TestWALSpanLine: a span whose last dated write carries an older time
// than its first is not printed as a negative duration.
func TestWALSpanLine(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 35, 13, 0, time.UTC)
	for _, c := range []struct {
		span WALSpan
		want string
	}{
		{WALSpan{FirstIndex: 5, LastIndex: 9, First: t0, Last: t0.Add(90 * time.Second)}, "object times: from about 2026-11-30T00:35:13Z (entry 5) to 2026-11-30T00:36:43Z (entry 9), 1m30s"},
		{WALSpan{FirstIndex: 5, LastIndex: 9, First: t0, Last: t0.Add(-4 * time.Second)}, "the last (entry 9) an older one, 2026-11-30T00:35:09Z: they are the objects' own last changes"},
		{WALSpan{FirstIndex: 5, LastIndex: 5, First: t0, Last: t0}, "is the only dated write read"},
	} {
		if got := c.span.Line(); !strings.Contains(got, c.want) || strings.Contains(got, "-4s") {
			t.Errorf("%+v: %q, want it to hold %q", c.span, got, c.want)
		}
	}
}
