package clock

import (
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/codec"
)

// writes is a log's writes as a Source (ordered by raft index, or by
// revision).
type writes[K Order] []Write[K]

func (ws writes[K]) Len() int             { return len(ws) }
func (ws writes[K]) Index(i int) K        { return ws[i].Index }
func (ws writes[K]) Write(i int) Write[K] { return ws[i] }
func (ws writes[K]) Before(i int) (int, bool) {
	for j := i - 1; j >= 0; j-- {
		if ws[j].Key == ws[i].Key {
			return j, true
		}
	}
	return 0, false
}

var t0 = time.Date(2026, 12, 7, 10, 40, 0, 0, time.UTC)

// renew is a Lease renewal by holder at t0+at, its managedFields stamped by
// kube-apiserver at t0+api.
func renew(index uint64, holder string, at, api time.Duration) Write[uint64] {
	return Write[uint64]{Index: index, Key: "/registry/leases/kube-node-lease/" + holder, Read: true,
		Times: codec.Times{Kind: "Lease", Holder: holder, Renew: t0.Add(at), Managed: t0.Add(api).Truncate(time.Second), Created: t0.Add(-time.Hour)}}
}

func TestClockUnknownWithoutTimes(t *testing.T) {
	var b writes[uint64]
	b = append(b, Write[uint64]{Index: 5, Key: "/a", Read: true})
	b = append(b, Write[uint64]{Index: 6, Key: "/a", Deleted: true})
	b = append(b, Write[uint64]{Index: 7, Key: "/b"})
	c := New(b)
	for _, i := range []uint64{1, 5, 6, 7, 8} {
		if iv := c.At(i); !iv.Earliest.IsZero() || !iv.Latest.IsZero() {
			t.Errorf("index %d: %+v, want unknown", i, iv)
		}
	}
	if c.Writes != 3 || c.Unreadable != 1 || c.Stamps != 0 {
		t.Errorf("counts %+v", c)
	}
}

func TestClockBounds(t *testing.T) {
	var b writes[uint64]
	// The first write of each lease: its previous value unknown, it bounds
	// only what follows.
	b = append(b, renew(10, "a", 0, 0))
	b = append(b, renew(11, "b", 2*time.Second, 2*time.Second))
	b = append(b, Write[uint64]{Index: 12, Key: "/registry/configmaps/x/y", Deleted: true})
	b = append(b, renew(13, "a", 10*time.Second, 10*time.Second))
	b = append(b, renew(14, "b", 12*time.Second, 12*time.Second))
	c := New(b)
	iv := c.At(12)
	if !iv.Earliest.Equal(t0.Add(2*time.Second)) || !iv.Latest.Equal(t0.Add(10*time.Second+Allowance)) {
		t.Errorf("entry 12: %+v", iv)
	}
	if iv := c.At(9); !iv.Earliest.IsZero() || iv.Latest.IsZero() {
		t.Errorf("entry 9: %+v, want only a latest", iv)
	}
	if iv := c.At(15); iv.Earliest.IsZero() || !iv.Latest.IsZero() {
		t.Errorf("entry 15: %+v, want only an earliest", iv)
	}
	if i, ok := c.LastBefore(t0.Add(11*time.Second+Allowance), []uint64{10, 11, 12, 13, 14}); !ok || i != 13 {
		t.Errorf("last before: %d %v, want 13", i, ok)
	}
}

func TestClockSkewedWriterNamed(t *testing.T) {
	var b writes[uint64]
	ahead := 10 * time.Minute
	var index uint64
	for s := time.Duration(0); s < 2*time.Minute; s += 10 * time.Second {
		for _, h := range []string{"a", "b", "c"} {
			index++
			at := s + time.Duration(index)*100*time.Millisecond
			r := renew(index, h, at, at)
			if h == "c" {
				r.Times.Renew = r.Times.Renew.Add(ahead)
			}
			b = append(b, r)
		}
	}
	c := New(b)
	if len(c.Skewed) != 1 || c.Skewed[0].Writer != "lease holder c" || c.Skewed[0].Offset < 9*time.Minute {
		t.Fatalf("skewed: %+v", c.Skewed)
	}
	for i := uint64(4); i < index-3; i++ {
		iv := c.At(i)
		if !iv.Known() || iv.Width() > 12*time.Second || iv.Disagree {
			t.Errorf("entry %d: %+v", i, iv)
		}
	}
}

