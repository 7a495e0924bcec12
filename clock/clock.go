// Package clock places every raft entry of a member's log in wall-clock
// time, from the times the cluster writes into its own objects: etcd
// stores none (a raft entry and a revision carry no time). It places the
// revisions a db or etcd holds the same way: a log is then those
// revisions in order, its writes placed by revision (Clock[int64]) rather
// than by raft index (Clock[uint64]).
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
// and creationTimestamp on an update bound only what follows. A value
// written into etcd other than through the apiserver (a restore, a
// recover, which keep an object's old times) is out of order with the
// stamps around it and left out, as below.
//
// # Clocks that are off
//
// The bounds are by the writers' clocks. A stamp is out of order by how
// far it lies before the median of the other writers' now-stamps just
// before it, or after the median of those just after it (0 in between,
// however far apart they are: a quiet log is in order). A writer whose
// stamps are, by their median, more than Skew out of order (one node's
// clock off by minutes) is named in Clock.Skewed and none of its stamps is
// used; between two writers as far off, kube-apiserver is kept. A single
// stamp more than Skew out of order is left out too (Clock.Outliers).
// Where the stamps kept still cross (an upper bound before a lower one),
// the interval spans both and says so (Interval.Disagree).
//
// # Long logs
//
// Of a log of more than Sample writes, Sample evenly spread are read (and
// the previous value of each one's key); an entry whose interval among
// them is wider than Refine is narrowed by the writes nearest to it. Fewer
// stamps give wider intervals, never wrong ones.
package clock

