package inspect

import (
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/clock"
)

func TestTimeCell(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 41, 56, 400e6, time.UTC)
	now := at.Add(time.Hour)
	for _, c := range []struct {
		iv   clock.Interval
		want string
	}{
		{clock.Interval{}, "-"},
		{clock.Interval{Earliest: at, Latest: at.Add(3 * time.Second)}, "10:41:57 ±3s"},
		{clock.Interval{Earliest: at, Latest: at.Add(5 * time.Minute)}, "10:41:56–10:46:56"},
		{clock.Interval{Earliest: at}, "≥10:41:56"},
		{clock.Interval{Latest: at.Add(-24 * time.Hour)}, "≤2026-12-06 10:41:56"},
		{clock.Interval{Earliest: at, Latest: at.Add(time.Second), Disagree: true}, "10:41:56 ±2s (clocks disagree)"},
	} {
		if got := TimeCell(c.iv, now, time.UTC); got != c.want {
			t.Errorf("%+v: %q, want %q", c.iv, got, c.want)
		}
	}
}
