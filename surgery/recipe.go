package surgery

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcdpvc/etcdpvc/kubevalue"
)

// Recipes are guided compositions of edits for the scenarios operators
// meet most (a failed volume expansion, a claim re-created under a volume):
// ResizeRecover, SetClaimRef, SetVolumeName and PlanRebind. They check what
// the apiserver or the volume binder would check, then go through the same
// write path as every other edit: plan, diff, backup, compare-and-swap.

// ErrRefused means a recipe declined an edit because its preconditions do
// not hold (the object is not in the state the recipe repairs, or the edit
// would break another live object). Nothing was planned or written.
var ErrRefused = errors.New("refused")

// refusef returns an error wrapping ErrRefused.
func refusef(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrRefused)
}

// claimOf returns cur's object as a PersistentVolumeClaim.
func claimOf(cur *kubevalue.Current, what string) (*corev1.PersistentVolumeClaim, error) {
	pvc, ok := cur.Obj.Typed.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("%s: %s %s is not a v1 PersistentVolumeClaim", what, cur.Obj.GVK.Kind, cur.Obj.Name())
	}
	return pvc, nil
}

// volumeOf returns cur's object as a PersistentVolume.
func volumeOf(cur *kubevalue.Current, what string) (*corev1.PersistentVolume, error) {
	pv, ok := cur.Obj.Typed.(*corev1.PersistentVolume)
	if !ok {
		return nil, fmt.Errorf("%s: %s %s is not a v1 PersistentVolume", what, cur.Obj.GVK.Kind, cur.Obj.Name())
	}
	return pv, nil
}

// setPath sets content[path...] = v, creating objects on the way.
func setPath(content map[string]any, v any, path ...string) {
	m := content
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// deletePath removes content[path...], if present, and then every object on
// the way that the removal left empty. It reports whether it removed
// anything.
func deletePath(content map[string]any, path ...string) bool {
	if len(path) == 1 {
		_, had := content[path[0]]
		delete(content, path[0])
		return had
	}
	next, ok := content[path[0]].(map[string]any)
	if !ok {
		return false
	}
	if !deletePath(next, path[1:]...) {
		return false
	}
	if len(next) == 0 {
		delete(content, path[0])
	}
	return true
}
