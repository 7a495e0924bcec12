package salvage

import (
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"slices"
	"sync"
)

type badRev struct {
	rev Revision
	err string
}

// judge keeps, of each key, the newest revision whose value passes
// Options.Readable, newest first, never one older than the key's newest
// deletion (finish counts such a key deleted); the revisions that do not
// pass are recorded as bad. Keys are judged on several cores: Readable
// must be safe for concurrent use. Each value is read again from the
// input and checked against the scan (ErrInputChanged).
func (s *scanner) judge() error {
	if s.opts.Readable == nil {
		return nil
	}
	all, err := s.judgeJobs()
	if err != nil {
		return err
	}
	return s.judgeAll(all)
}

// judgePlanned is judge, and returns the revisions finish usually keeps
// when every value passes Options.Readable (no key has a bad revision,
// see judgedBad): the newest revision of each key judge judges, in
// revision order (sorted while the judge runs). Not always: finish drops
// a key deleted at its newest revision, and orders two keys of one
// revision its own way; salvageTo compares the two.
func (s *scanner) judgePlanned() ([]keptRev, error) {
	all, err := s.judgeJobs()
	if err != nil {
		return nil, err
	}
	planned := make([]keptRev, len(all))
	for j, jb := range all {
		planned[j] = s.ents.at(jb.i).keep
	}
	sorted := make(chan struct{})
	go func() {
		defer close(sorted)
		slices.SortFunc(planned, func(a, b keptRev) int { return a.rev.cmp(b.rev) })
	}()
	if s.opts.Readable != nil {
		err = s.judgeAll(all)
	}
	<-sorted
	return planned, err
}

// judgedBad reports whether the judge found a revision that does not pass
// Options.Readable.
func (s *scanner) judgedBad() bool {
	for _, b := range s.badRevs {
		if len(b) > 0 {
			return true
		}
	}
	return false
}

// judgeAll judges the keys of all (see judge).
func (s *scanner) judgeAll(all []job) error {
	// In file order of the newest revisions, in runs of judgeRun keys a
	// worker takes at a time: each reads its values through a window
	// (most keys' newest revision passes, so most reads are those).
	slices.SortFunc(all, func(a, b job) int { return cmp.Compare(a.off, b.off) })
	runs := make(chan []job, 4)
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			var cands []candidate
			wr := newWindowReader(s.r, s.size)
			for run := range runs {
				wr.setPlan(func(i int) (int64, int, bool) {
					if i >= len(run) {
						return 0, 0, false
					}
					return run[i].off, run[i].n, true
				})
				for _, j := range run {
					if errs[w] != nil || s.ctx.Err() != nil {
						break
					}
					buf, cands, errs[w] = s.judgeKey(wr, j.key, j.i, buf, cands)
				}
			}
		}()
	}
	for i := 0; i < len(all) && s.ctx.Err() == nil; i += judgeRun {
		runs <- all[i:min(i+judgeRun, len(all))]
	}
	close(runs)
	wg.Wait()
	// The older revisions are read by the judge alone: they go before
	// what comes after it (the write's buffers).
	s.older = chunked[olderRev]{}
	if err := s.ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// judgeRun is how many keys a worker of the judge takes at a time.
const judgeRun = 512

// job is a key for the judge: s.ents.at(i) is its entry, and off and n
// where its newest revision is in the input (off: the judge's order).
type job struct {
	key string
	i   int32
	off int64
	n   int
}

// judgeJobs returns the keys judge judges (in the index's order), and
// makes the table of the revisions that do not pass (s.badRevs): the keys
// with a revision not older than their newest deletion.
func (s *scanner) judgeJobs() ([]job, error) {
	s.badRevs = make([][]badRev, s.ents.len())
	var all []job
	n := 0
	for key, i := range s.keys {
		if n++; n%4096 == 0 && s.ctx.Err() != nil {
			return nil, s.ctx.Err()
		}
		e := s.ents.at(i)
		if !e.hasKeep || (e.hasTomb && e.keep.rev.less(e.tomb)) {
			continue // deleted after every revision held: nothing to judge
		}
		all = append(all, job{key, i, e.keep.off, e.keep.n})
	}
	return all, nil
}

// judgeKey judges s.ents[i], the entry of key (see judge), reading values
// from r into buf; it returns buf and cands (scratch space) for the next
// key.
func (s *scanner) judgeKey(r io.ReaderAt, key string, i int32, buf []byte, cands []candidate) ([]byte, []candidate, error) {
	e := s.ents.at(i)
	cands = append(cands[:0], candidate{rev: e.keep, orphan: e.keepOrphan, lease: e.keepLease})
	for o := e.older; o != 0; o = s.older.at(o - 1).next {
		cands = append(cands, s.older.at(o-1).c)
	}
	// Newest first; of one revision held twice (a freed copy), the copy
	// in the tree first.
	slices.SortFunc(cands, func(a, b candidate) int {
		switch {
		case a.rev.rev != b.rev.rev && b.rev.rev.less(a.rev.rev):
			return -1
		case a.rev.rev != b.rev.rev:
			return 1
		case a.orphan == b.orphan:
			return 0
		case !a.orphan:
			return -1
		}
		return 1
	})
	e.hasKeep, e.older = false, 0
	for k, c := range cands {
		if k > 0 && c.rev.rev == cands[k-1].rev.rev {
			continue
		}
		if e.hasTomb && c.rev.rev.less(e.tomb) {
			break // never across a deletion
		}
		if cap(buf) < c.rev.n {
			buf = make([]byte, c.rev.n)
		}
		buf = buf[:c.rev.n]
		if _, err := r.ReadAt(buf, c.rev.off); err != nil {
			return buf, cands, fmt.Errorf("salvage: read revision %s again at offset %d: %w", c.rev.rev, c.rev.off, err)
		}
		if crc32.Checksum(buf, castagnoli) != c.rev.sum {
			return buf, cands, fmt.Errorf("revision %s at offset %d: %w", c.rev.rev, c.rev.off, ErrInputChanged)
		}
		// The bytes are the ones the scan parsed (the checksum says so):
		// parsed again at the wire level, without copying the value.
		x, ok := parseKV(buf)
		if !ok {
			return buf, cands, fmt.Errorf("revision %s at offset %d: %w", c.rev.rev, c.rev.off, ErrInputChanged)
		}
		if err := s.opts.Readable(key, x.value); err != nil {
			if len(s.badRevs[i]) < 64 {
				s.badRevs[i] = append(s.badRevs[i], badRev{rev: c.rev.rev, err: err.Error()})
			}
			continue
		}
		e.hasKeep, e.keep, e.keepOrphan, e.keepLease = true, c.rev, c.orphan, c.lease
		break
	}
	return buf, cands, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
