package inspect

import (
	"fmt"
	"sort"
)

// Rect is a rectangle of a treemap: its top left corner and its size.
type Rect struct{ X, Y, W, H float64 }

// transposed is r mirrored across the diagonal.
func (r Rect) transposed() Rect { return Rect{r.Y, r.X, r.H, r.W} }

// TreemapCell is one cell of a treemap: a name, the value its area is
// in proportion to, its rectangle, and the cells it is divided into.
type TreemapCell struct {
	Name     string
	Value    int64
	Rect     Rect
	Children []TreemapCell
}

// Squarify lays out values (each positive) in r, their areas in
// proportion to them, as the squarified treemap of Bruls, Huizing and van
// Wijk does: the values in decreasing order, rows laid along the shorter
// side while that keeps the row's worst aspect ratio from growing. It
// returns the rectangles in the order of values.
func Squarify(values []int64, r Rect) []Rect {
	out := make([]Rect, len(values))
	order := make([]int, 0, len(values))
	var total float64
	for i, v := range values {
		if v > 0 {
			order = append(order, i)
			total += float64(v)
		}
	}
	if total == 0 || r.W <= 0 || r.H <= 0 {
		return out
	}
	sort.SliceStable(order, func(a, b int) bool { return values[order[a]] > values[order[b]] })
	scale := r.W * r.H / total
	area := func(k int) float64 { return float64(values[order[k]]) * scale }
	for i := 0; i < len(order); {
		short := min(r.W, r.H)
		j := i + 1
		for j < len(order) && worst(i, j+1, short, area) <= worst(i, j, short, area) {
			j++
		}
		var sum float64
		for k := i; k < j; k++ {
			sum += area(k)
		}
		if j == len(order) {
			sum = r.W * r.H // the last row fills what is left, rounding aside
		}
		// A column on the left, as wide as the row's area needs; a row
		// along the top is the same in r transposed.
		across := r.W < r.H
		if across {
			r = r.transposed()
		}
		w := sum / r.H
		y := r.Y
		for k := i; k < j; k++ {
			h := area(k) / w
			if k == j-1 {
				h = r.Y + r.H - y
			}
			cell := Rect{r.X, y, w, h}
			if across {
				cell = cell.transposed()
			}
			out[order[k]] = cell
			y += h
		}
		r.X, r.W = r.X+w, r.W-w
		if across {
			r = r.transposed()
		}
		i = j
	}
	return out
}

// worst is the worst aspect ratio of the row of areas i to j (excluded)
// laid along a side of length side.
func worst(i, j int, side float64, area func(int) float64) float64 {
	var sum, hi, lo float64
	for k := i; k < j; k++ {
		a := area(k)
		sum += a
		if k == i || a > hi {
			hi = a
		}
		if k == i || a < lo {
			lo = a
		}
	}
	s2, w2 := sum*sum, side*side
	return max(w2*hi/s2, s2/(w2*lo))
}

// BytesTreemap is the treemap of the current bytes of groups (by resource
// and namespace) in r: a cell per resource with bytes, divided into a cell
// per namespace, inset by pad inside its resource; the namespaces too small
// to see are folded into one cell (foldSmall).
func BytesTreemap(groups []*GroupStats, r Rect, pad float64) []TreemapCell {
	type res struct {
		name  string
		bytes int64
		ns    []TreemapCell
	}
	byName := map[string]*res{}
	var list []*res
	for _, g := range groups {
		if g.Bytes <= 0 {
			continue
		}
		name := ""
		if g.Resource != nil {
			name = *g.Resource
		}
		x := byName[name]
		if x == nil {
			x = &res{name: name}
			byName[name] = x
			list = append(list, x)
		}
		x.bytes += g.Bytes
		ns := NoNamespace
		if g.Namespace != nil && *g.Namespace != "" {
			ns = *g.Namespace
		}
		x.ns = append(x.ns, TreemapCell{Name: ns, Value: g.Bytes})
	}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].bytes != list[j].bytes {
			return list[i].bytes > list[j].bytes
		}
		return list[i].name < list[j].name
	})
	values := make([]int64, len(list))
	for i, x := range list {
		values[i] = x.bytes
		x.ns = foldSmall(x.ns, x.bytes)
	}
	cells := make([]TreemapCell, len(list))
	for i, rect := range Squarify(values, r) {
		x := list[i]
		inner := Rect{rect.X + pad, rect.Y + pad + 2*pad, max(0, rect.W-2*pad), max(0, rect.H-4*pad)}
		nv := make([]int64, len(x.ns))
		for k, c := range x.ns {
			nv[k] = c.Value
		}
		for k, nr := range Squarify(nv, inner) {
			x.ns[k].Rect = nr
		}
		cells[i] = TreemapCell{Name: x.name, Value: x.bytes, Rect: rect, Children: x.ns}
	}
	return cells
}

// Folding: a resource's namespaces beyond the foldKeep largest, each under
// foldShare of the resource's bytes, are drawn as one cell.
const (
	foldKeep  = 40
	foldShare = 0.005
)

// foldSmall returns ns (the namespace cells of a resource of total bytes)
// largest first, with the namespaces past the foldKeep largest that each
// hold less than foldShare of total folded into one cell "N more
// namespaces" (at least two: one is drawn as itself). A cluster with
// thousands of namespaces would otherwise draw thousands of cells too
// small to read.
func foldSmall(ns []TreemapCell, total int64) []TreemapCell {
	sort.SliceStable(ns, func(i, j int) bool {
		if ns[i].Value != ns[j].Value {
			return ns[i].Value > ns[j].Value
		}
		return ns[i].Name < ns[j].Name
	})
	cut := len(ns)
	for i := foldKeep; i < len(ns); i++ {
		if float64(ns[i].Value) < foldShare*float64(total) {
			cut = i
			break
		}
	}
	if len(ns)-cut < 2 {
		return ns
	}
	var rest int64
	for _, c := range ns[cut:] {
		rest += c.Value
	}
	return append(ns[:cut:cut], TreemapCell{Name: fmt.Sprintf("%d more namespaces", len(ns)-cut), Value: rest})
}
