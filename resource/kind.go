package resource

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrKindMismatch means a key holds an object of another kind than its
// resource's: the apiserver decodes every value under a resource's keys
// into that resource's type, so it can neither read nor list it (a LIST of
// the resource fails), and cannot delete it.
var ErrKindMismatch = errors.New("an object of another kind than the key's resource")

// KindMismatchError is a value of kind Kind under a key of Resource. It
// matches ErrKindMismatch.
type KindMismatchError struct {
	Resource Resource
	// APIVersion and Kind are the stored object's.
	APIVersion, Kind string
}

func (e *KindMismatchError) Error() string {
	if e.Resource.Kind == "" {
		return fmt.Sprintf("kind %s (%s) under a key of %s, which hold objects of group %s: the apiserver cannot read it", e.Kind, e.APIVersion, e.Resource, e.Resource.Group)
	}
	return fmt.Sprintf("kind %s (%s) under a key of %s, which hold %s objects: the apiserver cannot read it", e.Kind, e.APIVersion, e.Resource.Plural, e.Resource.Kind)
}

// Unwrap returns ErrKindMismatch.
func (e *KindMismatchError) Unwrap() error { return ErrKindMismatch }

// CheckKind says whether an object of kind (stored as apiVersion) can be
// what a key of r holds: nil when it can, else a *KindMismatchError. For a
// built-in resource only the kind is compared: a resource served by two
// groups (events and events.k8s.io) stores one kind under one path. For a
// custom resource, whose kind is not known here, the group is: the
// apiserver converts what it reads under a custom resource's path from
// one of its definition's versions, and refuses any other group. A
// built-in resource of unknown kind accepts any.
func CheckKind(r Resource, apiVersion, kind string) error {
	if !r.BuiltIn {
		if gv, err := schema.ParseGroupVersion(apiVersion); err == nil && gv.Group != r.Group {
			return &KindMismatchError{Resource: r, APIVersion: apiVersion, Kind: kind}
		}
		return nil
	}
	if r.Kind == "" || kind == r.Kind {
		return nil
	}
	return &KindMismatchError{Resource: r, APIVersion: apiVersion, Kind: kind}
}

// StoredKind is the kind a key of r holds at r's preferred version, from
// which the apiserver's decoder fills what a JSON value lacks; zero for a
// resource whose kind is not known here (a custom resource).
func (r Resource) StoredKind() schema.GroupVersionKind {
	if !r.BuiltIn || r.Kind == "" {
		return schema.GroupVersionKind{}
	}
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}
