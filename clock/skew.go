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

// offsets says, for each stamp, how far it lies from the median of the
// other writers' now-stamps (those with an upper bound) around it, and
// whether it tells: a stamp that bounds only what follows may be old by
// right (a time a value carries unchanged), so only one ahead tells.
func offsets(stamps []stamp) ([]time.Duration, []bool) {
	off, has := make([]time.Duration, len(stamps)), make([]bool, len(stamps))
	near := make([]time.Time, 0, 2*skewNeighbours)
	for i, s := range stamps {
		near = near[:0]
		for dir := -1; dir <= 1; dir += 2 {
			n := 0
			for j := i + dir; j >= 0 && j < len(stamps) && n < skewNeighbours && (j-i)*dir <= skewReach; j += dir {
				if o := stamps[j]; o.writer != s.writer && o.upper >= 0 {
					near = append(near, o.at)
					n++
				}
			}
		}
		if len(near) == 0 {
			continue
		}
		slices.SortFunc(near, func(a, b time.Time) int { return a.Compare(b) })
		off[i], has[i] = s.at.Sub(near[len(near)/2]), true
		if s.upper < 0 && off[i] <= 0 {
			// An old time carried unchanged tells nothing of its
			// writer's clock.
			off[i], has[i] = 0, false
		}
	}
	return off, has
}

// worstWriter is the writer whose stamps lie furthest, by their median,
// from the other writers' around them, when that is more than Skew.
// Between two writers as far off, kube-apiserver is kept, then the one with
// more stamps.
func worstWriter(stamps []stamp) (Skewed, bool) {
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
func withoutOutliers(stamps []stamp) ([]stamp, int) {
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
