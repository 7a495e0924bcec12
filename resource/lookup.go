package resource

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrUnknownResource means a resource name is neither a built-in resource
// nor of the form <plural>.<group>. Errors from Lookup and ParseArgs wrap it.
var ErrUnknownResource = errors.New("unknown resource")

// ErrNotStored means the name is a resource kube-apiserver serves but never
// stores in etcd (componentstatuses, bindings, the review resources, the
// pods/eviction subresource): it computes the answer per request.
var ErrNotStored = errors.New("served by kube-apiserver but never stored in etcd")

// ScopeFunc reports whether the custom resource plural.group is namespaced,
// typically from its CustomResourceDefinition (see ScopeFromCRD).
type ScopeFunc func(plural, group string) (namespaced bool, err error)

// Resolver resolves resource names like kubectl, consulting Scope for the
// scope of resources that are not built in. The zero Resolver (and the
// package-level Lookup and ParseArgs) knows no custom resources: it treats
// one as cluster-scoped in Lookup and, in ParseArgs, as namespaced iff a
// namespace is given.
type Resolver struct {
	// Scope, when not nil, is asked for the scope of every custom resource.
	Scope ScopeFunc
}

// Lookup resolves a resource name with the zero Resolver; see
// Resolver.Lookup.
func Lookup(name string) (Resource, error) {
	return Resolver{}.Lookup(name)
}

// versionLike matches a Kubernetes API version such as v1, v2beta1 or
// v1alpha3.
var versionLike = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// Lookup resolves a resource name as kubectl does, case-insensitively: a
// plural ("persistentvolumeclaims"), singular, short name ("pvc") or kind
// ("PersistentVolumeClaim"), optionally qualified by its group
// ("statefulsets.apps", "sts.apps") or by version and group
// ("deployments.v1.apps"). A name qualified by a group that is not built in
// is a custom resource named <plural>.<group> ("widgets.e2e.example.com");
// its scope comes from res.Scope. Errors wrap ErrUnknownResource or
// ErrNotStored.
func (res Resolver) Lookup(name string) (Resource, error) {
	arg := strings.ToLower(strings.TrimSpace(name))
	if arg == "" {
		return Resource{}, fmt.Errorf("resource %q: %w: empty name", name, ErrUnknownResource)
	}
	if i, ok := idx.byName[arg]; ok {
		return idx.all[i].clone(), nil
	}
	if e, ok := idx.nsUnqual[arg]; ok {
		return Resource{}, notStoredError(name, e)
	}
	first, group, qualified := strings.Cut(arg, ".")
	if !qualified {
		return Resource{}, fmt.Errorf("resource %q: %w: not a built-in resource of kube-apiserver v1.37; name a custom resource as <plural>.<group>, e.g. %s.example.com", name, ErrUnknownResource, arg)
	}
	// <resource>.<version>.<group>: drop the version when the rest is a
	// group we know, or looks like a custom resource group.
	if v, g, ok := strings.Cut(group, "."); ok && versionLike.MatchString(v) && (idx.groups[g] || strings.Contains(g, ".")) {
		group = g
	}
	if i, ok := idx.byQual[qualName{first, group}]; ok {
		return idx.all[i].clone(), nil
	}
	if e, ok := idx.notStored[qualName{first, group}]; ok {
		return Resource{}, notStoredError(name, e)
	}
	if idx.groups[group] {
		return Resource{}, fmt.Errorf("resource %q: %w: built-in group %q has no resource %q", name, ErrUnknownResource, group, first)
	}
	// A custom resource. CustomResourceDefinition validation requires a
	// group with a dot and a plural that is a DNS label.
	if !strings.Contains(group, ".") || len(validation.IsDNS1123Subdomain(group)) > 0 {
		return Resource{}, fmt.Errorf("resource %q: %w: %q is not a custom resource group (a DNS subdomain with a dot); name a custom resource as <plural>.<group>, e.g. widgets.example.com", name, ErrUnknownResource, group)
	}
	if len(validation.IsDNS1123Label(first)) > 0 {
		return Resource{}, fmt.Errorf("resource %q: %w: %q is not a custom resource plural (a DNS label); name a custom resource as <plural>.<group>, e.g. widgets.example.com", name, ErrUnknownResource, first)
	}
	r := custom(first, group)
	if res.Scope != nil {
		namespaced, err := res.Scope(first, group)
		if err != nil {
			return Resource{}, fmt.Errorf("resource %q: scope of custom resource %s: %w", name, r, err)
		}
		r.Namespaced = namespaced
	}
	return r, nil
}