import (
	"encoding/json"
	"slices"
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

// Order is what places a write in its log: a raft index (uint64), or a
// revision (int64) for the revisions a db or etcd holds.
type Order interface{ ~uint64 | ~int64 }

// Write is one write of the log, with the times of its value. Index is its
// place in the log: its raft index, or its revision.
type Write[K Order] struct {
	Index K
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

type stamp[K Order] struct {
	index  K
	at     time.Time
	upper  time.Duration // the upper bound is at+upper; <0: no upper bound
	writer string
}

// stampsOf returns the stamps of a write's value (see the package
// comment): prev is the key's previous value's times, when known.
func stampsOf[K Order](w Write[K], prev codec.Times, known bool) []stamp[K] {
	if w.Deleted || !w.Read {
		return nil
	}
	var out []stamp[K]
	t := w.Times
	stamped := !t.Managed.IsZero() && (w.Created || known && t.Managed.After(prev.Managed))
	if stamped {
		out = append(out, stamp[K]{index: w.Index, at: t.Managed, upper: time.Second + Allowance, writer: APIServer})
	}
	if api := newer(t.Managed, t.Created); !api.IsZero() && (!stamped || api.After(t.Managed)) {
		out = append(out, stamp[K]{index: w.Index, at: api, upper: -1, writer: APIServer})
	}
	if !t.Renew.IsZero() {
		s := stamp[K]{index: w.Index, at: t.Renew, upper: -1, writer: "lease holder " + t.Holder}
		if w.Created || known && !t.Renew.Equal(prev.Renew) {
			s.upper = Allowance
		}
		out = append(out, s)
	}
	if !t.Reported.IsZero() {
		out = append(out, stamp[K]{index: w.Index, at: t.Reported, upper: -1, writer: "event reporter " + t.Reporter})
	}
	return out
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

// Source is a log's writes in log order, read on demand.
type Source[K Order] interface {
	// Len is how many writes the log holds.
	Len() int
	// Index is the place of write i (its raft index or revision), read
	// without its value.
	Index(i int) K
	// Write is write i with its value's times.
	Write(i int) Write[K]
	// Before is the write of the same key just before write i (false: i
	// is its first in the log).
	Before(i int) (int, bool)
}

// Sample is how many writes, evenly spread, a Clock reads of a longer log
// to place every entry; around an entry whose interval that leaves wider
// than Refine, it reads the writes nearest to it.
const Sample = 4096

// Refine is the widest interval the sample gives that is not narrowed by
// reading the writes nearest to the entry.
const Refine = 4 * time.Second

// refineReach is how many writes on each side of an entry are read to
// narrow its interval.
const refineReach = 16

// Clock is the interval of every place of a log: every raft index of a
// member's write-ahead log (Clock[uint64]), or every revision a db or etcd
// holds (Clock[int64]).
type Clock[K Order] struct {
	// Writes counts the writes sampled, Unreadable those whose value could
	// not be read, Stamps the times used, Outliers those left out alone
	// because they lie more than Skew from the others around them.
	Writes, Unreadable, Stamps, Outliers int
	// Sampled is true when the log holds more than Sample writes.
	Sampled bool
	Skewed  []Skewed

	src     Source[K]
	skewed  map[string]bool
	cache   map[int]Write[K]
	index   []K
	lower   []time.Time // lower[i]: the newest stamp at or before index[i]
	upper   []time.Time // upper[i]: the oldest upper bound at or after index[i]
	refined map[K]Interval
}

// New reads src's writes (all of them, or Sample of a longer log) into a
// Clock.
func New[K Order](src Source[K]) *Clock[K] {
	c := &Clock[K]{src: src, skewed: map[string]bool{}, cache: map[int]Write[K]{}, refined: map[K]Interval{}}
	n := src.Len()
	stride := 1
	if n > Sample {
		stride, c.Sampled = (n+Sample-1)/Sample, true
	}
	var stamps []stamp[K]
	for i := 0; i < n; i += stride {
		w := c.write(i)
		c.Writes++
		if !w.Deleted && !w.Read {
			c.Unreadable++
		}
		stamps = append(stamps, c.stamps(i, w)...)
	}
	for {
		s, ok := worstWriter(stamps)
		if !ok {
			break
		}
		c.Skewed, c.skewed[s.Writer] = append(c.Skewed, s), true
		stamps = slices.DeleteFunc(stamps, func(st stamp[K]) bool { return st.writer == s.Writer })
	}
	stamps, c.Outliers = withoutOutliers(stamps)
	c.Stamps = len(stamps)
	c.bounds(stamps)
	return c
}

// write is write i, read once.
func (c *Clock[K]) write(i int) Write[K] {
	if w, ok := c.cache[i]; ok {
		return w
	}
	w := c.src.Write(i)
	c.cache[i] = w
	return w
}

// stamps are write i's stamps, its key's previous value read where one
// could tell a time this write set.
func (c *Clock[K]) stamps(i int, w Write[K]) []stamp[K] {
	if w.Deleted || !w.Read {
		return nil
	}
	var prev codec.Times
	known := false
	if !w.Created && (!w.Times.Managed.IsZero() || !w.Times.Renew.IsZero()) {
		prev, known = c.previous(i)
	}
	return stampsOf(w, prev, known)
}

// previous is the times of the value write i's key held before it: that
// of the last write before it that changed the key; false when that is
// not known (none in the log, one whose outcome is not established, a
// deletion, a value not read).
func (c *Clock[K]) previous(i int) (codec.Times, bool) {
	for range refineReach {
		j, ok := c.src.Before(i)
		if !ok {
			return codec.Times{}, false
		}
		w := c.write(j)
		switch {
		case w.NotApplied:
			i = j
			continue
		case w.Unknown || w.Deleted || !w.Read:
			return codec.Times{}, false
		}
		return w.Times, true
	}
	return codec.Times{}, false
}

// bounds sets the clock's index, lower and upper from the stamps kept.
func (c *Clock[K]) bounds(kept []stamp[K]) {
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].index < kept[j].index })
	for _, s := range kept {
		n := len(c.index)
		if n == 0 || c.index[n-1] != s.index {
			c.index = append(c.index, s.index)
			c.lower = append(c.lower, time.Time{})
			c.upper = append(c.upper, time.Time{})
			n++
		}
		c.lower[n-1] = newer(c.lower[n-1], s.at)
		if s.upper >= 0 {
			if u := s.at.Add(s.upper); c.upper[n-1].IsZero() || u.Before(c.upper[n-1]) {
				c.upper[n-1] = u
			}
		}
	}
	for i := 1; i < len(c.lower); i++ {
		c.lower[i] = newer(c.lower[i], c.lower[i-1])
	}
	for i := len(c.upper) - 2; i >= 0; i-- {
		if u := c.upper[i+1]; !u.IsZero() && (c.upper[i].IsZero() || u.Before(c.upper[i])) {
			c.upper[i] = u
		}
	}
}

