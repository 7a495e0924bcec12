package surgery

import (
	"fmt"
	"slices"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
)

// A Namespace being deleted is held by more than its metadata:
//
//   - status.phase is Terminating, and the apiserver's NamespaceLifecycle
//     admission refuses every new object in a Terminating namespace, so an
//     undelete that only cleared deletionTimestamp would leave it unusable;
//   - spec.finalizers (normally [kubernetes]) is what the namespace
//     controller removes, through the /finalize subresource, once the
//     namespace is empty; until then the namespace stays.
//
// These functions take a Namespace's plaintext after its metadata edit and
// make the rest of the change, through the typed path (applyContent) with
// its round-trip guard.

// namespaceDeletionConditions are the conditions the namespace controller
// sets while it deletes a namespace's content.
var namespaceDeletionConditions = []string{
	"NamespaceDeletionDiscoveryFailure",
	"NamespaceDeletionGroupVersionParsingFailure",
	"NamespaceDeletionContentFailure",
	"NamespaceContentRemaining",
	"NamespaceFinalizersRemaining",
}

func isNamespace(o *codec.Object) bool {
	return o.GVK.Group == "" && o.GVK.Version == "v1" && o.GVK.Kind == "Namespace"
}

// reopen decodes plain as the new state of cur's key.
func reopen(cur *kubevalue.Current, plain []byte) (*kubevalue.Current, error) {
	obj, err := codec.Decode(plain)
	if err != nil {
		return nil, err
	}
	next := *cur
	next.Plain, next.Obj = plain, obj
	return &next, nil
}

// namespacePhase returns a Namespace's status.phase.
func namespacePhase(o *codec.Object) string {
	status, _ := o.Content["status"].(map[string]any)
	phase, _ := status["phase"].(string)
	return phase
}

// namespaceSpecFinalizerList returns a Namespace's spec.finalizers.
func namespaceSpecFinalizerList(o *codec.Object) []string {
	spec, _ := o.Content["spec"].(map[string]any)
	fins, _ := spec["finalizers"].([]any)
	var out []string
	for _, f := range fins {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// namespaceActive returns plain (a Namespace taken out of deletion) with
// status.phase Active and the deletion conditions gone.
func namespaceActive(cur *kubevalue.Current, plain []byte) ([]byte, error) {
	next, err := reopen(cur, plain)
	if err != nil {
		return nil, err
	}
	want := codec.CopyContent(next.Obj.Content)
	status, _ := want["status"].(map[string]any)
	if status == nil || status["phase"] != "Terminating" {
		return plain, nil
	}
	status["phase"] = "Active"
	if conds, ok := status["conditions"].([]any); ok {
		var keep []any
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && slices.Contains(namespaceDeletionConditions, fmt.Sprint(m["type"])) {
				continue
			}
			keep = append(keep, c)
		}
		if len(keep) == 0 {
			delete(status, "conditions")
		} else {
			status["conditions"] = keep
		}
	}
	return applyContent(next, want, "set the namespace's status.phase to Active")
}

// namespaceSpecFinalizers returns plain (a Namespace after its metadata
// edit) with the same removal applied to spec.finalizers.
func namespaceSpecFinalizers(cur *kubevalue.Current, plain []byte, removeAll bool, remove []string) ([]byte, error) {
	next, err := reopen(cur, plain)
	if err != nil {
		return nil, err
	}
	want := codec.CopyContent(next.Obj.Content)
	spec, _ := want["spec"].(map[string]any)
	fins, _ := spec["finalizers"].([]any)
	if len(fins) == 0 {
		return plain, nil
	}
	var keep []any
	for _, f := range fins {
		if removeAll || slices.Contains(remove, fmt.Sprint(f)) {
			continue
		}
		keep = append(keep, f)
	}
	if len(keep) == len(fins) {
		return plain, nil
	}
	if len(keep) == 0 {
		delete(spec, "finalizers")
	} else {
		spec["finalizers"] = keep
	}
	return applyContent(next, want, "remove the namespace's spec.finalizers")
}
