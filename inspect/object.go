package inspect

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/etcdpvc/etcdpvc/codec"
)

// ObjectFormat says how an object is printed (`get`, `decode`).
type ObjectFormat struct {
	Output      string // yaml or json
	ShowSecrets bool
	// HideManagedFields drops metadata.managedFields, as kubectl does by
	// default.
	HideManagedFields bool
}

// RenderObject returns an object's content as YAML, or as JSON indented by
// four spaces (Output "json"), a Secret's values redacted unless
// ShowSecrets. content is not changed.
func RenderObject(content map[string]any, o ObjectFormat) ([]byte, error) {
	if !o.ShowSecrets {
		content = codec.RedactSecret(content)
	}
	if o.HideManagedFields {
		content = withoutManagedFields(content)
	}
	if o.Output != "json" {
		return codec.YAML(content)
	}
	// No HTML escaping: redaction markers print as <redacted: N bytes>.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	if err := enc.Encode(content); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// withMetadata returns a shallow copy of content whose metadata is a copy
// changed by edit.
func withMetadata(content map[string]any, edit func(md map[string]any)) map[string]any {
	out := make(map[string]any, len(content))
	for k, v := range content {
		out[k] = v
	}
	md, _ := content["metadata"].(map[string]any)
	m := make(map[string]any, len(md)+1)
	for k, v := range md {
		m[k] = v
	}
	edit(m)
	out["metadata"] = m
	return out
}

// withoutManagedFields returns content without metadata.managedFields (a
// copy when there were some).
func withoutManagedFields(content map[string]any) map[string]any {
	md, ok := content["metadata"].(map[string]any)
	if !ok || md["managedFields"] == nil {
		return content
	}
	return withMetadata(content, func(m map[string]any) { delete(m, "managedFields") })
}

// WithResourceVersion returns a copy of content with
// metadata.resourceVersion set to the key's mod revision, as the
// apiserver serves it.
func WithResourceVersion(content map[string]any, rev int64) map[string]any {
	return withMetadata(content, func(m map[string]any) { m["resourceVersion"] = strconv.FormatInt(rev, 10) })
}
