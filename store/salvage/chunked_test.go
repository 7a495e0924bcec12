package salvage

import "testing"

// TestChunked: items keep their numbers and values across blocks, and
// the first block, once full, is not moved by adding more.
func TestChunked(t *testing.T) {
	var c chunked[int64]
	n := 3<<chunkShift + 5
	for i := range n {
		if got := c.add(int64(i) * 3); got != i {
			t.Fatalf("add %d: number %d", i, got)
		}
	}
	first := c.at(0)
	c.add(-1)
	if c.at(0) != first || *first != 0 {
		t.Error("the first item moved")
	}
	if c.len() != n+1 {
		t.Errorf("len %d, want %d", c.len(), n+1)
	}
	for i := range n {
		if *c.at(int32(i)) != int64(i)*3 {
			t.Fatalf("item %d: %d", i, *c.at(int32(i)))
		}
	}
}
