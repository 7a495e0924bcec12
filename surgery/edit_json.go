package surgery

import (
	"bytes"
	encjson "encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// Patch types.
const (
	// PatchMerge is a JSON merge patch (RFC 7386), `kubectl patch --type merge`.
	PatchMerge = "merge"
	// PatchJSON is a JSON patch (RFC 6902), `kubectl patch --type json`.
	PatchJSON = "json"
)

// Patch applies a JSON merge patch or a JSON patch to the object's JSON
// view (what `kubectl get -o json` shows, without resourceVersion). See the
// package comment for how the result is stored.
type Patch struct {
	// Type is PatchMerge or PatchJSON.
	Type string
	// Patch is the patch document.
	Patch []byte
}

// ErrBadPatch means a patch document is not one of its type: JSON that
// does not parse, a merge patch that is not an object, a JSON patch that
// is not an array of operations. Patch.Check returns an error matching it
// that says which, with the position of a syntax error.
var ErrBadPatch = errors.New("the patch is not valid")

// Check reports whether the patch document is one of its type, before any
// object is read: valid JSON (else the line, column and byte of the
// error), a JSON object for a merge patch (RFC 7386: another value would
// replace the whole object), an array of operations for a JSON patch
// (RFC 6902). The error matches ErrBadPatch.
func (p Patch) Check() error {
	var name string
	switch p.Type {
	case PatchMerge:
		name = "merge patch"
	case PatchJSON:
		name = "JSON patch"
	default:
		return badPatch("patch type %q: want %q or %q", p.Type, PatchMerge, PatchJSON)
	}
	var v any
	if err := encjson.Unmarshal(p.Patch, &v); err != nil {
		var se *encjson.SyntaxError
		if errors.As(err, &se) {
			end := se.Error() == "unexpected end of JSON input"
			line, col := position(p.Patch, se.Offset, end)
			return badPatch("the %s is not valid JSON: at line %d, column %d (byte %d): %s", name, line, col, se.Offset, se.Error())
		}
		return badPatch("the %s is not valid JSON: %v", name, err)
	}
	switch p.Type {
	case PatchMerge:
		if _, ok := v.(map[string]any); !ok {
			return badPatch("the merge patch is %s, not a JSON object ({\"field\": value, ...})", jsonKind(v))
		}
	case PatchJSON:
		if _, ok := v.([]any); !ok {
			return badPatch("the JSON patch is %s, not an array of operations ([{\"op\": ..., \"path\": ...}, ...]; --type merge takes a merge patch)", jsonKind(v))
		}
		if _, err := jsonpatch.DecodePatch(p.Patch); err != nil {
			return badPatch("the JSON patch is not an array of operations: %v", err)
		}
	}
	return nil
}

// badPatchError is a patch that is not one of its type; it matches
// ErrBadPatch.
type badPatchError struct{ msg string }

func (e *badPatchError) Error() string { return e.msg }

// Is reports whether target is ErrBadPatch.
func (e *badPatchError) Is(target error) bool { return target == ErrBadPatch }

func badPatch(format string, args ...any) error {
	return &badPatchError{msg: fmt.Sprintf(format, args...)}
}

// position returns the line and column (from 1) of a json.SyntaxError's
// Offset in b: the bytes read, the bad one included; with end (the input
// ended too soon), the place just past b's last byte.
func position(b []byte, offset int64, end bool) (line, col int) {
	n := min(max(offset, 1), int64(len(b))+1) - 1
	if end {
		n = min(offset, int64(len(b)))
	}
	line, col = 1, 1
	for _, c := range b[:n] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// Transform implements Edit.
func (p Patch) Transform(cur *kubevalue.Current) ([]byte, error) {
	what := fmt.Sprintf("%s patch of %s %s", p.Type, cur.Obj.GVK.Kind, cur.Obj.Name())
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var doc, text []byte
	var err error
	if cur.Obj.Format == codec.FormatJSON {
		// The patch is applied to the stored text, which keeps the
		// literal text of the numbers it does not touch (1.0, 1e3,
		// integers beyond 2^53), and of those it sets.
		doc = bytes.TrimRight(cur.Plain, "\r\n")
	} else if doc, err = encjson.Marshal(cur.Obj.Content); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var out []byte
	switch p.Type {
	case PatchMerge:
		out, err = jsonpatch.MergePatch(doc, p.Patch)
		if errors.Is(err, jsonpatch.ErrBadJSONPatch) {
			// The library's words name the other patch type.
			err = badPatch("the merge patch does not apply to the object's JSON")
		}
	case PatchJSON:
		var ops jsonpatch.Patch
		ops, err = jsonpatch.DecodePatch(p.Patch)
		if err == nil {
			out, err = ops.Apply(doc)
		}
	default:
		return nil, fmt.Errorf("patch of %s %s: patch type %q: want %q or %q", cur.Obj.GVK.Kind, cur.Obj.Name(), p.Type, PatchMerge, PatchJSON)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	want := map[string]any{}
	if err := utiljson.Unmarshal(out, &want); err != nil {
		return nil, fmt.Errorf("%s: patched document is not an object: %w", what, err)
	}
	if cur.Obj.Format == codec.FormatJSON {
		text = out
	}
	return applyContentText(cur, want, what, text)
}

// Describe implements Edit.
func (p Patch) Describe() string {
	var buf bytes.Buffer
	if err := encjson.Compact(&buf, p.Patch); err != nil {
		buf.Reset()
		buf.Write(p.Patch)
	}
	s := buf.String()
	const max = 300
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%s patch %s", p.Type, s)
}

// Replace replaces the object's JSON view by Content, the way `kubectl
// edit` does; see ParseEdited. metadata.resourceVersion is ignored, and
// metadata.managedFields, when Content has none, are kept as stored
// (EditableYAML does not show them). See the package comment for how the
// result is stored.
type Replace struct {
	Content map[string]any
	// Revision, when not 0, is the mod revision Content was made from (the
	// object shown in the editor): an object changed since is refused, so
	// that the edit does not revert someone else's change.
	Revision int64
}

// Transform implements Edit.
func (r Replace) Transform(cur *kubevalue.Current) ([]byte, error) {
	if r.Revision != 0 && cur.KV.ModRevision != r.Revision {
		return nil, &ConflictError{Key: cur.KV.Key, Read: r.Revision, Current: cur.KV.ModRevision,
			Cause: &store.ConflictError{Key: cur.KV.Key, Expected: r.Revision, Current: cur.KV.ModRevision}}
	}
	want := codec.CopyContent(r.Content)
	if md, ok := want["metadata"].(map[string]any); ok {
		if _, has := md["managedFields"]; !has {
			if old, ok := codec.MetadataOf(cur.Obj.Content)["managedFields"]; ok {
				md["managedFields"] = old
			}
		}
	}
	return applyContent(cur, want, fmt.Sprintf("edit of %s %s", cur.Obj.GVK.Kind, cur.Obj.Name()))
}

// Describe implements Edit.
func (r Replace) Describe() string { return "edit: replace the object with the edited document" }

// identityFields are the members an edit may never change: they decide
// where the object lives and which object it is.
var identityFields = [][]string{
	{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "uid"},
}

// wireMetaFields are the metadata members codec.EditMeta can edit.
var wireMetaFields = []string{"labels", "annotations", "finalizers", "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds"}

// applyContent turns the object's wanted JSON view into its new stored
// value; see the package comment.
func applyContent(cur *kubevalue.Current, want map[string]any, what string) ([]byte, error) {
	return applyContentText(cur, want, what, nil)
}

// applyContentText is applyContent with text, the wanted object as JSON
// text (a patch applied to the stored text), from which a JSON-stored
// object's numbers take their literal text (see codec.MergeJSONText); nil
// when there is none.
func applyContentText(cur *kubevalue.Current, want map[string]any, what string, text []byte) ([]byte, error) {
	obj := cur.Obj
	old := normalize(obj.Content)
	want = normalize(want)
	if err := checkIdentity(old, want); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if jsonEqual(old, want) {
		if text == nil || obj.Format != codec.FormatJSON {
			return cur.Plain, nil
		}
		// Equal once decoded, but the text may still change a number
		// beyond float64's precision: a change the diff of the decoded
		// objects could not show.
		out, err := codec.MergeJSONText(cur.Plain, want, text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if !codec.SameJSONText(out, cur.Plain) {
			return nil, fmt.Errorf("%s: the patch only changes numbers beyond the precision of a decoded object (float64), which the diff cannot show; nothing written", what)
		}
		return cur.Plain, nil
	}
	if onlyWireMeta(old, want) {
		out, ok, err := wireEdit(cur, old, want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return out, nil
		}
		// Not expressible as a wire edit (a reordering, a new
		// deletionTimestamp, …): made by a typed encode below, if allowed.
	}
	switch {
	case obj.Format == codec.FormatJSON:
		if obj.Typed != nil {
			// A compiled-in kind stored as JSON (CRDs, APIServices): the
			// result must still be a valid object of the kind, unless the
			// stored one already is not.
			if _, err := codec.ToTyped(codec.CopyContent(old)); err == nil {
				if _, err := codec.ToTyped(codec.CopyContent(want)); err != nil {
					return nil, fmt.Errorf("%s: the result is not a valid %s: %w", what, obj.GVK.Kind, err)
				}
			}
		}
		out, err := codec.MergeJSONText(cur.Plain, want, text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return out, nil
	case obj.Format == codec.FormatProtobuf && obj.Typed != nil:
		if err := obj.RoundTrips(); err != nil {
			return nil, fmt.Errorf("%s: this build's k8s.io/api does not know every field of this object; a typed re-encode would drop them; use metadata commands (undelete/finalizers/label/annotate), which edit at the wire level: %w", what, err)
		}
		typed, err := codec.ToTyped(want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out, err := codec.EncodeTyped(typed, codec.FormatProtobuf)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%s: kind %s is not in this build's scheme, so only its metadata (labels, annotations, finalizers, ownerReferences, deletion) can be changed, at the wire level: %w", what, obj.GVK, codec.ErrUnsupported)
	}
}

// checkIdentity refuses a change of apiVersion, kind, name, namespace or uid.
func checkIdentity(old, want map[string]any) error {
	for _, path := range identityFields {
		a, b := nested(old, path), nested(want, path)
		if !jsonEqual(a, b) {
			return fmt.Errorf("%s: %w: changing it from %s to %s would move or corrupt the object", strings.Join(path, "."), ErrImmutableField, showValue(a), showValue(b))
		}
	}
	return nil
}

func showValue(v any) string {
	if v == nil {
		return "nothing"
	}
	b, _ := encjson.Marshal(v)
	return string(b)
}

// onlyWireMeta reports whether old and want differ only in metadata members
// that codec.EditMeta edits.
func onlyWireMeta(old, want map[string]any) bool {
	a, b := codec.CopyContent(old), codec.CopyContent(want)
	for _, m := range []map[string]any{codec.MetadataOf(a), codec.MetadataOf(b)} {
		for _, f := range wireMetaFields {
			delete(m, f)
		}
	}
	return jsonEqual(a, b)
}

// wireEdit makes the metadata change from old to want with codec.EditMeta.
// ok is false when the change cannot be expressed as a MetaEdit or the
// result is not exactly want.
func wireEdit(cur *kubevalue.Current, old, want map[string]any) (out []byte, ok bool, err error) {
	om, wm := codec.MetadataOf(old), codec.MetadataOf(want)
	var e codec.MetaEdit
	for _, f := range []struct {
		name string
		set  *map[string]string
		rm   *[]string
	}{
		{"labels", &e.SetLabels, &e.RemoveLabels},
		{"annotations", &e.SetAnnotations, &e.RemoveAnnotations},
	} {
		o, err := stringMap(om[f.name], "metadata."+f.name)
		if err != nil {
			return nil, false, err
		}
		w, err := stringMap(wm[f.name], "metadata."+f.name)
		if err != nil {
			return nil, false, err
		}
		for k, v := range w {
			if ov, has := o[k]; !has || ov != v {
				if *f.set == nil {
					*f.set = map[string]string{}
				}
				(*f.set)[k] = v
			}
		}
		for k := range o {
			if _, has := w[k]; !has {
				*f.rm = append(*f.rm, k)
			}
		}
		sort.Strings(*f.rm)
	}

	of, err := stringList(om["finalizers"], "metadata.finalizers")
	if err != nil {
		return nil, false, err
	}
	wf, err := stringList(wm["finalizers"], "metadata.finalizers")
	if err != nil {
		return nil, false, err
	}
	if !slices.Equal(of, wf) {
		var keep []string
		for _, f := range of {
			if slices.Contains(wf, f) {
				keep = append(keep, f)
			} else if !slices.Contains(e.RemoveFinalizers, f) {
				e.RemoveFinalizers = append(e.RemoveFinalizers, f)
			}
		}
		for _, f := range wf {
			if !slices.Contains(of, f) && !slices.Contains(e.AddFinalizers, f) {
				e.AddFinalizers = append(e.AddFinalizers, f)
				keep = append(keep, f)
			}
		}
		if !slices.Equal(keep, wf) {
			return nil, false, nil
		}
	}

	for _, f := range []string{"deletionTimestamp", "deletionGracePeriodSeconds"} {
		if jsonEqual(om[f], wm[f]) {
			continue
		}
		if wm["deletionTimestamp"] != nil || wm["deletionGracePeriodSeconds"] != nil {
			return nil, false, nil
		}
		e.ClearDeletion = true
	}

	oo, _ := om["ownerReferences"].([]any)
	wo, _ := wm["ownerReferences"].([]any)
	if !jsonEqual(oo, wo) {
		j := 0
		for _, ref := range oo {
			if j < len(wo) && jsonEqual(ref, wo[j]) {
				j++
				continue
			}
			m, _ := ref.(map[string]any)
			uid, _ := m["uid"].(string)
			if uid == "" {
				return nil, false, nil
			}
			e.RemoveOwnerUIDs = append(e.RemoveOwnerUIDs, uid)
		}
		if j != len(wo) {
			return nil, false, nil
		}
	}

	out, err = codec.EditMeta(cur.Plain, e)
	if err != nil {
		return nil, false, err
	}
	after, err := codec.Decode(out)
	if err != nil {
		return nil, false, fmt.Errorf("metadata edit gives a value that does not decode: %w", err)
	}
	if !jsonEqual(normalize(after.Content), want) {
		return nil, false, nil
	}
	return out, true, nil
}

// stringMap reads a JSON object of strings (labels, annotations).
func stringMap(v any, what string) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want an object of strings, got %s", what, showValue(v))
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s: value of %q is %s, not a string", what, k, showValue(x))
		}
		out[k] = s
	}
	return out, nil
}

// stringList reads a JSON array of strings (finalizers).
func stringList(v any, what string) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a list of strings, got %s", what, showValue(v))
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s: %s is not a string", what, showValue(x))
		}
		out = append(out, s)
	}
	return out, nil
}

// nested returns the value at path, or nil.
func nested(m map[string]any, path []string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

// normalize returns a copy of an object's JSON view without what is never
// stored (resourceVersion, selfLink) and with empty or null metadata
// members dropped, which the API types treat as absent.
func normalize(content map[string]any) map[string]any {
	out := codec.CopyContent(content)
	if md := codec.MetadataOf(out); md != nil {
		delete(md, "resourceVersion")
		delete(md, "selfLink")
		for _, f := range append([]string{"generateName", "managedFields"}, wireMetaFields...) {
			switch v := md[f].(type) {
			case nil:
				delete(md, f)
			case map[string]any:
				if len(v) == 0 {
					delete(md, f)
				}
			case []any:
				if len(v) == 0 {
					delete(md, f)
				}
			}
		}
	}
	return out
}

// jsonEqual compares JSON-compatible values by their JSON encoding (object
// keys sorted, so order does not matter; 1 and 1.0 are equal).
func jsonEqual(a, b any) bool {
	x, err1 := encjson.Marshal(a)
	y, err2 := encjson.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
