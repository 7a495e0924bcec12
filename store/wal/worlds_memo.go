package wal

// The memo of the search of worlds.
//
// Worlds that differ in what the log's rest never reads have the same
// future: a key whose last entry is behind (checked against the db
// already), which of two writers' compares failed when both keys are
// behind, how a revision count was reached. Without a memo the search
// follows each of them to the end: independent unknowns (a conflict here,
// a delete of a key from before the log there) multiply. With it, a state
// reached again between two entries (with X known) takes what its future
// gave the first time: consistent (the path is a world, with each of the
// worlds that future holds) or not (the path ends).
//
// A state is hashed (128 bits, two independent mixes: a collision would
// merge two different states, with odds far below anything else that can
// go wrong) over what the rest of the log reads: X, the revisions made so
// far, the compaction state, the revokes of leases from before the log and
// every lease, and every key that an entry from here on names or the end
// still checks (its state, its facts before the log, the revisions of its
// puts). The keys' and leases' parts are kept as running hashes, brought
// up to date from the keys and leases changed since the last state hashed.

// worldsMemo turns the memo on (tests turn it off to compare).
var worldsMemo = true

// xMemo is a state the search reached between two entries: whether the
// future from it is worked out (done), and whether it held a world.
type xMemo struct {
	start       int64 // completions when it was reached
	depth       int32 // branch points on the path then
	done, found bool
}

// Seeds of the two mixes of the state's hash.
const (
	memoSeed1 = 0x9e3779b97f4a7c15
	memoSeed2 = 0xc2b2ae3d27d4eb4f
)

// mix64 folds v into h (splitmix64's finalizer over their sum).
func mix64(h, v uint64) uint64 {
	z := h + v + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// symHash folds sym into h: every field in its place, and the excluded
// values followed by their count, so that no two syms fold alike but by
// a collision of the mix.
func (s *worlds) symHash(h uint64, sym *xSym) uint64 {
	h = mix64(h, uint64(sym.lo))
	h = mix64(h, uint64(sym.hi))
	h = mix64(h, uint64(sym.v))
	h = mix64(h, uint64(b2i(sym.pinned)))
	n := uint64(0)
	for i := sym.not; i != xNone; i = s.excl[i].next {
		h = mix64(h, uint64(s.excl[i].v))
		n++
	}
	return mix64(h, n)
}

// keyHash is key k's part of the state's hash under seed (0: the key is
// not read from entry e on).
func (s *worlds) keyHash(k, e int32, seed uint64) uint64 {
	key := &s.keys[k]
	if s.last[k] < e && key.residual == 0 && (key.goneTo == 0 || key.goneSure || key.preExists == 0) {
		return 0
	}
	h := mix64(seed, uint64(k))
	flags := uint64(key.st) | uint64(key.crKind)<<8 | uint64(key.verKind)<<16 | uint64(uint8(key.preExists))<<24
	if key.final {
		flags |= 1 << 32
	}
	if key.goneSure {
		flags |= 1 << 33
	}
	if key.preIx != xNone {
		flags |= 1 << 34
	}
	for _, v := range []uint64{flags, uint64(key.modC), uint64(key.crV), uint64(key.verN), uint64(key.lease), key.hash, key.putsH,
		uint64(key.confirmed), uint64(key.residual), uint64(key.goneFrom), uint64(key.goneTo)} {
		h = mix64(h, v)
	}
	if key.preIx != xNone {
		p := &s.pre[key.preIx]
		for _, sym := range []*xSym{&p.mod, &p.create, &p.ver, &p.lease, &p.val} {
			h = s.symHash(h, sym)
		}
	}
	return h | 1
}

// leaseHash is lease i's part of the state's hash under seed.
func (s *worlds) leaseHash(i int32, seed uint64) uint64 {
	l := &s.leases[i]
	h := mix64(seed, uint64(i))
	pre := uint64(0)
	if l.pre {
		pre = 1
	}
	return mix64(mix64(mix64(h, uint64(uint8(l.st))), pre), l.attH) | 1
}

// stateHash brings the keys' and leases' running hashes up to date and
// returns the hash of the state between entry e-1 and entry e.
func (s *worlds) stateHash(e int32) [2]uint64 {
	for _, k := range s.dirtyK[s.g.dirtyK:] {
		h1, h2 := s.keyHash(k, e, memoSeed1), s.keyHash(k, e, memoSeed2)
		key := &s.keys[k]
		if h1 == key.zh1 && h2 == key.zh2 {
			continue
		}
		s.g.h1 ^= key.zh1 ^ h1
		s.g.h2 ^= key.zh2 ^ h2
		key = s.trailKeyClean(k)
		key.zh1, key.zh2 = h1, h2
	}
	s.g.dirtyK = int32(len(s.dirtyK))
	for _, i := range s.dirtyL[s.g.dirtyL:] {
		h1, h2 := s.leaseHash(i, memoSeed1), s.leaseHash(i, memoSeed2)
		l := &s.leases[i]
		if h1 == l.zh1 && h2 == l.zh2 {
			continue
		}
		s.g.h1 ^= l.zh1 ^ h1
		s.g.h2 ^= l.zh2 ^ h2
		l = s.trailLeaseClean(i)
		l.zh1, l.zh2 = h1, h2
	}
	s.g.dirtyL = int32(len(s.dirtyL))
	var out [2]uint64
	for j, seed := range []uint64{memoSeed1, memoSeed2} {
		h := mix64(seed, uint64(e))
		for _, v := range []uint64{uint64(s.g.x.v), uint64(s.g.c), uint64(s.g.kLog), s.g.revH, uint64(len(s.revokes)), uint64(s.g.firstHeld)} {
			h = mix64(h, v)
		}
		h = s.symHash(h, &s.g.k0)
		if j == 0 {
			out[0] = h ^ s.g.h1
		} else {
			out[1] = h ^ s.g.h2
		}
	}
	return out
}

// memoCheck looks the state before entry e up (X known): it returns
// whether it was reached before, and then whether its future held a world;
// else it is kept, its future to be worked out from here.
func (s *worlds) memoCheck(e int32) (seen, found bool) {
	h := s.stateHash(e)
	if i, ok := s.memo[h]; ok {
		m := &s.memos[i]
		if m.done {
			return true, m.found
		}
		// Reached again while its future is being worked out: a path
		// cannot come back to a state between the same two entries, so
		// this is not it (taken as new).
		return false, false
	}
	s.memo[h] = int32(len(s.memos))
	s.open = append(s.open, int32(len(s.memos)))
	s.memos = append(s.memos, xMemo{start: s.completions, depth: int32(len(s.stack))})
	return false, false
}

// memoDone closes the states whose futures are worked out once the search
// goes back to branch point i (-1: the search is over).
func (s *worlds) memoDone(i int) {
	for len(s.open) > 0 {
		m := &s.memos[s.open[len(s.open)-1]]
		if int(m.depth) <= i {
			return
		}
		m.done, m.found = true, s.completions > m.start
		s.open = s.open[:len(s.open)-1]
	}
}
