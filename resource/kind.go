package resource

import (
	"errors"
	"fmt"
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
	return fmt.Sprintf("kind %s (%s) under a key of %s, which hold %s objects: the apiserver cannot read it", e.Kind, e.APIVersion, e.Resource.Plural, e.Resource.Kind)
}

// Unwrap returns ErrKindMismatch.
func (e *KindMismatchError) Unwrap() error { return ErrKindMismatch }

// CheckKind says whether an object of kind (stored as apiVersion) can be
// what a key of r holds: nil when it can, or when r's kind is not known
// (a custom resource), else a *KindMismatchError. Only the kind is
// compared: a resource served by two groups (events and events.k8s.io)
// stores one kind under one path.
func CheckKind(r Resource, apiVersion, kind string) error {
	if !r.BuiltIn || r.Kind == "" || kind == r.Kind {
		return nil
	}
	return &KindMismatchError{Resource: r, APIVersion: apiVersion, Kind: kind}
}
