package inspect

import (
	"time"

	"github.com/etcdpvc/etcdpvc/clock"
)

// narrowTime is the widest interval shown as one time and a ±.
const narrowTime = time.Minute

// TimeCell is a TIME cell: "10:41:58 ±2s" when the interval is narrow, its
// two ends when wide, "≥10:41:58" or "≤10:41:58" when bounded on one side
// only, "-" when unknown; in loc, with the date where it is not now's.
// Clocks that disagree there are said.
func TimeCell(iv clock.Interval, now time.Time, loc *time.Location) string {
	format := func(t time.Time) string {
		t = t.In(loc)
		if y, m, d := t.Date(); y != now.In(loc).Year() || m != now.In(loc).Month() || d != now.In(loc).Day() {
			return t.Format("2006-01-02 15:04:05")
		}
		return t.Format("15:04:05")
	}
	var s string
	switch {
	case iv.Known() && iv.Width() <= narrowTime:
		// The time printed is whole seconds: the ± covers both ends from it.
		mid := iv.Earliest.Add(iv.Width() / 2).Truncate(time.Second)
		half := max(iv.Latest.Sub(mid), mid.Sub(iv.Earliest))
		if r := half.Truncate(time.Second); r < half {
			half = r + time.Second
		}
		s = format(mid) + " ±" + half.String()
	case iv.Known():
		s = format(iv.Earliest) + "–" + format(iv.Latest)
	case !iv.Earliest.IsZero():
		s = "≥" + format(iv.Earliest)
	case !iv.Latest.IsZero():
		s = "≤" + format(iv.Latest)
	default:
		return "-"
	}
	if iv.Disagree {
		s += " (clocks disagree)"
	}
	return s
}