func TestClockSampledRefines(t *testing.T) {
	// More writes than Sample, 100 ms apart, and a deletion every 50th:
	// the sample alone leaves ~0.3 s between its writes; the writes
	// nearest to an entry narrow where it is wider than Refine.
	var ws writes[uint64]
	step := 100 * time.Millisecond
	for i := range 3 * Sample {
		index := uint64(i + 1)
		if i%50 == 0 {
			ws = append(ws, Write[uint64]{Index: index, Key: "/registry/configmaps/x/y", Deleted: true})
			continue
		}
		h := []string{"a", "b", "c"}[i%3]
		ws = append(ws, renew(index, h, time.Duration(i)*step, time.Duration(i)*step))
	}
	c := New(ws)
	if !c.Sampled || c.Writes > Sample+1 {
		t.Fatalf("sampled %v, %d writes read", c.Sampled, c.Writes)
	}
	for i := 1000; i < len(ws); i += 97 {
		truth := t0.Add(time.Duration(i) * step)
		iv := c.At(ws[i].Index)
		if !iv.Known() || iv.Earliest.After(truth) || iv.Latest.Before(truth) || iv.Width() > Refine {
			t.Fatalf("entry %d (true time %s): %+v", ws[i].Index, truth, iv)
		}
	}
	cut := t0.Add(5000*step + 50*time.Millisecond)
	got, ok := c.LastBefore(cut, func() []uint64 {
		var idx []uint64
		for _, w := range ws {
			idx = append(idx, w.Index)
		}
		return idx
	}())
	if !ok || got > 5001 || got < 4990 {
		t.Errorf("last before %s: %d %v", cut, got, ok)
	}
}

func TestClockSparseLogNamesNoWriter(t *testing.T) {
	// Writes minutes apart are in order: no clock is off, no time left out.
	var ws writes[uint64]
	for i := range 12 {
		ws = append(ws, renew(uint64(i+1), []string{"a", "b"}[i%2], time.Duration(i)*5*time.Minute, time.Duration(i)*5*time.Minute))
	}
	c := New(ws)
	if len(c.Skewed) != 0 || c.Outliers != 0 {
		t.Fatalf("skewed %+v, %d outliers", c.Skewed, c.Outliers)
	}
	if iv := c.At(6); !iv.Known() || iv.Width() > 5*time.Minute+2*time.Second {
		t.Errorf("entry 6: %+v", iv)
	}
}

func TestClockOverRevisions(t *testing.T) {
	// Revisions of a db: each lease's first is its creation, so it bounds
	// what precedes it too; two writes of one transaction share revision
	// 12 (a deletion and a renewal).
	at := func(rev int64, holder string, d time.Duration, created bool) Write[int64] {
		w := renew(uint64(rev), holder, d, d)
		return Write[int64]{Index: rev, Key: w.Key, Created: created, Read: true, Times: w.Times}
	}
	rs := writes[int64]{
		at(10, "a", 0, true),
		at(11, "b", 2*time.Second, true),
		{Index: 12, Key: "/registry/configmaps/x/y", Deleted: true},
		at(12, "a", 10*time.Second, false),
		at(13, "b", 12*time.Second, false),
	}
	c := New[int64](rs)
	if iv := c.At(12); !iv.Earliest.Equal(t0.Add(10*time.Second)) || !iv.Latest.Equal(t0.Add(10*time.Second+Allowance)) {
		t.Errorf("revision 12: %+v", iv)
	}
	if iv := c.At(9); !iv.Earliest.IsZero() || !iv.Latest.Equal(t0.Add(Allowance)) {
		t.Errorf("revision 9, before the first creation: %+v, want only a latest", iv)
	}
	if iv := c.At(11); !iv.Earliest.Equal(t0.Add(2*time.Second)) || !iv.Latest.Equal(t0.Add(2*time.Second+Allowance)) {
		t.Errorf("revision 11, b's creation: %+v", iv)
	}
	if rev, ok := c.LastBefore(t0.Add(5*time.Second), []int64{10, 11, 12, 13}); !ok || rev != 11 {
		t.Errorf("last before: %d %v, want 11", rev, ok)
	}
}