func notStoredError(name string, e entry) error {
	return fmt.Errorf("resource %q (%s): %w", name, entryString(e), ErrNotStored)
}

func entryString(e entry) string {
	if e.group == "" {
		return e.plural
	}
	return e.plural + "." + e.group
}

// Ref names one stored object.
type Ref struct {
	// Resource is the object's resource. It is the zero Resource when a
	// raw key is not a key ParseKey understands.
	Resource Resource
	// Namespace is empty for cluster-scoped objects.
	Namespace, Name string
	// Key is the object's etcd key.
	Key string
}

// ParseArgs implements the CLI's object naming. args is either
// [RESOURCE NAME] or [RESOURCE/NAME], RESOURCE being anything Lookup
// accepts. As with kubectl, namespace defaults to "default" for namespaced
// resources and is ignored for cluster-scoped ones; when res.Scope is nil,
// a custom resource is taken as namespaced iff namespace is given. rawKey, when not empty, names the object by its etcd key instead
// and bypasses naming: args must then be empty, the key is used verbatim,
// and its resource, namespace and name come from ParseKey when it
// understands the key (a namespace that contradicts the key's is an error).
func (res Resolver) ParseArgs(prefix string, args []string, namespace, rawKey string) (Ref, error) {
	if rawKey != "" {
		return parseRawKey(prefix, args, namespace, rawKey)
	}
	var resArg, name string
	switch len(args) {
	case 0:
		return Ref{}, errors.New("object arguments: missing resource and name: give RESOURCE NAME, RESOURCE/NAME or --key")
	case 1:
		var found bool
		resArg, name, found = strings.Cut(args[0], "/")
		if !found {
			return Ref{}, fmt.Errorf("object arguments: missing name of %s: give RESOURCE NAME or RESOURCE/NAME", args[0])
		}
		if resArg == "" {
			return Ref{}, fmt.Errorf("object arguments: missing resource in %q: give RESOURCE/NAME", args[0])
		}
		if name == "" {
			return Ref{}, fmt.Errorf("object arguments: missing name in %q: give RESOURCE/NAME", args[0])
		}
	case 2:
		resArg, name = args[0], args[1]
		if strings.Contains(resArg, "/") {
			return Ref{}, fmt.Errorf("object arguments: %q is in RESOURCE/NAME form, so %q is one argument too many", resArg, name)
		}
		if name == "" {
			return Ref{}, fmt.Errorf("object arguments: empty name of %s", resArg)
		}
	default:
		return Ref{}, fmt.Errorf("object arguments: too many arguments (%d): give one object as RESOURCE NAME or RESOURCE/NAME", len(args))
	}
	r, err := res.Lookup(resArg)
	if err != nil {
		return Ref{}, err
	}
	if !r.BuiltIn && res.Scope == nil {
		r.Namespaced = namespace != ""
	}
	switch {
	case !r.Namespaced:
		namespace = ""
	case namespace == "":
		namespace = "default"
	}
	key, err := r.Key(prefix, namespace, name)
	if err != nil {
		return Ref{}, err
	}
	return Ref{Resource: r, Namespace: namespace, Name: name, Key: key}, nil
}

func parseRawKey(prefix string, args []string, namespace, rawKey string) (Ref, error) {
	if len(args) > 0 {
		return Ref{}, fmt.Errorf("object arguments: --key %q names the object, so %q must not be given too", rawKey, strings.Join(args, " "))
	}
	ref := Ref{Key: rawKey}
	r, keyNS, name, ok := ParseKey(prefix, rawKey)
	if !ok {
		return ref, nil
	}
	if namespace != "" && r.Namespaced && namespace != keyNS {
		return Ref{}, fmt.Errorf("object arguments: namespace %q was given but key %q is in namespace %q", namespace, rawKey, keyNS)
	}
	ref.Resource, ref.Namespace, ref.Name = r, keyNS, name
	return ref, nil
}
