package inspect

import "github.com/etcdpvc/etcdpvc/resource"

// Scope selects the keys of a listing (ls, dump and diff share it): a key
// prefix and, without a resource, a namespace filter.
type Scope struct {
	// Prefix is the key prefix to list.
	Prefix string
	// Resource is the resource listed; nil for every resource.
	Resource *resource.Resource
	// Namespace keeps only the keys of this namespace ("": every one).
	Namespace string
}

// NewScope resolves RESOURCE, -n and -A as kubectl does, for the store
// prefix storePrefix: the namespace defaults to "default" for a namespaced
// resource and is ignored for a cluster-scoped one; all (-A) lists every
// namespace; without a resource (res ""), namespace filters every
// resource. An unknown resource is resolver's error.
func NewScope(resolver resource.Resolver, storePrefix, res, namespace string, all bool) (Scope, error) {
	k := Scope{Prefix: storePrefix + "/"}
	if !all {
		k.Namespace = namespace
	}
	if res == "" {
		return k, nil
	}
	r, err := resolver.Lookup(res)
	if err != nil {
		return k, err
	}
	k.Resource = &r
	ns := ""
	if r.Namespaced && !all {
		ns = namespace
		if ns == "" {
			ns = "default"
		}
	}
	k.Namespace = ns
	k.Prefix = r.ListPrefix(storePrefix, ns)
	return k, nil
}

// Match parses key under the store prefix prefix (resource.ParseKey) and
// reports whether the scope keeps it: ok is false for a key of another
// resource or namespace, and, when the scope filters, for a key that does
// not parse. A key under a resource's storage path that names no single
// object (resource.BadKey) does not parse, but has that resource and the
// namespace its path gives (name ""), and is kept by the scopes whose
// LIST reads it.
func (k Scope) Match(prefix, key string) (r resource.Resource, ns, name string, parsed, ok bool) {
	r, ns, name, parsed = resource.ParseKey(prefix, key)
	known := parsed
	if !parsed {
		r, ns, known = resource.BadKey(prefix, key)
	}
	if k.Resource != nil && (!known || r.Path != k.Resource.Path) {
		return r, ns, name, parsed, false
	}
	if k.Namespace != "" && (!known || ns != k.Namespace) {
		return r, ns, name, parsed, false
	}
	return r, ns, name, parsed, true
}
