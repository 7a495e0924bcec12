package resource

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ScopeFromCRD reports whether the custom resource a stored
// CustomResourceDefinition defines is namespaced, from the JSON that
// apiextensions-apiserver stores at
// "<prefix>/apiextensions.k8s.io/customresourcedefinitions/<plural>.<group>"
// (in its apiextensions.k8s.io/v1beta1 form, or v1). spec.scope is
// "Namespaced" or "Cluster"; an empty scope is Namespaced in v1beta1, whose
// defaulting sets it so, and an error in v1, which requires it.
func ScopeFromCRD(data []byte) (namespaced bool, err error) {
	if bytes.HasPrefix(data, []byte("k8s:enc:")) {
		return false, fmt.Errorf("customresourcedefinition scope: value is encrypted at rest; decrypt it first")
	}
	var crd struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Scope string `json:"scope"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &crd); err != nil {
		return false, fmt.Errorf("customresourcedefinition scope: %w", err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		return false, fmt.Errorf("customresourcedefinition scope: value is kind %q, not CustomResourceDefinition", crd.Kind)
	}
	switch crd.APIVersion {
	case "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1":
	default:
		return false, fmt.Errorf("customresourcedefinition %s scope: unsupported apiVersion %q", crd.Metadata.Name, crd.APIVersion)
	}
	switch crd.Spec.Scope {
	case "Namespaced":
		return true, nil
	case "Cluster":
		return false, nil
	case "":
		if crd.APIVersion == "apiextensions.k8s.io/v1beta1" {
			return true, nil
		}
		return false, fmt.Errorf("customresourcedefinition %s scope: spec.scope is missing", crd.Metadata.Name)
	}
	return false, fmt.Errorf("customresourcedefinition %s scope: spec.scope is %q, not Namespaced or Cluster", crd.Metadata.Name, crd.Spec.Scope)
}
