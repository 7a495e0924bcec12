// Package clock places every raft entry of a member's log in wall-clock
// time, from the times the cluster writes into its own objects: etcd
// stores none (a raft entry and a revision carry no time).
//
// # Stamps
//
// A write's value may carry times. Each is a stamp of one writer's clock:
//
//   - kube-apiserver's: metadata.managedFields[].time, which the field
//     manager sets to its now whenever a request changes a field the
//     manager then owns (apimachinery's managedFieldsUpdater.Update: "if the
//     current operation took any fields from anything, it means the object
//     changed, so update the timestamp"; Apply always), and
//     metadata.creationTimestamp, set at a create. Both have a resolution of
//     one second (metav1.Time is stored truncated).
//   - a Lease holder's: spec.renewTime (microseconds), which kube-apiserver
//     (kube-system), each kubelet (kube-node-lease) and every leader
//     renews about every 10 s; the writer is spec.holderIdentity.
//   - an Event reporter's: lastTimestamp, eventTime, series.lastObservedTime.
//
// # Why the bounds hold
//
// A stamp is its writer's now taken before the request reached etcd, so
// the write's commit, and every entry after it in raft order, happened at
// or after it: every time a value carries is a lower bound for its write and
// the entries after (a time a value carries unchanged is older still).
// A deletionTimestamp is left out: a graceful deletion sets it in the future.
//
// An upper bound needs a time the write itself set; then every entry at or
// before the write happened at or before that time plus the stamp's
// resolution and the time the request took from stamp to commit (Allowance,
// an assumption: a write that took longer after its stamp places the
// entries just before it too early by the excess). Only these are used so:
//
//   - managedFields' newest time, when it is newer than in the key's
//     previous value the log holds (the write stamped it: no other code
//     sets it), or when the write created the key;
//   - a Lease's renewTime, when it differs from the previous value's or the
//     write created the Lease.
//
// A write whose previous value is not known, an Event's times (an event
// recorder queues and retries, its times may be much older than the write),
// and creationTimestamp on an update bound only what follows.
//
// # Clocks that are off
//
// The bounds are by the writers' clocks. A writer whose stamps are, by their
// median, more than Skew away from those of the other writers around them
// (one node's clock off by minutes) is named in Clock.Skewed and none of its
// stamps is used; kube-apiserver's are kept where only two writers disagree.
// Where the stamps kept still cross (an upper bound before a lower one), the
// interval spans both and says so (Interval.Disagree).
package clock

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/etcdpvc/etcdpvc/codec"
)

// Allowance is how long a write is assumed to take from its stamp to its
// commit in etcd (see the package comment).
const Allowance = time.Second

// Skew is how far a writer's stamps may lie from the others' before its
// clock is taken to be off.
const Skew = time.Minute

// APIServer names kube-apiserver's clock among the writers.
const APIServer = "kube-apiserver"

// Write is one write of the log, with the times of its value.
type Write struct {
	Index uint64
	Key   string
	// Deleted: the write deleted the key. Created: it created it (a put of
	// version 1).
	Deleted, Created bool
	// NotApplied: the write left the key as it was (its transaction took
	// the other branch); Unknown: whether it changed the key is not
	// established. Its entry is still in the log, after its stamps.
	NotApplied, Unknown bool
	// Read: Times were read from the value (false: the value could not be
	// read, or is not an object).
	Read  bool
	Times codec.Times
}

type stamp struct {
	index  uint64
	at     time.Time
	upper  time.Duration // the upper bound is at+upper; <0: no upper bound
	writer string
}

// Builder collects a log's writes, in log order, into a Clock.
type Builder struct {
	stamps     []stamp
	prev       map[string]codec.Times
	writes     int
	unreadable int
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{prev: map[string]codec.Times{}} }

// Add takes one write; writes are added in log order.
func (b *Builder) Add(w Write) {
	b.writes++
	prev, known := b.prev[w.Key]
	switch {
	case w.Unknown || !w.NotApplied && (w.Deleted || !w.Read):
		delete(b.prev, w.Key)
	case !w.NotApplied:
		b.prev[w.Key] = w.Times
	}
	if w.Deleted {
		return
	}
	if !w.Read {
		b.unreadable++
		return
	}
	b.stampsOf(w, prev, known)
}

// stampsOf adds the stamps of a write's value (see the package comment):
// prev is the key's previous value's times, when known.
func (b *Builder) stampsOf(w Write, prev codec.Times, known bool) {
	t := w.Times
	api := t.Managed
	if t.Created.After(api) {
		api = t.Created
	}
	if !api.IsZero() {
		if !t.Managed.IsZero() && (w.Created || known && t.Managed.After(prev.Managed)) {
			b.stamps = append(b.stamps, stamp{index: w.Index, at: t.Managed, upper: time.Second + Allowance, writer: APIServer})
		}
		if api.After(t.Managed) || !(w.Created || known && t.Managed.After(prev.Managed)) {
			b.stamps = append(b.stamps, stamp{index: w.Index, at: api, upper: -1, writer: APIServer})
		}
	}
	if !t.Renew.IsZero() {
		s := stamp{index: w.Index, at: t.Renew, upper: -1, writer: "lease holder " + t.Holder}
		if w.Created || known && !t.Renew.Equal(prev.Renew) {
			s.upper = Allowance
		}
		b.stamps = append(b.stamps, s)
	}
	if !t.Reported.IsZero() {
		b.stamps = append(b.stamps, stamp{index: w.Index, at: t.Reported, upper: -1, writer: "event reporter " + t.Reporter})
	}
}

