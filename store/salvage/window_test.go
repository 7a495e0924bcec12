package salvage

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// countingReader is a bytes.Reader that counts the bytes read from it.
type countingReader struct {
	*bytes.Reader
	read int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.Reader.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

// TestWindowReaderPlan: with a plan, every piece reads the file's bytes,
// the planned ones, a piece read out of plan and the ones after it; and
// a plan of scattered pieces reads fewer bytes than the plain window.
func TestWindowReaderPlan(t *testing.T) {
	data := make([]byte, 8<<20)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rnd.IntN(256))
	}
	type piece struct {
		off int64
		n   int
	}
	var plan []piece
	for off := int64(0); off < int64(len(data))-10000; {
		n := 100 + rnd.IntN(3000)
		plan = append(plan, piece{off, n})
		off += int64(n) + int64(rnd.IntN(20000)) // gaps below and above gapMax
	}
	plan[len(plan)/2].off = 12345 // one out of file order
	read := func(withPlan bool) int64 {
		c := &countingReader{Reader: bytes.NewReader(data)}
		w := newWindowReader(c, int64(len(data)))
		if withPlan {
			w.setPlan(func(i int) (int64, int, bool) {
				if i >= len(plan) {
					return 0, 0, false
				}
				return plan[i].off, plan[i].n, true
			})
		}
		for i, p := range plan {
			buf := make([]byte, p.n)
			if _, err := w.ReadAt(buf, p.off); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf, data[p.off:p.off+int64(p.n)]) {
				t.Fatalf("plan %v, piece %d: not the file's bytes", withPlan, i)
			}
			if i%7 == 0 { // a read the plan does not name
				off := p.off + 5000
				buf := make([]byte, 700)
				if _, err := w.ReadAt(buf, off); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf, data[off:off+700]) {
					t.Fatalf("plan %v, after piece %d: not the file's bytes", withPlan, i)
				}
			}
		}
		return c.read
	}
	plain, planned := read(false), read(true)
	if planned >= plain {
		t.Errorf("read %d bytes with the plan, %d without", planned, plain)
	}
	t.Logf("read %d bytes with the plan, %d without (file %d)", planned, plain, len(data))
}
