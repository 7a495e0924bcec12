package salvage

// chunkShift sets the size of a chunked list's blocks: 1<<chunkShift
// items each.
const chunkShift = 14

// chunked is an append-only list kept in blocks of 1<<chunkShift items:
// past its first block (which grows as a slice does, so that a short list
// stays small), growing it copies nothing and leaves no large array
// behind for the collector, as appending to one slice of a million items
// does again and again. Items are numbered from 0 in the order added; a
// pointer from at is good until the next add.
type chunked[T any] struct {
	blocks [][]T
	n      int
}

// add appends v and returns its number.
func (c *chunked[T]) add(v T) int {
	if c.n>>chunkShift == len(c.blocks) {
		var b []T
		if len(c.blocks) > 0 {
			b = make([]T, 0, 1<<chunkShift)
		} // else the first block grows as appended to: a short list stays small
		c.blocks = append(c.blocks, b)
	}
	b := &c.blocks[len(c.blocks)-1]
	*b = append(*b, v)
	c.n++
	return c.n - 1
}

// at returns item i, which must have been added.
func (c *chunked[T]) at(i int32) *T {
	return &c.blocks[i>>chunkShift][i&(1<<chunkShift-1)]
}

func (c *chunked[T]) len() int { return c.n }
