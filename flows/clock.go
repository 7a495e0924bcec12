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
func (s *Session) Clock(ctx context.Context) (*clock.Clock[uint64], error) {
	if s.WAL == nil {
		return nil, nil
	}
	src := &logTimes{ctx: ctx, s: s}
	c := clock.New[uint64](src)
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

func (l *logTimes) Write(i int) clock.Write[uint64] {
	kw, err := l.s.WAL.WriteAt(i, true)
	if err != nil {
		l.keep(err)
	}
	kv := kw.Event.KV
	w := clock.Write[uint64]{Index: kw.Entry.Index, Key: kv.Key, Deleted: kw.Event.Deleted, Created: kv.Version == 1,
		NotApplied: kw.Entry.Outcome == wal.OutcomeNotApplied, Unknown: kw.Entry.Outcome == wal.OutcomeUnknown}
	if err == nil && !w.Deleted {
		w.Times, w.Read = l.s.valueTimes(l.ctx, kv.Key, kv.Value)
	}
	return w
}

// valueTimes reads the times of a value stored at key, decrypted as every
// read is (codec.ReadTimes: a Secret's metadata only); false when it
// cannot be read. A value a KMS plugin encrypts is not read (a call per
// write to a plugin that may not answer).
func (s *Session) valueTimes(ctx context.Context, key string, value []byte) (codec.Times, bool) {
	if bytes.HasPrefix(value, []byte("k8s:enc:kms:")) {
		return codec.Times{}, false
	}
	gr, known := s.Planner.GroupResource(key)
	plain, _, _, err := s.Planner.Decrypt(ctx, gr, known, key, value)
	if err != nil {
		return codec.Times{}, false
	}
	t, err := codec.ReadTimes(plain)
	return t, err == nil
}

func (l *logTimes) keep(err error) {
	if l.err == nil {
		l.err = err
	}
}

// revisionTime is the interval of the entry that made rev, when the log
// establishes it.
func (s *Session) revisionTime(c *clock.Clock[uint64], rev int64) clock.Interval {
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
// read for their times. what names the writes read: "the log", "the
// revisions held".
func clockNotes[K clock.Order](c *clock.Clock[K], what string) []string {
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
		notes = append(notes, "no value of "+what+" carries a time that bounds a write: their times are unknown (TIME -)")
	}
	if c.Unreadable > 0 {
		notes = append(notes, fmt.Sprintf("%d of the %d writes read could not be read for their times (encrypted by a KMS plugin, or not decryptable or not objects): the intervals around them are wider", c.Unreadable, c.Writes))
	}
	return notes
}

// timeline places a store's revisions in time (Session.timeline).
type timeline struct {
	at    func(rev int64) clock.Interval
	notes []string
}

// timeline reads the clock that places s's revisions in time: the log's
// with --wal (a revision's interval is that of the entry that made it),
// else one over the revisions the db or etcd holds from revision from on
// (RevisionClock): where those cannot be read (etcds that split the
// keyspace, a user not allowed to watch it), every time is unknown and a
// note says why. It is nil for a store of neither kind.
func (s *Session) timeline(ctx context.Context, from int64) (*timeline, error) {
	if s.WAL != nil {
		c, err := s.Clock(ctx)
		if err != nil {
			return nil, err
		}
		return &timeline{at: func(rev int64) clock.Interval { return s.revisionTime(c, rev) }, notes: clockNotes(c, "the log")}, nil
	}
	c, err := s.RevisionClock(ctx, from)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		// What is asked for is read all the same; only its times are
		// unknown, and said.
		return &timeline{at: func(int64) clock.Interval { return clock.Interval{} },
			notes: []string{fmt.Sprintf("the times of the revisions held are unknown (TIME -): %v", err)}}, nil
	case c == nil:
		return nil, nil
	}
	return &timeline{at: c.At, notes: clockNotes(c, heldRevisions)}, nil
}

// timelineReach is how many revisions before the first one a reader
// shows a clock over revisions reads: the stamps just before it bound it.
const timelineReach = clock.Sample

// historyTimes gives each row of a history its time: read from the log,
// its entry's interval, or for a revision the db holds the interval of
// the entry that made it, where the log establishes it; read from a db
// or etcd, its revision's among the revisions held (none from kine).
func (s *Session) historyTimes(ctx context.Context, rep *inspect.HistoryReport, now time.Time) error {
	rep.Now = now
	if s.WAL != nil {
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
		rep.TimeNotes = clockNotes(c, "the log")
		return nil
	}
	if len(rep.Rows) == 0 {
		return nil
	}
	tl, err := s.timeline(ctx, max(rep.Rows[0].Revision-timelineReach, 0))
	if tl == nil || err != nil {
		return err
	}
	for i := range rep.Rows {
		iv := tl.at(rep.Rows[i].Revision)
		rep.Rows[i].Time = &iv
	}
	rep.TimeNotes = tl.notes
	return nil
}
