package inspect

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
)

// WALSpan is the wall-clock span a write-ahead log covers, as the objects
// it wrote tell it: raft entries carry no time, but kube-apiserver stamps
// each write's managed fields (and creation and deletion) with the time.
// First is the newest time in the first dated write, Last in the last one;
// zero when no write read carries one (values not decrypted, or objects
// without times).
type WALSpan struct {
	FirstIndex, LastIndex uint64
	First, Last           time.Time
}

// walSpanReads bounds how many writes are read from each end of the log
// to find a dated one.
const walSpanReads = 200

// LogSpan reads the log's first and last dated writes, each value's
// metadata through meta (false: not readable, the next one).
func LogSpan(ctx context.Context, w *wal.WAL, meta func(store.KeyValue) (*metav1.ObjectMeta, bool)) (WALSpan, error) {
	var span WALSpan
	find := func(reverse bool, index *uint64, at *time.Time) error {
		n := w.Writes()
		for i := range min(n, walSpanReads) {
			if reverse {
				i = n - 1 - i
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			kw, err := w.WriteAt(i, true)
			if err != nil {
				return err
			}
			if kw.Event.Deleted {
				continue
			}
			if m, ok := meta(kw.Event.KV); ok {
				if t := newestTime(m); !t.IsZero() {
					*index, *at = kw.Entry.Index, t
					return nil
				}
			}
		}
		return nil
	}
	if err := find(false, &span.FirstIndex, &span.First); err != nil {
		return span, err
	}
	if err := find(true, &span.LastIndex, &span.Last); err != nil {
		return span, err
	}
	return span, nil
}

// newestTime is the newest time an object's metadata carries: the last
// write of it happened then or later. (A deletionTimestamp is left out: a
// graceful deletion sets it in the future.)
func newestTime(m *metav1.ObjectMeta) time.Time {
	if m == nil {
		return time.Time{}
	}
	t := m.CreationTimestamp.Time
	for _, f := range m.ManagedFields {
		if f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}

// Line says the span in a coverage line ("" when no write is dated).
func (s WALSpan) Line() string {
	switch {
	case s.First.IsZero():
		return "no write read from the log's ends carries a time (values encrypted by a KMS plugin or that cannot be decrypted are not read for it, nor objects without managed fields)"
	case s.FirstIndex == s.LastIndex:
		return fmt.Sprintf("object times: %s (entry %d) is the only dated write read", s.First.UTC().Format(time.RFC3339), s.FirstIndex)
	case s.Last.Before(s.First):
		// Each time is a lower bound: an object's own newest change, which
		// a later write that does not stamp it carries unchanged.
		return fmt.Sprintf("object times: the first dated write (entry %d) carries %s, the last (entry %d) an older one, %s: they are the objects' own last changes, not the writes' times; the log ends at %s or later",
			s.FirstIndex, s.First.UTC().Format(time.RFC3339), s.LastIndex, s.Last.UTC().Format(time.RFC3339), s.First.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("object times: from about %s (entry %d) to %s (entry %d), %s", s.First.UTC().Format(time.RFC3339), s.FirstIndex,
		s.Last.UTC().Format(time.RFC3339), s.LastIndex, s.Last.Sub(s.First).Round(time.Second))
}
