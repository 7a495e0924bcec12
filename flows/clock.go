package flows

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/etcdpvc/etcdpvc/clock"
	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/store/wal"
)

// Clock reads the session's log into a clock.Clock (nil without --wal):
// each write read is decrypted as every read is and its times read
// (codec.ReadTimes: a Secret's metadata only). Values a KMS plugin
// encrypts are not read for it (a call per write to a plugin that may not
// answer): they count as unreadable.
func (s *Session) Clock(ctx context.Context) (*clock.Clock, error) {
	if s.WAL == nil {
		return nil, nil
	}
	src := &logTimes{ctx: ctx, s: s}
	c := clock.New(src)
	if src.err != nil {
		return nil, fmt.Errorf("read the log's times: %w", src.err)
	}
	return c, nil
}

// logTimes is the session's log as a clock.Source. A write that cannot be
// read from the log is one whose times are unknown; the first such error
// is kept.
type logTimes struct {
	ctx context.Context
	s   *Session
	err error
}

func (l *logTimes) Len() int { return l.s.WAL.Writes() }

func (l *logTimes) Index(i int) uint64 {
	kw, err := l.s.WAL.WriteAt(i, false)
	if err != nil {
		l.keep(err)
	}
	return kw.Entry.Index
}

func (l *logTimes) Before(i int) (int, bool) { return l.s.WAL.WriteBefore(i) }

func (l *logTimes) Write(i int) clock.Write {
	kw, err := l.s.WAL.WriteAt(i, true)
	if err != nil {
		l.keep(err)
	}
	kv := kw.Event.KV
	w := clock.Write{Index: kw.Entry.Index, Key: kv.Key, Deleted: kw.Event.Deleted, Created: kv.Version == 1,
		NotApplied: kw.Entry.Outcome == wal.OutcomeNotApplied, Unknown: kw.Entry.Outcome == wal.OutcomeUnknown}
	if err != nil || w.Deleted || bytes.HasPrefix(kv.Value, []byte("k8s:enc:kms:")) {
		return w
	}
	gr, known := l.s.Planner.GroupResource(kv.Key)
	if plain, _, _, err := l.s.Planner.Decrypt(l.ctx, gr, known, kv.Key, kv.Value); err == nil {
		if t, err := codec.ReadTimes(plain); err == nil {
			w.Read, w.Times = true, t
		}
	}
	return w
}

func (l *logTimes) keep(err error) {
	if l.err == nil {
		l.err = err
	}
}

// revisionTime is the interval of the entry that made rev, when the log
// establishes it.
func (s *Session) revisionTime(c *clock.Clock, rev int64) clock.Interval {
	if c == nil || rev <= 0 {
		return clock.Interval{}
	}
	e, ok := s.WAL.EntryOfRevision(rev)
	if !ok {
		return clock.Interval{}
	}
	return c.At(e.Index)
}

// clockNotes says, one line each, what a reader of the clock's times
// should know: writers whose clocks are off, values that could not be
// read for their times.
func clockNotes(c *clock.Clock) []string {
	if c == nil {
		return nil
	}
	var notes []string
	for _, sk := range c.Skewed {
		way := "ahead of"
		if sk.Offset < 0 {
			way = "behind"
		}
		notes = append(notes, fmt.Sprintf("the clock of %s is about %s %s the others' (the median of %d of its times): its times are not used",
			sk.Writer, sk.Offset.Abs().Round(time.Minute), way, sk.Stamps))
	}
	if c.Stamps == 0 {
		notes = append(notes, "no value of the log carries a time that bounds a write: the times of its entries are unknown (TIME -)")
	}
	if c.Unreadable > 0 {
		notes = append(notes, fmt.Sprintf("%d of the %d writes read could not be read for their times (encrypted by a KMS plugin, or not decryptable or not objects): the intervals around them are wider", c.Unreadable, c.Writes))
	}
	return notes
}

// historyTimes gives each row of a history read from the log its time:
// its entry's interval, or for a revision the db holds the interval of the
// entry that made it, where the log establishes it.
func (s *Session) historyTimes(ctx context.Context, rep *inspect.HistoryReport, now time.Time) error {
	c, err := s.Clock(ctx)
	if err != nil {
		return err
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		iv := s.revisionTime(c, r.Revision)
		if r.Index != 0 {
			iv = c.At(r.Index)
		}
		r.Time = &iv
	}
	rep.TimeNotes, rep.Now = clockNotes(c), now
	return nil
}