// Interval is when an entry happened: no earlier than Earliest, no later
// than Latest (each zero when the log does not bound it on that side).
type Interval struct {
	Earliest, Latest time.Time
	// Disagree: the stamps around the entry cross; the interval spans
	// both.
	Disagree bool
}

// Known reports whether the interval is bounded on both sides.
func (i Interval) Known() bool { return !i.Earliest.IsZero() && !i.Latest.IsZero() }

// Width is Latest-Earliest (0 unless Known).
func (i Interval) Width() time.Duration {
	if !i.Known() {
		return 0
	}
	return i.Latest.Sub(i.Earliest)
}

// Skewed is a writer whose clock is off from the others'.
type Skewed struct {
	Writer string `json:"writer"`
	// Offset is the median of how far its stamps lie from the others'
	// around them (positive: ahead).
	Offset time.Duration `json:"offsetNanoseconds"`
	Stamps int           `json:"stamps"`
}

// Clock is the interval of every raft index of a log.
type Clock struct {
	// Writes counts the writes read, Unreadable those whose value could
	// not be read, Stamps the times used, Outliers those left out alone
	// because they lie more than Skew from the others around them.
	Writes, Unreadable, Stamps, Outliers int
	Skewed                               []Skewed

	index []uint64
	lower []time.Time // lower[i]: the newest stamp at or before index[i]
	upper []time.Time // upper[i]: the oldest upper bound at or after index[i]
}

// Clock builds the Clock of the writes added.
func (b *Builder) Clock() *Clock {
	c := &Clock{Writes: b.writes, Unreadable: b.unreadable}
	kept := b.stamps
	for {
		s, ok := worstWriter(kept)
		if !ok {
			break
		}
		c.Skewed = append(c.Skewed, s)
		var next []stamp
		for _, st := range kept {
			if st.writer != s.Writer {
				next = append(next, st)
			}
		}
		kept = next
	}
	kept, c.Outliers = withoutOutliers(kept)
	c.Stamps = len(kept)
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].index < kept[j].index })
	for _, s := range kept {
		n := len(c.index)
		if n == 0 || c.index[n-1] != s.index {
			c.index = append(c.index, s.index)
			c.lower = append(c.lower, time.Time{})
			c.upper = append(c.upper, time.Time{})
			n++
		}
		if s.at.After(c.lower[n-1]) {
			c.lower[n-1] = s.at
		}
		if s.upper >= 0 {
			if u := s.at.Add(s.upper); c.upper[n-1].IsZero() || u.Before(c.upper[n-1]) {
				c.upper[n-1] = u
			}
		}
	}
	for i := 1; i < len(c.lower); i++ {
		if c.lower[i].Before(c.lower[i-1]) {
			c.lower[i] = c.lower[i-1]
		}
	}
	for i := len(c.upper) - 2; i >= 0; i-- {
		if u := c.upper[i+1]; !u.IsZero() && (c.upper[i].IsZero() || u.Before(c.upper[i])) {
			c.upper[i] = u
		}
	}
	return c
}

// At is the interval of raft index index: the newest stamp at or before
// it, the oldest upper bound at or after it.
func (c *Clock) At(index uint64) Interval {
	var iv Interval
	if c == nil {
		return iv
	}
	i := sort.Search(len(c.index), func(i int) bool { return c.index[i] > index })
	if i > 0 {
		iv.Earliest = c.lower[i-1]
	}
	j := sort.Search(len(c.index), func(j int) bool { return c.index[j] >= index })
	if j < len(c.index) {
		iv.Latest = c.upper[j]
	}
	if iv.Known() && iv.Latest.Before(iv.Earliest) {
		iv.Earliest, iv.Latest, iv.Disagree = iv.Latest, iv.Earliest, true
	}
	return iv
}

// LastBefore is the last raft index of the log whose interval ends
// before t (certainly before t, by the writers' clocks), and false when
// no index is. Indexes holds the candidates, ascending.
func (c *Clock) LastBefore(t time.Time, indexes []uint64) (uint64, bool) {
	for i := len(indexes) - 1; i >= 0; i-- {
		if iv := c.At(indexes[i]); iv.Known() && iv.Latest.Before(t) {
			return indexes[i], true
		}
	}
	return 0, false
}

// MarshalJSON gives the bounds as RFC 3339 (null where unknown) and
// whether the clocks disagree there.
func (i Interval) MarshalJSON() ([]byte, error) {
	bound := func(t time.Time) *string {
		if t.IsZero() {
			return nil
		}
		s := t.UTC().Format(time.RFC3339Nano)
		return &s
	}
	return json.Marshal(struct {
		Earliest *string `json:"earliest"`
		Latest   *string `json:"latest"`
		Disagree bool    `json:"clocksDisagree,omitempty"`
	}{bound(i.Earliest), bound(i.Latest), i.Disagree})
}
