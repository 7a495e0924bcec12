package clock

import (
	"maps"
	"slices"
	"time"
)

// skewNeighbours is how many of the other writers' stamps on each side of
// a stamp, in log order, it is compared with.
const skewNeighbours = 4

// skewReach bounds how far, in stamps, the neighbours are looked for.
const skewReach = 512

// offsets says, for each stamp, how far it lies out of order with the
// other writers' now-stamps (those with an upper bound) around it: before
// the median of those just before it (negative), or after the median of
// those just after it (positive); 0 between them, however far apart they
// are. has says whether it tells: a stamp that bounds only what follows
// may be old by right (a time a value carries unchanged), so only one
// ahead tells.
func offsets[K Order](stamps []stamp[K]) ([]time.Duration, []bool) {
	off, has := make([]time.Duration, len(stamps)), make([]bool, len(stamps))
	links := [2]neighbourLinks{newNeighbourLinks(stamps, -1), newNeighbourLinks(stamps, 1)}
	var near [2][]time.Time
	for i, s := range stamps {
		for k, dir := range []int{-1, 1} {
			near[k] = near[k][:0]
			l := links[k]
			for j := l.upper(i + dir); j >= 0 && len(near[k]) < skewNeighbours && (j-i)*dir <= skewReach; {
				if stamps[j].writer == s.writer {
					j = l.other[j]
					continue
				}
				near[k] = append(near[k], stamps[j].at)
				j = l.upper(j + dir)
			}
		}
		if len(near[0]) == 0 && len(near[1]) == 0 {
			continue
		}
		has[i] = true
		if b := median(near[0]); len(near[0]) > 0 && s.at.Before(b) {
			off[i] = s.at.Sub(b)
		}
		if a := median(near[1]); len(near[1]) > 0 && s.at.After(a) {
			off[i] = s.at.Sub(a)
		}
		if s.upper < 0 && off[i] <= 0 {
			// An old time carried unchanged tells nothing of its
			// writer's clock.
			off[i], has[i] = 0, false
		}
	}
	return off, has
}

// neighbourLinks lead from a stamp to its neighbours with an upper bound
// one way (dir), skipping runs of one writer's: up[i] is the first stamp
// with an upper bound from i on that way, other[i] the first past i whose
// writer is not stamps[i]'s (-1: none).
type neighbourLinks struct {
	up, other []int
}

func newNeighbourLinks[K Order](stamps []stamp[K], dir int) neighbourLinks {
	n := len(stamps)
	l := neighbourLinks{up: make([]int, n), other: make([]int, n)}
	start, end := 0, n
	if dir > 0 {
		start, end = n-1, -1
	}
	// Walk against dir, so each stamp's links that way are known.
	for i := start; i != end; i -= dir {
		l.up[i] = l.upper(i + dir)
		if stamps[i].upper >= 0 {
			l.up[i] = i
		}
		l.other[i] = -1
		if j := l.upper(i + dir); j >= 0 {
			l.other[i] = j
			if stamps[j].writer == stamps[i].writer {
				l.other[i] = l.other[j]
			}
		}
	}
	return l
}

// upper is up[i], -1 past either end.
func (l neighbourLinks) upper(i int) int {
	if i < 0 || i >= len(l.up) {
		return -1
	}
	return l.up[i]
}

// median is the middle of ts (sorted in place); zero when empty.
func median(ts []time.Time) time.Time {
	if len(ts) == 0 {
		return time.Time{}
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	return ts[len(ts)/2]
}

// worstWriter is the writer whose stamps lie furthest, by their median,
// from the other writers' around them, when that is more than Skew.
// Between two writers as far off, kube-apiserver is kept, then the one with
// more stamps.
func worstWriter[K Order](stamps []stamp[K]) (Skewed, bool) {
	off, has := offsets(stamps)
	per := map[string][]time.Duration{}
	for i, s := range stamps {
		if has[i] {
			per[s.writer] = append(per[s.writer], off[i])
		}
	}
	var worst Skewed
	found := false
	for _, w := range slices.Sorted(maps.Keys(per)) {
		o := per[w]
		slices.Sort(o)
		med := o[len(o)/2]
		if med.Abs() <= Skew {
			continue
		}
		switch {
		case !found, worst.Writer == APIServer:
		case w == APIServer, med.Abs() < worst.Offset.Abs(), med.Abs() == worst.Offset.Abs() && len(o) >= worst.Stamps:
			continue
		}
		worst, found = Skewed{Writer: w, Offset: med, Stamps: len(o)}, true
	}
	return worst, found
}

// withoutOutliers drops the stamps that lie more than Skew from the other
// writers' around them (ahead, for one that bounds only what follows) and
// returns how many it dropped.
func withoutOutliers[K Order](stamps []stamp[K]) ([]stamp[K], int) {
	off, has := offsets(stamps)
	kept := stamps[:0:0]
	for i, s := range stamps {
		if has[i] && off[i].Abs() > Skew {
			continue
		}
		kept = append(kept, s)
	}
	return kept, len(stamps) - len(kept)
}
