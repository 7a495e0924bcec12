package resource

import "strings"

// BadKey reports whether key lies under the storage path of a resource,
// built in or custom ("<group>/<plural>/", a group with a dot that is not
// built in), without naming one object of it (ParseKey refuses it):
// "<prefix>/configmaps/NS/", what `etcdctl put …/$NAME` writes with NAME
// unset, or a key with an extra segment. The apiserver's LIST of the
// resource reads it as any other key under the path (kube-apiserver
// v1.37: it fails when the value does not decode, and lists the object
// the value holds when it does), but no GET, update or delete through the
// API reaches it: that takes its etcd key. It
// returns that resource, and the namespace whose LIST reads the key too
// when the resource is namespaced and a non-empty segment follows its
// path ("" otherwise: only the LIST across namespaces reads it). For a
// custom resource, whose scope a key does not say, Namespaced is true
// when more than one segment follows the path.
func BadKey(prefix, key string) (r Resource, namespace string, ok bool) {
	if _, _, _, parsed := ParseKey(prefix, key); parsed {
		return Resource{}, "", false
	}
	rest, found := cutPrefix(key, prefix)
	if !found {
		return Resource{}, "", false
	}
	segs := strings.Split(rest, "/")
	var after []string
	found = false
	for n := 2; n >= 1 && !found; n-- {
		if len(segs) <= n {
			continue
		}
		if i, known := idx.byPath[strings.Join(segs[:n], "/")]; known {
			r, after, found = idx.all[i].clone(), segs[n:], true
		}
	}
	if !found {
		if len(segs) < 3 || !strings.Contains(segs[0], ".") || idx.groups[segs[0]] || segs[1] == "" {
			return Resource{}, "", false
		}
		r, after = custom(segs[1], segs[0]), segs[2:]
		r.Namespaced = len(after) > 1
	}
	if r.Namespaced && len(after) > 1 && after[0] != "" {
		namespace = after[0]
	}
	return r, namespace, true
}
