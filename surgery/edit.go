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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/stored"
)

// Edit is a change to one object: a pure function from the current object
// to its new plaintext value. An edit that changes nothing returns
// cur.Plain (or bytes equal to it).
type Edit interface {
	// Transform returns the new plaintext stored value: a pure function of
	// the current object; nothing is written.
	Transform(cur *stored.Current) ([]byte, error)
	// Describe says what the edit does, for plans, backups and the audit
	// log.
	Describe() string
}

// gcFinalizers are the garbage collector's finalizers, which only mean
// something on an object being deleted.
var gcFinalizers = []string{metav1.FinalizerDeleteDependents, metav1.FinalizerOrphanDependents}

// Undelete takes an object out of Terminating: it clears deletionTimestamp
// and deletionGracePeriodSeconds and, unless KeepGCFinalizers, removes the
// garbage collector's foregroundDeletion and orphan finalizers. Every other
// finalizer (kubernetes.io/pvc-protection, …) stays. It edits metadata at
// the wire level, so it works on every kind and keeps every other byte. On
// an object that is not being deleted it changes nothing; with
// SayNotTerminating the plan says so (Plan.NoOpReason).
type Undelete struct {
	KeepGCFinalizers bool
	// SayNotTerminating makes the plan of an object that is not being
	// deleted say "… is not Terminating" (NoOpReason), as the undelete
	// command does: naming such an object may be a typo or the wrong
	// object. Without it (recover), such an object is left as it is,
	// silently.
	SayNotTerminating bool
}

// NoOpReason implements NoOpReasoner: with SayNotTerminating, that the
// object is not Terminating.
func (u Undelete) NoOpReason(cur *stored.Current) string {
	if !u.SayNotTerminating || terminating(cur.Obj.Meta) {
		return ""
	}
	return objectName(cur.Obj) + " is not Terminating"
}

// ObjectDescriber is an Edit whose description depends on the object it
// edits (MakePlan uses it for the plan's): what it changes there, not
// all it could change.
type ObjectDescriber interface {
	DescribeObject(cur *stored.Current) string
}

// NoOpReasoner is an Edit that can say why it changes nothing in an
// object (MakePlan puts it in Plan.NoOpReason); "" when it has nothing to
// say.
type NoOpReasoner interface {
	NoOpReason(cur *stored.Current) string
}

// Noter is an Edit that has something to say about an object it changes
// (MakePlan adds it to Plan.Warnings): what it was asked to do that was
// already so.
type Noter interface {
	Notes(cur *stored.Current) []string
}

// Transform implements Edit.
func (u Undelete) Transform(cur *stored.Current) ([]byte, error) {
	if !terminating(cur.Obj.Meta) {
		if isNamespace(cur.Obj) && namespacePhase(cur.Obj) == "Terminating" {
			// A Namespace whose deletion fields are gone but whose
			// phase still says Terminating (an earlier edit that
			// stopped half way): make it Active.
			out, err := namespaceActive(cur, cur.Plain)
			if err != nil {
				return nil, fmt.Errorf("undelete Namespace %s: %w", cur.Obj.Name(), err)
			}
			return out, nil
		}
		return cur.Plain, nil
	}
	e := codec.MetaEdit{ClearDeletion: true}
	if !u.KeepGCFinalizers {
		e.RemoveFinalizers = gcFinalizers
	}
	out, err := codec.EditMeta(cur.Plain, e)
	if err != nil {
		return nil, fmt.Errorf("undelete %s %s: %w", cur.Obj.GVK.Kind, cur.Obj.Name(), err)
	}
	if isNamespace(cur.Obj) {
		// A Namespace stays Terminating in its status, and the apiserver
		// refuses new content in it, until its phase is Active again.
		if out, err = namespaceActive(cur, out); err != nil {
			return nil, fmt.Errorf("undelete Namespace %s: %w", cur.Obj.Name(), err)
		}
	}
	return out, nil
}

