package surgery

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
)

// Edit is a change to one object: a pure function from the current object
// to its new plaintext value. An edit that changes nothing returns
// cur.Plain (or bytes equal to it).
type Edit interface {
	// Transform returns the new plaintext stored value: a pure function of
	// the current object; nothing is written.
	Transform(cur *kubevalue.Current) ([]byte, error)
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
func (u Undelete) NoOpReason(cur *kubevalue.Current) string {
	if !u.SayNotTerminating || terminating(cur.Obj.Meta) {
		return ""
	}
	return objectName(cur.Obj) + " is not Terminating"
}

// ObjectDescriber is an Edit whose description depends on the object it
// edits (MakePlan uses it for the plan's): what it changes there, not
// all it could change.
type ObjectDescriber interface {
	DescribeObject(cur *kubevalue.Current) string
}

// NoOpReasoner is an Edit that can say why it changes nothing in an
// object (MakePlan puts it in Plan.NoOpReason); "" when it has nothing to
// say.
type NoOpReasoner interface {
	NoOpReason(cur *kubevalue.Current) string
}

// Noter is an Edit that has something to say about an object it changes
// (MakePlan adds it to Plan.Warnings): what it was asked to do that was
// already so.
type Noter interface {
	Notes(cur *kubevalue.Current) []string
}

// Transform implements Edit.
func (u Undelete) Transform(cur *kubevalue.Current) ([]byte, error) {
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
func (u Undelete) DescribeObject(cur *kubevalue.Current) string {
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
func (m Meta) Transform(cur *kubevalue.Current) ([]byte, error) {
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
func (m Meta) NoOpReason(cur *kubevalue.Current) string {
	return strings.Join(m.Notes(cur), "; ")
}

// Notes implements Noter: the labels and annotations m removes that the
// object does not have, with kubectl's words ("label \"x\" not found") and the object named.
func (m Meta) Notes(cur *kubevalue.Current) []string {
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
	return parseSetRemove(args, "label", "unknown label spec %q: want key=value to set or key- to remove", func(arg string) (string, string, error) {
		parts := strings.Split(arg, "=")
		if len(parts) != 2 {
			return "", "", fmt.Errorf("invalid label spec %q: a label value cannot contain '='", arg)
		}
		k, v := parts[0], parts[1]
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return "", "", fmt.Errorf("invalid label key %q: %s", k, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			return "", "", fmt.Errorf("invalid label value %q: %s", arg, strings.Join(msgs, "; "))
		}
		return k, v, nil
	})
}

// ParseAnnotationArgs parses `kubectl annotate` arguments: "key=value" sets
// an annotation (the value may hold anything, '=' included), "key-" removes
// one. Keys must be qualified names (case-insensitively, as the apiserver
// checks them); a key may not be both set and removed.
func ParseAnnotationArgs(args []string) (set map[string]string, remove []string, err error) {
	return parseSetRemove(args, "annotation", "invalid annotation format %q: want key=value to set or key- to remove", func(arg string) (string, string, error) {
		k, v, _ := strings.Cut(arg, "=")
		if msgs := validation.IsQualifiedName(strings.ToLower(k)); len(msgs) > 0 {
			return "", "", fmt.Errorf("invalid annotation key %q: %s", k, strings.Join(msgs, "; "))
		}
		return k, v, nil
	})
}

// parseSetRemove parses the arguments of a label or annotation command
// (what names which): each "key=value" by parse, each "key-" a key to
// remove; badSpec formats the error of any other. At least one is
// required, and a key may not be both set and removed.
func parseSetRemove(args []string, what, badSpec string, parse func(arg string) (k, v string, err error)) (map[string]string, []string, error) {
	set := map[string]string{}
	var remove, both []string
	for _, arg := range args {
		switch {
		case strings.Contains(arg, "="):
			k, v, err := parse(arg)
			if err != nil {
				return nil, nil, err
			}
			set[k] = v
		case strings.HasSuffix(arg, "-") && len(arg) > 1:
			remove = append(remove, arg[:len(arg)-1])
		default:
			return nil, nil, fmt.Errorf(badSpec, arg)
		}
	}
	if len(set) == 0 && len(remove) == 0 {
		return nil, nil, fmt.Errorf("at least one %s update is required", what)
	}
	for _, k := range remove {
		if _, ok := set[k]; ok {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		return nil, nil, fmt.Errorf("cannot both set and remove the %s %s in the same command", what, strings.Join(both, ", "))
	}
	return set, remove, nil
}
