package stored

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/rogpeppe/go-internal/diff"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/codec"
)

// view returns the YAML of an object's JSON view with resourceVersion set
// to rev (none when rev is 0).
func view(content map[string]any, rev int64) ([]byte, error) {
	if content == nil {
		return nil, nil
	}
	content = codec.CopyContent(content)
	if md := codec.MetadataOf(content); md != nil {
		delete(md, "resourceVersion")
		if rev != 0 {
			md["resourceVersion"] = strconv.FormatInt(rev, 10)
		}
	}
	return yaml.Marshal(content)
}

// RenderDiff returns a unified diff of the YAML views of two objects
// (either may be nil: a creation or a deletion) under the given header
// names, each with resourceVersion set to its revision, and a Secret's
// values redacted unless c.ShowSecrets: the diff writes show.
func (c Codec) RenderDiff(oldName string, before *codec.Object, oldRev int64, newName string, after *codec.Object, newRev int64) (string, error) {
	var a, b map[string]any
	if before != nil {
		a = before.Content
	}
	if after != nil {
		b = after.Content
	}
	if !c.ShowSecrets {
		a, b = codec.RedactSecretPair(a, b)
	}
	ya, err := view(a, oldRev)
	if err != nil {
		return "", fmt.Errorf("diff: %w", err)
	}
	yb, err := view(b, newRev)
	if err != nil {
		return "", fmt.Errorf("diff: %w", err)
	}
	d := diff.Diff(oldName, ya, newName, yb)
	// diff.Diff starts with a "diff a b" line; a unified diff starts at "---".
	if i := bytes.Index(d, []byte("\n--- ")); i >= 0 {
		d = d[i+1:]
	}
	return string(d), nil
}
