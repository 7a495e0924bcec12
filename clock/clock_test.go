package clock

import (
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/codec"
)

var t0 = time.Date(2026, 12, 7, 10, 40, 0, 0, time.UTC)

// renew is a Lease renewal by holder at t0+at, its managedFields stamped by
// kube-apiserver at t0+api.
func renew(index uint64, holder string, at, api time.Duration) Write {
	return Write{Index: index, Key: "/registry/leases/kube-node-lease/" + holder, Read: true,
		Times: codec.Times{Kind: "Lease", Holder: holder, Renew: t0.Add(at), Managed: t0.Add(api).Truncate(time.Second), Created: t0.Add(-time.Hour)}}
}

func TestClockUnknownWithoutTimes(t *testing.T) {
	b := NewBuilder()
	b.Add(Write{Index: 5, Key: "/a", Read: true})
	b.Add(Write{Index: 6, Key: "/a", Deleted: true})
	b.Add(Write{Index: 7, Key: "/b"})
	c := b.Clock()
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
	b := NewBuilder()
	// The first write of each lease: its previous value unknown, it bounds
	// only what follows.
	b.Add(renew(10, "a", 0, 0))
	b.Add(renew(11, "b", 2*time.Second, 2*time.Second))
	b.Add(Write{Index: 12, Key: "/registry/configmaps/x/y", Deleted: true})
	b.Add(renew(13, "a", 10*time.Second, 10*time.Second))
	b.Add(renew(14, "b", 12*time.Second, 12*time.Second))
	c := b.Clock()
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
	b := NewBuilder()
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
			b.Add(r)
		}
	}
	c := b.Clock()
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
