package codec

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
)

// LastAppliedAnnotation is the annotation `kubectl apply` keeps the applied
// object in. On a Secret it holds the Secret's data in the clear, so it is
// redacted wherever the data is.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// IsSecret reports whether content is a core Secret (kind Secret in the
// core group, whose apiVersion has no group part), the kind whose values
// are redacted. A kind named Secret in another group is not one.
func IsSecret(content map[string]any) bool {
	if content == nil || content["kind"] != "Secret" {
		return false
	}
	av, _ := content["apiVersion"].(string)
	return !strings.Contains(av, "/")
}

// secretField is one place in a Secret that holds secret values: the
// values of data and stringData, and the last-applied annotation.
type secretField struct {
	path []string // the map holding the values
	// key is the one member of that map that is secret; "" means every one.
	key string
	// base64 says the values are base64 text whose size is their decoded
	// size (data).
	base64 bool
}

var secretFields = []secretField{
	{path: []string{"data"}, base64: true},
	{path: []string{"stringData"}},
	{path: []string{"metadata", "annotations"}, key: LastAppliedAnnotation},
}

// secretSize stands for a redacted value: its size, and a digest so that
// two values can be compared without being kept.
type secretSize struct {
	n   int
	sum [sha256.Size]byte
}

func (s secretSize) String() string { return fmt.Sprintf("%d bytes", s.n) }

func sizeOf(v any, isBase64 bool) secretSize {
	s, ok := v.(string)
	if !ok {
		s = fmt.Sprint(v)
	}
	n := len(s)
	if isBase64 {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			n = len(b)
		}
	}
	return secretSize{n: n, sum: sha256.Sum256([]byte(s))}
}

// mapAt returns the map at path in content, or nil.
func mapAt(content map[string]any, path []string) map[string]any {
	m := content
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}

// withSecretSizes returns a copy of a Secret's content in which each secret
// value is replaced by replace(field, key, its size): only the maps on the
// way to a replaced value are copied; content is not modified.
func withSecretSizes(content map[string]any, replace func(f secretField, key string, size secretSize) any) map[string]any {
	out := shallowCopy(content)
	for _, f := range secretFields {
		src := mapAt(content, f.path)
		if len(src) == 0 {
			continue
		}
		if f.key != "" {
			if _, ok := src[f.key]; !ok {
				continue
			}
		}
		// Copy the maps along the path, then the map holding the values.
		m := out
		for _, p := range f.path {
			next := shallowCopy(m[p].(map[string]any))
			m[p] = next
			m = next
		}
		for k, v := range src {
			if f.key != "" && k != f.key {
				continue
			}
			m[k] = replace(f, k, sizeOf(v, f.base64))
		}
	}
	return out
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// marker is the text that replaces a redacted value.
func marker(s secretSize, note string) string {
	if note != "" {
		return fmt.Sprintf("<redacted: %d bytes, %s>", s.n, note)
	}
	return fmt.Sprintf("<redacted: %d bytes>", s.n)
}

// RedactSecret returns content with a Secret's secret values replaced by
// "<redacted: N bytes>": each value of data (N is the decoded size) and of
// stringData, and the kubectl.kubernetes.io/last-applied-configuration
// annotation. Every command that prints an object uses it unless asked to
// show secrets. Content that is not a Secret is returned as is; for a
// Secret a copy is returned and content is left unmodified.
func RedactSecret(content map[string]any) map[string]any {
	if !IsSecret(content) {
		return content
	}
	return withSecretSizes(content, func(_ secretField, _ string, s secretSize) any { return marker(s, "") })
}

// RedactSecretPair redacts two versions of an object for a diff, as
// RedactSecret does, so that the diff still shows which values changed: a
// value that differs from before's is marked "changed" in after (so the
// diff shows it even when its size stayed the same); an unchanged one gets
// the same marker on both sides. Either may be nil. Nothing is redacted
// unless one of them is a Secret; neither is modified.
func RedactSecretPair(before, after map[string]any) (map[string]any, map[string]any) {
	if !IsSecret(before) && !IsSecret(after) {
		return before, after
	}
	var rb, ra map[string]any
	if before != nil {
		rb = withSecretSizes(before, func(_ secretField, _ string, s secretSize) any { return marker(s, "") })
	}
	if after != nil {
		ra = withSecretSizes(after, func(f secretField, k string, s secretSize) any {
			old, had := mapAt(before, f.path)[k]
			switch {
			case !had:
				return marker(s, "")
			case sizeOf(old, f.base64).sum != s.sum:
				return marker(s, "changed")
			}
			return marker(s, "")
		})
	}
	return rb, ra
}

// secretSizes returns a Secret's content with each secret value replaced
// by its secretSize, for Changes.
func secretSizes(content map[string]any) map[string]any {
	if content == nil {
		return nil
	}
	return withSecretSizes(content, func(_ secretField, _ string, s secretSize) any { return s })
}

func valuesEqual(a, b any) bool { return reflect.DeepEqual(a, b) }