// Describe implements Edit.
func (u Undelete) Describe() string {
	if u.KeepGCFinalizers {
		return "undelete: clear deletionTimestamp and deletionGracePeriodSeconds"
	}
	return "undelete: clear deletionTimestamp and deletionGracePeriodSeconds, remove finalizers foregroundDeletion and orphan"
}

// DescribeObject implements ObjectDescriber: what undelete changes in
// cur, naming only the deletion fields and garbage collector's finalizers
// it holds (and a Namespace's phase).
func (u Undelete) DescribeObject(cur *stored.Current) string {
	m := cur.Obj.Meta
	var fields, fins, parts []string
	if m.DeletionTimestamp != nil {
		fields = append(fields, "deletionTimestamp")
	}
	if m.DeletionGracePeriodSeconds != nil {
		fields = append(fields, "deletionGracePeriodSeconds")
	}
	if len(fields) > 0 {
		parts = append(parts, "clear "+strings.Join(fields, " and "))
	}
	if !u.KeepGCFinalizers && len(fields) > 0 {
		for _, f := range gcFinalizers {
			if slices.Contains(m.Finalizers, f) {
				fins = append(fins, f)
			}
		}
	}
	switch len(fins) {
	case 0:
	case 1:
		parts = append(parts, "remove finalizer "+fins[0])
	default:
		parts = append(parts, "remove finalizers "+strings.Join(fins, " and "))
	}
	if isNamespace(cur.Obj) && namespacePhase(cur.Obj) == "Terminating" {
		parts = append(parts, "set the Namespace's phase Active")
	}
	if len(parts) == 0 {
		return u.Describe()
	}
	return "undelete: " + strings.Join(parts, ", ")
}

// terminating reports whether m carries a deletion.
func terminating(m *metav1.ObjectMeta) bool {
	return m.DeletionTimestamp != nil || m.DeletionGracePeriodSeconds != nil
}

// Meta edits finalizers, labels, annotations and ownerReferences at the
// wire level (see codec.EditMeta): `finalizers --remove/--remove-all`,
// `label` and `annotate`. It works on every kind and keeps every byte
// outside the edited metadata.
//
// As kubectl does, it refuses (ErrNotApplicable) to change the value of an
// existing label or annotation unless Overwrite is set; setting the value a
// key already has changes nothing. Removing a finalizer, label or
// annotation the object does not have changes nothing either, and is said
// (kubectl's `label "x" not found.`): as the plan's NoOpReason when nothing
// else changes (nothing to do, as for any retried edit), else as one of its
// warnings.
type Meta struct {
	codec.MetaEdit
	// Overwrite allows SetLabels and SetAnnotations to change existing
	// values (kubectl's --overwrite).
	Overwrite bool
}

// Transform implements Edit.
func (m Meta) Transform(cur *stored.Current) ([]byte, error) {
	if problems := m.check(cur.Obj); len(problems) > 0 {
		return nil, notApplicable(cur.Obj, problems)
	}
	out, err := codec.EditMeta(cur.Plain, m.MetaEdit)
	if err != nil {
		return nil, fmt.Errorf("edit metadata of %s %s: %w", cur.Obj.GVK.Kind, cur.Obj.Name(), err)
	}
	if isNamespace(cur.Obj) && (m.RemoveAllFinalizers || len(m.RemoveFinalizers) > 0) {
		// A Namespace's own finalizers (spec.finalizers, "kubernetes")
		// are what holds a Terminating namespace: removing finalizers
		// removes them too.
		if out, err = namespaceSpecFinalizers(cur, out, m.RemoveAllFinalizers, m.RemoveFinalizers); err != nil {
			return nil, fmt.Errorf("edit finalizers of Namespace %s: %w", cur.Obj.Name(), err)
		}
	}
	return out, nil
}

// NoOpReason implements NoOpReasoner: the labels and annotations m
// removes that the object does not have.
func (m Meta) NoOpReason(cur *stored.Current) string {
	return strings.Join(m.Notes(cur), "; ")
}

