package salvage

import (
	"errors"
	"io"
)

// windowSize is what a windowReader reads at a time.
const windowSize = 1 << 20

// windowReader reads small pieces of r near one another through one
// window of windowSize bytes: the judge and the write read every kept
// value again, about in file order, and a read per value would be a
// system call per value. A piece larger than half the window is read
// directly. Not safe for concurrent use: one per goroutine.
type windowReader struct {
	r    io.ReaderAt
	size int64 // the readable end of r
	buf  []byte
	off  int64 // buf holds r's bytes [off, off+len(buf))
}

func newWindowReader(r io.ReaderAt, size int64) *windowReader {
	return &windowReader{r: r, size: size}
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt does.
func (w *windowReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) > windowSize/2 || off < 0 || off+int64(len(p)) > w.size {
		return w.r.ReadAt(p, off)
	}
	if off < w.off || off+int64(len(p)) > w.off+int64(len(w.buf)) {
		if w.buf == nil {
			w.buf = make([]byte, windowSize)
		}
		w.buf = w.buf[:cap(w.buf)]
		n := int64(len(w.buf))
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
