package surgery

import (
	"errors"
	"fmt"
	"strings"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
)

// ErrKeyMismatch means a value's kind, namespace or name are not those its
// etcd key names: writing it would store, say, a PersistentVolumeClaim
// under a Secret's key, where the apiserver serves it as that Secret. The
// error is a *KeyMismatchError.
var ErrKeyMismatch = errors.New("the value does not belong at its key")

// KeyMismatchError reports a value whose object is not the one its key
// names. It matches ErrKeyMismatch.
type KeyMismatchError struct {
	Key string
	// Want is the object the key names, Got the one the value holds, both
	// as kubectl names them ("persistentvolumeclaim data-0 in namespace
	// demo").
	Want, Got string
}

func (e *KeyMismatchError) Error() string {
	return fmt.Sprintf("%s holds %s, but the key names %s", e.Key, e.Got, e.Want)
}

// Is reports whether target is ErrKeyMismatch.
func (e *KeyMismatchError) Is(target error) bool { return target == ErrKeyMismatch }

// checkKey checks that obj is the object key names: the same kind (when
// the key's resource has a known kind), namespace and name. A key that
// names no resource under the prefix cannot be checked and passes.
func (c Planner) checkKey(key string, obj *codec.Object) error {
	r, ns, name, ok := resource.ParseKey(c.StorePrefix(), key)
	if !ok || obj == nil || obj.Meta == nil {
		return nil
	}
	kindOK := r.Kind == "" || r.Kind == obj.GVK.Kind
	if kindOK && obj.Meta.Namespace == ns && obj.Meta.Name == name {
		return nil
	}
	wantKind := strings.ToLower(r.Kind)
	if wantKind == "" {
		wantKind = r.Plural + "." + r.Group
	}
	return &KeyMismatchError{
		Key:  key,
		Want: kubectlName(wantKind, ns, name),
		Got:  kubectlName(strings.ToLower(obj.GVK.Kind), obj.Meta.Namespace, obj.Meta.Name),
	}
}

// kubectlName names an object as kubectl does in messages.
func kubectlName(kind, ns, name string) string {
	if kind == "" {
		kind = "object"
	}
	if ns == "" {
		return kind + " " + name
	}
	return fmt.Sprintf("%s %s in namespace %s", kind, name, ns)
}
