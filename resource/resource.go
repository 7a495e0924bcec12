package resource

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource describes one API resource and where kube-apiserver stores it.
type Resource struct {
	// Group, Version and Kind name the kind in the version the resource is
	// preferred in (see the package comment: the stored version may
	// differ). Empty Version and Kind mean unknown (a custom resource named
	// by <plural>.<group>).
	Group, Version, Kind string
	// Plural and Singular are the lowercase resource names; Singular is
	// empty when unknown.
	Plural, Singular string
	// ShortNames are kubectl's abbreviations, such as "pvc".
	ShortNames []string
	// Namespaced is true for namespaced resources.
	Namespaced bool
	// Path is the key path under the etcd prefix, e.g.
	// "persistentvolumeclaims", "services/specs", "minions",
	// "e2e.example.com/widgets".
	Path string
	// JSON is true when the apiserver stores this resource as JSON (custom
	// resources, CustomResourceDefinitions, APIServices), false for
	// protobuf.
	JSON bool
	// BuiltIn is true for resources kube-apiserver v1.37 serves itself
	// (including CustomResourceDefinitions and APIServices), false for
	// custom resources.
	BuiltIn bool
}

// GroupResource returns the group and plural, the form an
// EncryptionConfiguration matches resources by ("persistentvolumeclaims",
// "widgets.e2e.example.com").
func (r Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Plural}
}

// String returns the plural, qualified by the group unless it is the core
// group: "persistentvolumeclaims", "statefulsets.apps",
// "widgets.e2e.example.com".
func (r Resource) String() string {
	return r.GroupResource().String()
}

// Key returns the etcd key of the object namespace/name, e.g.
// "/registry/persistentvolumeclaims/demo/www-web-0". It fails when the
// resource is namespaced and namespace is empty, when it is cluster-scoped
// and namespace is not empty, and when the name or namespace is not a
// valid path segment (empty, ".", "..", or containing "/" or "%").
func (r Resource) Key(prefix, namespace, name string) (string, error) {
	if r.Path == "" {
		return "", errors.New("storage key: resource has no storage path")
	}
	if err := checkSegment("name", name); err != nil {
		return "", fmt.Errorf("storage key for %s: %w", r, err)
	}
	if !r.Namespaced {
		if namespace != "" {
			return "", fmt.Errorf("storage key for %s %q: resource is cluster-scoped but namespace %q was given", r, name, namespace)
		}
		return normPrefix(prefix) + r.Path + "/" + name, nil
	}
	if namespace == "" {
		return "", fmt.Errorf("storage key for %s %q: resource is namespaced but no namespace was given", r, name)
	}
	if err := checkSegment("namespace", namespace); err != nil {
		return "", fmt.Errorf("storage key for %s %q: %w", r, name, err)
	}
	return normPrefix(prefix) + r.Path + "/" + namespace + "/" + name, nil
}

// ListPrefix returns the etcd key prefix of the resource's objects, in
// namespace if the resource is namespaced and namespace is not empty, else
// of all of them. It always ends in "/", so "/registry/pods/default/" does
// not match "/registry/pods/default-2/...". As kubectl does, a namespace
// given for a cluster-scoped resource is ignored.
func (r Resource) ListPrefix(prefix, namespace string) string {
	p := normPrefix(prefix) + r.Path + "/"
	if r.Namespaced && namespace != "" {
		p += namespace + "/"
	}
	return p
}

// All returns every built-in resource kube-apiserver v1.37 stores, grouped
// by API group in a stable order. Resources served under two groups appear
// once, under the group that owns their storage.
func All() []Resource {
	out := make([]Resource, len(idx.all))
	for i, r := range idx.all {
		out[i] = r.clone()
	}
	return out
}

// ParseKey is the inverse of Key: it returns the resource, namespace and
// name of an etcd key written by kube-apiserver under prefix, e.g.
// "/registry/services/specs/demo/nginx" → services, "demo", "nginx". A key
// "<prefix>/<group>/<plural>/..." of a group that is not built in yields a
// synthesized custom Resource (JSON, BuiltIn false, Kind unknown) that is
// namespaced iff two segments follow the plural. ok is false for keys
// outside prefix, with the wrong number of segments, and for the
// apiserver's internal keys listed in the package comment.
func ParseKey(prefix, key string) (r Resource, namespace, name string, ok bool) {
	rest, found := cutPrefix(key, prefix)
	if !found {
		return Resource{}, "", "", false
	}
	segs := strings.Split(rest, "/")
	// Built-in paths have one or two segments; try two first so that
	// "services/specs" wins over a one-segment reading.
	for n := 2; n >= 1; n-- {
		if len(segs) <= n {
			continue
		}
		i, known := idx.byPath[strings.Join(segs[:n], "/")]
		if !known {
			continue
		}
		r := idx.all[i]
		namespace, name, ok := objectSegments(r.Namespaced, segs[n:])
		if !ok {
			return Resource{}, "", "", false
		}
		return r.clone(), namespace, name, true
	}
	// A custom resource: <group>/<plural>/[<namespace>/]<name>. Custom
	// resource groups always contain a dot; built-in groups never hold
	// custom resources.
	if len(segs) < 3 || !strings.Contains(segs[0], ".") || idx.groups[segs[0]] || segs[1] == "" {
		return Resource{}, "", "", false
	}
	r = custom(segs[1], segs[0])
	r.Namespaced = len(segs) == 4
	namespace, name, ok = objectSegments(r.Namespaced, segs[2:])
	if !ok {
		return Resource{}, "", "", false
	}
	return r, namespace, name, true
}

// objectSegments splits the segments after a storage path into namespace and
// name.
func objectSegments(namespaced bool, segs []string) (namespace, name string, ok bool) {
	switch {
	case namespaced && len(segs) == 2 && segs[0] != "" && segs[1] != "":
		return segs[0], segs[1], true
	case !namespaced && len(segs) == 1 && segs[0] != "":
		return "", segs[0], true
	}
	return "", "", false
}

// custom returns the Resource of a custom resource; its scope is left to the
// caller.
func custom(plural, group string) Resource {
	return Resource{
		Group:  group,
		Plural: plural,
		Path:   group + "/" + plural,
		JSON:   true,
	}
}

func (r Resource) clone() Resource {
	r.ShortNames = slices.Clone(r.ShortNames)
	return r
}

// cutPrefix is strings.CutPrefix(key, normPrefix(prefix)), without
// building normPrefix for a prefix that is already absolute and clean
// (as "/registry" is): ParseKey runs once per key of a scan.
func cutPrefix(key, prefix string) (string, bool) {
	if len(prefix) > 1 && prefix[0] == '/' && path.Clean(prefix) == prefix {
		rest, ok := strings.CutPrefix(key, prefix)
		if !ok {
			return key, false
		}
		return strings.CutPrefix(rest, "/")
	}
	return strings.CutPrefix(key, normPrefix(prefix))
}

// normPrefix joins the etcd prefix like the apiserver's etcd3 store does:
// path.Join("/", prefix) with a trailing "/".
func normPrefix(prefix string) string {
	p := path.Join("/", prefix)
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// checkSegment validates a name or namespace as one key segment, with the
// rules the apiserver's key functions apply.
func checkSegment(what, s string) error {
	if s == "" {
		return fmt.Errorf("empty %s", what)
	}
	if msgs := content.IsPathSegmentName(s); len(msgs) > 0 {
		return fmt.Errorf("invalid %s %q: %s", what, s, strings.Join(msgs, "; "))
	}
	return nil
}
