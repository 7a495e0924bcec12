package resource

import "testing"

func TestRemovedIn(t *testing.T) {
	for _, tc := range []struct{ apiVersion, kind, want string }{
		{"flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "v1.32"},
		{"flowcontrol.apiserver.k8s.io/v1", "FlowSchema", ""},
		{"extensions/v1beta1", "Ingress", "v1.22"},
		{"extensions/v1beta1", "Deployment", "v1.16"},
		{"storage.k8s.io/v1beta1", "CSIStorageCapacity", "v1.27"},
		{"storage.k8s.io/v1beta1", "StorageClass", "v1.22"},
		{"policy/v1beta1", "PodDisruptionBudget", "v1.25"},
		{"v1", "Pod", ""},
		// What kube-apiserver v1.37 still stores CRDs at (the corpus).
		{"apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", ""},
		{"e2e.example.com/v1beta1", "Widget", ""},
	} {
		if got := RemovedIn(tc.apiVersion, tc.kind); got != tc.want {
			t.Errorf("RemovedIn(%s, %s) = %q, want %q", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
}
