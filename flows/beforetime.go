package flows

import (
	"context"
	"fmt"
	"time"

	"github.com/etcdpvc/etcdpvc/clock"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store/wal"
)

// PointInTimeTime is how a point asked for by a time was chosen: the last
// raft index whose interval ends before Before, its interval, and the
// next entry's, which Before may fall inside.
type PointInTimeTime struct {
	Before    time.Time      `json:"before"`
	Interval  clock.Interval `json:"interval"`
	NextIndex uint64         `json:"nextIndex,omitempty"`
	Next      clock.Interval `json:"next"`
	// Inside is true when Before falls inside the next entry's interval:
	// it may have happened before Before; the point leaves it out.
	Inside bool `json:"inside,omitempty"`
}

// indexBeforeTime is the last raft index of the log from from on that the
// clock places certainly before t, and how it was chosen.
func (s *Session) indexBeforeTime(ctx context.Context, t time.Time, from uint64) (uint64, *PointInTimeTime, []string, error) {
	c, err := s.Clock(ctx)
	if err != nil {
		return 0, nil, nil, err
	}
	ci := from
	var indexes []uint64
	if err := s.WAL.Entries(func(e wal.WALEntry) error {
		if e.Index >= ci {
			indexes = append(indexes, e.Index)
		}
		return nil
	}); err != nil {
		return 0, nil, nil, err
	}
	notes := clockNotes(c, "the log")
	index, ok := c.LastBefore(t, indexes)
	if !ok {
		first := ""
		if len(indexes) > 0 {
			first = fmt.Sprintf(": the first, entry %d, is %s", indexes[0], intervalText(c.At(indexes[0])))
		}
		return 0, nil, notes, WithHint(fmt.Errorf("before %s: no entry of the log from raft index %d on is certainly before that time%s: %w", t.Format(time.RFC3339), ci, first, wal.ErrUndetermined),
			"give an older snapshot of the cluster as --db, or a later time; `etcdpvc --wal DIR history` shows the times of a key's writes")
	}
	pt := &PointInTimeTime{Before: t, Interval: c.At(index)}
	for i, x := range indexes {
		if x == index && i+1 < len(indexes) {
			pt.NextIndex, pt.Next = indexes[i+1], c.At(indexes[i+1])
			pt.Inside = pt.Next.Earliest.IsZero() || pt.Next.Earliest.Before(t)
		}
	}
	return index, pt, notes, nil
}

// intervalText is an interval in RFC 3339, for messages.
func intervalText(iv clock.Interval) string {
	f := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	switch {
	case iv.Known():
		return "between " + f(iv.Earliest) + " and " + f(iv.Latest)
	case !iv.Earliest.IsZero():
		return "no earlier than " + f(iv.Earliest)
	case !iv.Latest.IsZero():
		return "no later than " + f(iv.Latest)
	}
	return "at an unknown time"
}

// why says how a point asked for by a time was chosen.
func (pt *PointInTimeTime) why(index uint64) string {
	s := fmt.Sprintf("the last entry certainly before %s: entry %d is %s", pt.Before.UTC().Format(time.RFC3339Nano), index, intervalText(pt.Interval))
	switch {
	case pt.NextIndex == 0:
		s += "; it is the log's last entry"
	case pt.Inside:
		s += fmt.Sprintf("; %s falls inside the interval of the next, entry %d (%s): it may have happened before that time, and is left out", pt.Before.UTC().Format(time.RFC3339Nano), pt.NextIndex, intervalText(pt.Next))
	default:
		s += fmt.Sprintf("; the next, entry %d, is %s", pt.NextIndex, intervalText(pt.Next))
	}
	return s
}

// IndexAtTime is the raft index of the session's log that reads key as it
// was at a time: the last entry certainly before it (telling t how it was
// chosen, and what a reader of the log's times should know).
func (s *Session) IndexAtTime(ctx context.Context, t Terminal, key string, at time.Time) (uint64, error) {
	if s.WAL == nil {
		return 0, usageError("", "a time is placed by a write-ahead log's times: give --wal")
	}
	index, pt, notes, err := s.indexBeforeTime(ctx, at, 0)
	for _, n := range notes {
		t.Note(n)
	}
	if err != nil {
		return 0, err
	}
	t.Note(fmt.Sprintf("%s at %s: raft index %d, %s", session.ObjectName(s.Options.Prefix, key), at.Format(time.RFC3339Nano), index, pt.why(index)))
	return index, nil
}
