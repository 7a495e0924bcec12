package salvage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

// trailerResult sets the report's Trailer from h, the sha256 of the
// file's pages, and records a match (Options.trailerVerified).
func (s *scanner) trailerResult(h hash.Hash, trailer []byte) {
	s.rep.Trailer = "mismatch"
	if bytes.Equal(h.Sum(nil), trailer) {
		s.rep.Trailer = "matches"
		if s.opts.trailerVerified != nil {
			h.Write(trailer)
			s.opts.trailerVerified(hex.EncodeToString(trailer), hex.EncodeToString(h.Sum(nil)))
		}
	}
}

// hashAgain hashes the file's pages, which pass1 did not (a trailer
// verified earlier, Options.HashCacheDir), and sets the report's Trailer.
// A read that fails leaves the trailer unverified: "mismatch", as a short
// read in pass1 would.
func (s *scanner) hashAgain(trailer []byte) error {
	h := sha256.New()
	buf := make([]byte, min(chunkBytes, s.size))
	for off := int64(0); off < s.size; {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		n, err := s.r.ReadAt(buf[:min(int64(len(buf)), s.size-off)], off)
		h.Write(buf[:n])
		off += int64(n)
		if err != nil && off < s.size {
			s.rep.Trailer = "mismatch"
			return nil
		}
	}
	s.trailerResult(h, trailer)
	return nil
}

// whole reports whether the scan found nothing wrong with the file: the
// tree of the newer meta page, every page of it read, every item valid,
// every value kept readable.
func (s *scanner) whole() bool {
	if !s.tree || s.fillAll || s.truncated || len(s.lost) > 0 || len(s.rep.OtherLost) > 0 || s.rep.PagesUnreadable > 0 || s.rep.InvalidItems > 0 {
		return false
	}
	return !s.judgedBad()
}
