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
	// was added (Old) or removed (New). For a Secret's secret value (Secret
	// set) they are its size ("12 bytes"), never the value.
	Old, New string
	// Secret is true when the values are a Secret's secret values (see
	// RedactSecret), which Old and New give only the size of.
	Secret bool
}

func (c Change) String() string {
	switch {
	case c.Secret && c.Old == "":
		return fmt.Sprintf("+%s (%s)", c.Path, c.New)
	case c.Secret && c.New == "":
		return fmt.Sprintf("-%s (%s)", c.Path, c.Old)
	case c.Secret:
		return fmt.Sprintf("%s changed (%s→%s)", c.Path, c.Old, c.New)
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

// Changes lists the leaf differences between two object contents (either
// may be nil), sorted by path. Lists are compared as whole values. Unless
// showSecrets, a Secret's secret values (the values of data and
// stringData, and the last-applied-configuration annotation, as for
// RedactSecret) are compared by digest and reported by size only.
func Changes(before, after map[string]any, showSecrets bool) []Change {
	if !showSecrets && (IsSecret(before) || IsSecret(after)) {
		before, after = secretSizes(before), secretSizes(after)
	}
	a, b := map[string]any{}, map[string]any{}
	flatten("", before, a)
	flatten("", after, b)
	var out []Change
	for p, av := range a {
		bv, ok := b[p]
		switch {
		case !ok:
			out = append(out, change(p, av, true, nil, false))
		case !valuesEqual(av, bv):
			out = append(out, change(p, av, true, bv, true))
		}
	}
	for p, bv := range b {
		if _, ok := a[p]; !ok {
			out = append(out, change(p, nil, false, bv, true))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// change is the Change at path p from old (if hasOld) to new (if hasNew).
func change(p string, old any, hasOld bool, new any, hasNew bool) Change {
	c := Change{Path: shortPath(p)}
	for _, v := range []any{old, new} {
		if _, ok := v.(secretSize); ok {
			c.Secret = true
		}
	}
	if hasOld {
		c.Old = short(old)
	}
	if hasNew {
		c.New = short(new)
	}
	return c
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
	switch v := v.(type) {
	case secretSize:
		return v.String()
	case string:
		s = v
	default:
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
