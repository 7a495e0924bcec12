package salvage

import (
	"errors"
	"io"
)

// windowSize is what a windowReader reads at a time, at the most.
const windowSize = 1 << 20

// gapMax is the widest gap between two planned pieces that one read of a
// windowReader spans: copying a few pages costs less than another system
// call.
const gapMax = 8 << 10

// windowReader reads small pieces of r near one another through one
// window of windowSize bytes: the judge and the write read every kept
// value again, about in file order, and a read per value would be a
// system call per value. A piece larger than half the window is read
// directly. Not safe for concurrent use: one per goroutine.
//
// With a plan, the pieces it will be asked for in order, a window holds
// the piece read and those planned after it that follow it closely, not
// the rest of windowSize: a value not kept (an older revision) lies
// between kept ones, and the file past the last of a run is another
// reader's.
type windowReader struct {
	r    io.ReaderAt
	size int64 // the readable end of r
	buf  []byte
	off  int64 // buf holds r's bytes [off, off+len(buf))
	// plan returns planned piece i (ok false past the last); next is the
	// piece expected next. A read that is not that piece is read as
	// without a plan.
	plan func(i int) (off int64, n int, ok bool)
	next int
}

func newWindowReader(r io.ReaderAt, size int64) *windowReader {
	return &windowReader{r: r, size: size}
}

// setPlan makes plan the pieces the reader is asked for next (see
// windowReader).
func (w *windowReader) setPlan(plan func(i int) (off int64, n int, ok bool)) {
	w.plan, w.next = plan, 0
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt does.
func (w *windowReader) ReadAt(p []byte, off int64) (int, error) {
	planned := false
	if w.plan != nil {
		if o, n, ok := w.plan(w.next); ok && o == off && n == len(p) {
			planned = true
			w.next++
		}
	}
	if len(p) > windowSize/2 || off < 0 || off+int64(len(p)) > w.size {
		return w.r.ReadAt(p, off)
	}
	if off < w.off || off+int64(len(p)) > w.off+int64(len(w.buf)) {
		if w.buf == nil {
			w.buf = make([]byte, windowSize)
		}
		w.buf = w.buf[:cap(w.buf)]
		n := int64(len(w.buf))
		if planned {
			n = w.span(off, int64(len(p)))
		}
		if off+n > w.size {
			n = w.size - off
		}
		m, err := w.r.ReadAt(w.buf[:n], off)
		if int64(m) < n {
			w.buf, w.off = w.buf[:0], 0
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		w.buf, w.off = w.buf[:n], off
	}
	return copy(p, w.buf[off-w.off:]), nil
}

// span is what a window read at off for a planned piece of n bytes
// takes: up to the end of the planned pieces after it that each start
// within gapMax of the one before and end within windowSize of off.
func (w *windowReader) span(off, n int64) int64 {
	end := off + n
	for i := w.next; ; i++ {
		o, m, ok := w.plan(i)
		if !ok || o < off || o > end+gapMax || o+int64(m) > off+windowSize {
			break
		}
		end = max(end, o+int64(m))
	}
	return end - off
}
