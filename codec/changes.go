package codec

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Change is one difference between two versions of an object.
type Change struct {
	// Path is the dotted field path ("spec.resources.requests.storage");
	// metadata fields drop the "metadata." prefix.
	Path string
	// Old and New are the values as short JSON text; empty when the field
	// was added (Old) or removed (New).
	Old, New string
}

func (c Change) String() string {
	switch {
	case c.Old == "":
		return "+" + c.Path
	case c.New == "":
		return "-" + c.Path
	default:
		return fmt.Sprintf("%s %s→%s", c.Path, c.Old, c.New)
	}
}

// ignoredPaths are not worth reporting as changes.
var ignoredPaths = map[string]bool{
	"metadata.managedFields":   true,
	"metadata.resourceVersion": true,
}

// Changes lists the leaf differences between two object contents, sorted
// by path. Lists are compared as whole values.
func Changes(before, after map[string]any) []Change {
	a, b := map[string]any{}, map[string]any{}
	flatten("", before, a)
	flatten("", after, b)
	var out []Change
	for p, av := range a {
		bv, ok := b[p]
		switch {
		case !ok:
			out = append(out, Change{Path: shortPath(p), Old: short(av)})
		case short(av) != short(bv):
			out = append(out, Change{Path: shortPath(p), Old: short(av), New: short(bv)})
		}
	}
	for p, bv := range b {
		if _, ok := a[p]; !ok {
			out = append(out, Change{Path: shortPath(p), New: short(bv)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// SummarizeChanges renders changes on one line, at most max of them.
func SummarizeChanges(cs []Change, max int) string {
	if len(cs) == 0 {
		return "no change"
	}
	var parts []string
	for i, c := range cs {
		if i == max {
			parts = append(parts, fmt.Sprintf("(+%d more)", len(cs)-max))
			break
		}
		parts = append(parts, c.String())
	}
	return strings.Join(parts, ", ")
}

func flatten(prefix string, v any, out map[string]any) {
	if ignoredPaths[prefix] {
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		out[prefix] = v
		return
	}
	// An empty object is reported through its members, like an absent one.
	for k, sub := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		flatten(p, sub, out)
	}
}

func shortPath(p string) string { return strings.TrimPrefix(p, "metadata.") }

func short(v any) string {
	var s string
	if str, ok := v.(string); ok {
		s = str
	} else {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	if s == "" {
		s = `""`
	}
	return s
}