// At is the interval of raft index index: the newest stamp at or before
// it, the oldest upper bound at or after it, among the writes sampled and,
// where that is wider than Refine, the writes nearest to it.
func (c *Clock[K]) At(index K) Interval {
	if c == nil {
		return Interval{}
	}
	iv := c.sampled(index)
	if c.Sampled && (!iv.Known() || iv.Width() > Refine) {
		if r, ok := c.refined[index]; ok {
			return r
		}
		iv = c.refine(index, iv)
		c.refined[index] = iv
	}
	if iv.Known() && iv.Latest.Before(iv.Earliest) {
		iv.Earliest, iv.Latest, iv.Disagree = iv.Latest, iv.Earliest, true
	}
	return iv
}

// sampled is index's interval among the sampled writes.
func (c *Clock[K]) sampled(index K) Interval {
	var iv Interval
	i := sort.Search(len(c.index), func(i int) bool { return c.index[i] > index })
	if i > 0 {
		iv.Earliest = c.lower[i-1]
	}
	j := sort.Search(len(c.index), func(j int) bool { return c.index[j] >= index })
	if j < len(c.index) {
		iv.Latest = c.upper[j]
	}
	return iv
}

// refine narrows iv, index's interval among the sampled writes, with the
// stamps of the writes nearest to index: up to refineReach on each side,
// until one bounds it. A stamp of a writer named skewed is not used, nor
// one more than Skew past the interval it would narrow.
func (c *Clock[K]) refine(index K, iv Interval) Interval {
	n := c.src.Len()
	p := sort.Search(n, func(i int) bool { return c.src.Index(i) >= index })
	usable := func(s stamp[K]) bool { return !c.skewed[s.writer] }
	for j := p - 1; j >= 0 && j >= p-refineReach; j-- {
		found := false
		for _, s := range c.stamps(j, c.write(j)) {
			if !usable(s) || !iv.Latest.IsZero() && s.at.After(iv.Latest.Add(Skew)) {
				continue
			}
			iv.Earliest, found = newer(iv.Earliest, s.at), true
		}
		if found {
			break
		}
	}
	for j := p; j < n && j < p+refineReach; j++ {
		found := false
		for _, s := range c.stamps(j, c.write(j)) {
			u := s.at.Add(s.upper)
			if !usable(s) || s.upper < 0 || !iv.Earliest.IsZero() && u.Before(iv.Earliest.Add(-Skew)) {
				continue
			}
			if iv.Latest.IsZero() || u.Before(iv.Latest) {
				iv.Latest = u
			}
			if s.index == index && (iv.Latest.IsZero() || !s.at.After(iv.Latest.Add(Skew))) {
				iv.Earliest = newer(iv.Earliest, s.at)
			}
			found = true
		}
		if found {
			break
		}
	}
	return iv
}

// LastBefore is the last of indexes (ascending) whose interval ends
// before t (certainly before t, by the writers' clocks), and false when
// none does. An entry before one certainly before t is too: the sampled
// intervals find the last one, then the entries after it whose interval
// reading their neighbours may narrow are tried in turn.
func (c *Clock[K]) LastBefore(t time.Time, indexes []K) (K, bool) {
	before := func(iv Interval) bool { return !iv.Latest.IsZero() && iv.Latest.Before(t) }
	i := sort.Search(len(indexes), func(i int) bool { return !before(c.sampled(indexes[i])) })
	for ; i < len(indexes); i++ {
		iv := c.sampled(indexes[i])
		if !iv.Earliest.IsZero() && !iv.Earliest.Before(t) || !before(c.At(indexes[i])) {
			break
		}
	}
	if i == 0 {
		return 0, false
	}
	return indexes[i-1], true
}

// newer is the later of a and b.
func newer(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
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