// Notes implements Noter: the labels and annotations m removes that the
// object does not have, with kubectl's words ("label \"x\" not found") and the object named.
func (m Meta) Notes(cur *stored.Current) []string {
	missing := m.missing(cur.Obj)
	for i := range missing {
		missing[i] += " on " + objectName(cur.Obj)
	}
	return missing
}

// missing lists the labels and annotations m removes that obj does not
// have.
func (m Meta) missing(obj *codec.Object) []string {
	var notes []string
	for _, f := range []struct {
		what   string
		have   map[string]string
		remove []string
	}{
		{"label", obj.Meta.Labels, m.RemoveLabels},
		{"annotation", obj.Meta.Annotations, m.RemoveAnnotations},
	} {
		for _, k := range f.remove {
			if _, ok := f.have[k]; !ok {
				notes = append(notes, fmt.Sprintf("%s %q not found", f.what, k))
			}
		}
	}
	return notes
}

// check lists what m names that obj does not allow, with kubectl's
// messages.
func (m Meta) check(obj *codec.Object) []string {
	var problems []string
	if !m.RemoveAllFinalizers && len(m.RemoveFinalizers) > 0 {
		have := slices.Clone(obj.Meta.Finalizers)
		if isNamespace(obj) {
			for _, f := range namespaceSpecFinalizerList(obj) {
				if !slices.Contains(have, f) {
					have = append(have, f)
				}
			}
		}
		var missing []string
		for _, f := range m.RemoveFinalizers {
			if !slices.Contains(have, f) && !slices.Contains(missing, f) {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			present := "it has none"
			if len(have) > 0 {
				present = "it has " + strings.Join(have, ", ")
			}
			what := "finalizer"
			if len(missing) > 1 {
				what = "finalizers"
			}
			problems = append(problems, fmt.Sprintf("%s %s not found (%s)", what, quoteAll(missing), present))
		}
	}
	for _, f := range []struct {
		what string
		have map[string]string
		set  map[string]string
	}{
		{"label", obj.Meta.Labels, m.SetLabels},
		{"annotation", obj.Meta.Annotations, m.SetAnnotations},
	} {
		if !m.Overwrite {
			for _, k := range sortedKeys(f.set) {
				if v, ok := f.have[k]; ok && v != f.set[k] {
					if f.what == "annotation" && codec.IsSecret(obj.Content) {
						// A Secret's annotations can hold its data
						// (last-applied-configuration).
						v = "<redacted>"
					}
					problems = append(problems, fmt.Sprintf("'%s' already has a value (%s), and --overwrite is false", k, v))
				}
			}
		}
	}
	return problems
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// Describe implements Edit.
func (m Meta) Describe() string {
	e := m.MetaEdit
	var parts []string
	if e.ClearDeletion {
		parts = append(parts, "clear deletionTimestamp and deletionGracePeriodSeconds")
	}
	if e.RemoveAllFinalizers {
		parts = append(parts, "remove all finalizers (of a Namespace, spec.finalizers too)")
	} else if len(e.RemoveFinalizers) > 0 {
		parts = append(parts, "remove finalizers "+strings.Join(e.RemoveFinalizers, ", "))
	}
	if len(e.AddFinalizers) > 0 {
		parts = append(parts, "add finalizers "+strings.Join(e.AddFinalizers, ", "))
	}
	if len(e.SetLabels) > 0 {
		var kvs []string
		for _, k := range sortedKeys(e.SetLabels) {
			kvs = append(kvs, k+"="+e.SetLabels[k])
		}
		parts = append(parts, "set labels "+strings.Join(kvs, ", "))
	}
	if len(e.RemoveLabels) > 0 {
		parts = append(parts, "remove labels "+strings.Join(e.RemoveLabels, ", "))
	}
	if len(e.SetAnnotations) > 0 {
		parts = append(parts, "set annotations "+strings.Join(sortedKeys(e.SetAnnotations), ", "))
	}
	if len(e.RemoveAnnotations) > 0 {
		parts = append(parts, "remove annotations "+strings.Join(e.RemoveAnnotations, ", "))
	}
	if e.RemoveAllOwners {
		parts = append(parts, "remove all ownerReferences")
	} else if len(e.RemoveOwnerUIDs) > 0 {
		parts = append(parts, "remove ownerReferences to uids "+strings.Join(e.RemoveOwnerUIDs, ", "))
	}
	if len(parts) == 0 {
		return "metadata: no change"
	}
	return "metadata: " + strings.Join(parts, "; ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ParseLabelArgs parses `kubectl label` arguments: "key=value" sets a
// label, "key-" removes one. Keys must be qualified names and values valid
// label values, as the apiserver requires; a key may not be both set and
// removed.
func ParseLabelArgs(args []string) (set map[string]string, remove []string, err error) {
	set = map[string]string{}
	for _, arg := range args {
		switch {
		case strings.Contains(arg, "="):
			parts := strings.Split(arg, "=")
			if len(parts) != 2 {
				return nil, nil, fmt.Errorf("invalid label spec %q: a label value cannot contain '='", arg)
			}
			k, v := parts[0], parts[1]
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				return nil, nil, fmt.Errorf("invalid label key %q: %s", k, strings.Join(msgs, "; "))
			}
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				return nil, nil, fmt.Errorf("invalid label value %q: %s", arg, strings.Join(msgs, "; "))
			}
			set[k] = v
		case strings.HasSuffix(arg, "-") && len(arg) > 1:
			remove = append(remove, arg[:len(arg)-1])
		default:
			return nil, nil, fmt.Errorf("unknown label spec %q: want key=value to set or key- to remove", arg)
		}
	}
	if err := checkSetRemove("label", set, remove); err != nil {
		return nil, nil, err
	}
	return set, remove, nil
}

// ParseAnnotationArgs parses `kubectl annotate` arguments: "key=value" sets
// an annotation (the value may hold anything, '=' included), "key-" removes
// one. Keys must be qualified names (case-insensitively, as the apiserver
// checks them); a key may not be both set and removed.
func ParseAnnotationArgs(args []string) (set map[string]string, remove []string, err error) {
	set = map[string]string{}
	for _, arg := range args {
		switch {
		case strings.Contains(arg, "="):
			k, v, _ := strings.Cut(arg, "=")
			if msgs := validation.IsQualifiedName(strings.ToLower(k)); len(msgs) > 0 {
				return nil, nil, fmt.Errorf("invalid annotation key %q: %s", k, strings.Join(msgs, "; "))
			}
			set[k] = v
		case strings.HasSuffix(arg, "-") && len(arg) > 1:
			remove = append(remove, arg[:len(arg)-1])
		default:
			return nil, nil, fmt.Errorf("invalid annotation format %q: want key=value to set or key- to remove", arg)
		}
	}
	if err := checkSetRemove("annotation", set, remove); err != nil {
		return nil, nil, err
	}
	return set, remove, nil
}

func checkSetRemove(what string, set map[string]string, remove []string) error {
	if len(set) == 0 && len(remove) == 0 {
		return fmt.Errorf("at least one %s update is required", what)
	}
	var both []string
	for _, k := range remove {
		if _, ok := set[k]; ok {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		return fmt.Errorf("cannot both set and remove the %s %s in the same command", what, strings.Join(both, ", "))
	}
	return nil
}

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
func (p Patch) Transform(cur *stored.Current) ([]byte, error) {
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
func (r Replace) Transform(cur *stored.Current) ([]byte, error) {
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
func applyContent(cur *stored.Current, want map[string]any, what string) ([]byte, error) {
	return applyContentText(cur, want, what, nil)
}

// applyContentText is applyContent with text, the wanted object as JSON
// text (a patch applied to the stored text), from which a JSON-stored
// object's numbers take their literal text (see codec.MergeJSONText); nil
// when there is none.
func applyContentText(cur *stored.Current, want map[string]any, what string, text []byte) ([]byte, error) {
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
func wireEdit(cur *stored.Current, old, want map[string]any) (out []byte, ok bool, err error) {
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
