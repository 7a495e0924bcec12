package resource

// removal is an API version (of one kind, or of every kind when kind is
// "") that Kubernetes stopped serving in a release.
type removal struct {
	groupVersion, kind, release string
}

// removals are the API versions of stored kinds that Kubernetes releases
// stopped serving, from Kubernetes' deprecated API migration guide
// (kubernetes.io/docs/reference/using-api/deprecation-guide/). The
// apiserver decodes a stored object at the version it was written at, and
// then converts it; once a release's code no longer holds that version,
// an object still stored at it cannot be read, and breaks every LIST of
// its resource. Which release drops the code is not documented (it may
// be the one that stops serving the version, or later), so an object at
// one of these versions is one to rewrite before that upgrade. Alpha
// versions, kinds that are never stored (reviews), and
// apiextensions.k8s.io/v1beta1 are left out: that is the version the
// apiserver itself still stores CustomResourceDefinitions at.
var removals = []removal{
	{"extensions/v1beta1", "Ingress", "v1.22"},
	{"extensions/v1beta1", "", "v1.16"}, // DaemonSet, Deployment, ReplicaSet, NetworkPolicy, PodSecurityPolicy
	{"apps/v1beta1", "", "v1.16"},
	{"apps/v1beta2", "", "v1.16"},
	{"admissionregistration.k8s.io/v1beta1", "", "v1.22"},
	{"apiregistration.k8s.io/v1beta1", "", "v1.22"},
	{"certificates.k8s.io/v1beta1", "", "v1.22"},
	{"coordination.k8s.io/v1beta1", "", "v1.22"},
	{"networking.k8s.io/v1beta1", "", "v1.22"},
	{"rbac.authorization.k8s.io/v1beta1", "", "v1.22"},
	{"scheduling.k8s.io/v1beta1", "", "v1.22"},
	{"storage.k8s.io/v1beta1", "CSIStorageCapacity", "v1.27"},
	{"storage.k8s.io/v1beta1", "", "v1.22"}, // CSIDriver, CSINode, StorageClass, VolumeAttachment
	{"batch/v1beta1", "", "v1.25"},
	{"discovery.k8s.io/v1beta1", "", "v1.25"},
	{"events.k8s.io/v1beta1", "", "v1.25"},
	{"autoscaling/v2beta1", "", "v1.25"},
	{"policy/v1beta1", "", "v1.25"}, // PodDisruptionBudget, PodSecurityPolicy
	{"node.k8s.io/v1beta1", "", "v1.25"},
	{"autoscaling/v2beta2", "", "v1.26"},
	{"flowcontrol.apiserver.k8s.io/v1beta1", "", "v1.26"},
	{"flowcontrol.apiserver.k8s.io/v1beta2", "", "v1.29"},
	{"flowcontrol.apiserver.k8s.io/v1beta3", "", "v1.32"},
}

// RemovedIn is the Kubernetes release that stopped serving apiVersion for
// kind ("v1.32"), or "" when it is not known to be removed. An object
// stored at such a version is to be rewritten (read and written back
// through the apiserver of an earlier release, which stores it at its
// storage version) before the upgrade to that release.
func RemovedIn(apiVersion, kind string) string {
	for _, r := range removals {
		if r.groupVersion == apiVersion && (r.kind == "" || r.kind == kind) {
			return r.release
		}
	}
	return ""
}
