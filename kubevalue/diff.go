package kubevalue

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"

	"github.com/rogpeppe/go-internal/diff"

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
	return codec.YAML(content)
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
	if c.HideManagedFields {
		var ha, hb []any
		a, ha = withoutManaged(a)
		b, hb = withoutManaged(b)
		if a != nil && b != nil && !reflect.DeepEqual(ha, hb) {
			// An edit changed them (a creation or a deletion shows the
			// object without them, as get does).
			newName += " " + HiddenNote
		}
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
	if len(d) == 0 {
		// Only what is hidden changed: the header says so.
		return fmt.Sprintf("--- %s\n+++ %s\n", oldName, newName), nil
	}
	// diff.Diff starts with a "diff a b" line; a unified diff starts at "---".
	if i := bytes.Index(d, []byte("\n--- ")); i >= 0 {
		d = d[i+1:]
	}
	return string(d), nil
}

// LastAppliedAnnotation is the annotation kubectl apply keeps the last
// applied object in.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// HiddenNote ends the new side's header of a diff whose hidden fields
// changed (Codec.HideManagedFields).
const HiddenNote = "(metadata.managedFields or the last-applied-configuration annotation changed, not shown: --show-managed-fields shows them)"

// withoutManaged returns a copy of content without metadata.managedFields
// and the last-applied-configuration annotation (an annotations map left
// empty goes too), and what was taken out (nil: nothing), to compare.
func withoutManaged(content map[string]any) (map[string]any, []any) {
	md := codec.MetadataOf(content)
	if md == nil {
		return content, nil
	}
	ann, _ := md["annotations"].(map[string]any)
	mf, hasMF := md["managedFields"]
	hasMF = hasMF && mf != nil
	la, hasLA := ann[LastAppliedAnnotation]
	if !hasMF && !hasLA {
		if _, null := md["managedFields"]; null {
			content = codec.CopyContent(content)
			delete(codec.MetadataOf(content), "managedFields")
		}
		return content, nil
	}
	hidden := []any{hasMF, mf, hasLA, la}
	content = codec.CopyContent(content)
	md = codec.MetadataOf(content)
	delete(md, "managedFields")
	if ann, ok := md["annotations"].(map[string]any); ok && hasLA {
		delete(ann, LastAppliedAnnotation)
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	return content, hidden
}
