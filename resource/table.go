package resource

import (
	"slices"
	"strings"
)

// entry is one row of the built-in table. The singular is the lowercase kind
// for every built-in resource, and the storage path is the plural unless
// path says otherwise.
type entry struct {
	group, version, kind string
	plural               string
	short                []string
	namespaced           bool
	path                 string // storage path when it is not the plural
	json                 bool
}

const (
	inNamespace = true
	clusterWide = false
)

// builtins lists every resource kube-apiserver v1.37 (with its
// apiextensions-apiserver and kube-aggregator) stores in etcd, alpha and beta
// ones included, grouped by API group. The order is All's order and breaks
// ties between unqualified names (first wins).
//
// Sources: plurals, scopes and kinds from the k8s.io/api v0.37.2 types and
// client-go typed clients; short names from the apiservers' discovery
// documents (kubernetes/api/discovery); storage paths from
// SpecialDefaultResourcePrefixes and test/integration/etcd/data.go in
// kubernetes/kubernetes, checked against fixtures/corpus/etcd-keys.txt.
var builtins = []entry{
	// core ("" group)
	{group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", short: []string{"cm"}, namespaced: inNamespace},
	{group: "", version: "v1", kind: "Endpoints", plural: "endpoints", short: []string{"ep"}, namespaced: inNamespace, path: "services/endpoints"},
	{group: "", version: "v1", kind: "Event", plural: "events", short: []string{"ev"}, namespaced: inNamespace},
	{group: "", version: "v1", kind: "LimitRange", plural: "limitranges", short: []string{"limits"}, namespaced: inNamespace},
	{group: "", version: "v1", kind: "Namespace", plural: "namespaces", short: []string{"ns"}, namespaced: clusterWide},
	{group: "", version: "v1", kind: "Node", plural: "nodes", short: []string{"no"}, namespaced: clusterWide, path: "minions"},
	{group: "", version: "v1", kind: "PersistentVolumeClaim", plural: "persistentvolumeclaims", short: []string{"pvc"}, namespaced: inNamespace},
	{group: "", version: "v1", kind: "PersistentVolume", plural: "persistentvolumes", short: []string{"pv"}, namespaced: clusterWide},
	{group: "", version: "v1", kind: "Pod", plural: "pods", short: []string{"po"}, namespaced: inNamespace},
	{group: "", version: "v1", kind: "PodTemplate", plural: "podtemplates", namespaced: inNamespace},
	{group: "", version: "v1", kind: "ReplicationController", plural: "replicationcontrollers", short: []string{"rc"}, namespaced: inNamespace, path: "controllers"},
	{group: "", version: "v1", kind: "ResourceQuota", plural: "resourcequotas", short: []string{"quota"}, namespaced: inNamespace},
	{group: "", version: "v1", kind: "Secret", plural: "secrets", namespaced: inNamespace},
	{group: "", version: "v1", kind: "ServiceAccount", plural: "serviceaccounts", short: []string{"sa"}, namespaced: inNamespace},
	{group: "", version: "v1", kind: "Service", plural: "services", short: []string{"svc"}, namespaced: inNamespace, path: "services/specs"},

	// admissionregistration.k8s.io
	{group: "admissionregistration.k8s.io", version: "v1", kind: "MutatingAdmissionPolicy", plural: "mutatingadmissionpolicies", namespaced: clusterWide},
	{group: "admissionregistration.k8s.io", version: "v1", kind: "MutatingAdmissionPolicyBinding", plural: "mutatingadmissionpolicybindings", namespaced: clusterWide},
	{group: "admissionregistration.k8s.io", version: "v1", kind: "MutatingWebhookConfiguration", plural: "mutatingwebhookconfigurations", namespaced: clusterWide},
	{group: "admissionregistration.k8s.io", version: "v1", kind: "ValidatingAdmissionPolicy", plural: "validatingadmissionpolicies", namespaced: clusterWide},
	{group: "admissionregistration.k8s.io", version: "v1", kind: "ValidatingAdmissionPolicyBinding", plural: "validatingadmissionpolicybindings", namespaced: clusterWide},
	{group: "admissionregistration.k8s.io", version: "v1", kind: "ValidatingWebhookConfiguration", plural: "validatingwebhookconfigurations", namespaced: clusterWide},

	// apiextensions.k8s.io (apiextensions-apiserver: JSON, "<group>/<plural>")
	{group: "apiextensions.k8s.io", version: "v1beta1", kind: "CustomResourceDefinition", plural: "customresourcedefinitions", short: []string{"crd", "crds"}, namespaced: clusterWide, path: "apiextensions.k8s.io/customresourcedefinitions", json: true},

	// apiregistration.k8s.io (kube-aggregator: JSON, "<group>/<plural>")
	{group: "apiregistration.k8s.io", version: "v1", kind: "APIService", plural: "apiservices", namespaced: clusterWide, path: "apiregistration.k8s.io/apiservices", json: true},

	// apps
	{group: "apps", version: "v1", kind: "ControllerRevision", plural: "controllerrevisions", namespaced: inNamespace},
	{group: "apps", version: "v1", kind: "DaemonSet", plural: "daemonsets", short: []string{"ds"}, namespaced: inNamespace},
	{group: "apps", version: "v1", kind: "Deployment", plural: "deployments", short: []string{"deploy"}, namespaced: inNamespace},
	{group: "apps", version: "v1", kind: "ReplicaSet", plural: "replicasets", short: []string{"rs"}, namespaced: inNamespace},
	{group: "apps", version: "v1", kind: "StatefulSet", plural: "statefulsets", short: []string{"sts"}, namespaced: inNamespace},

	// autoscaling
	{group: "autoscaling", version: "v2", kind: "HorizontalPodAutoscaler", plural: "horizontalpodautoscalers", short: []string{"hpa"}, namespaced: inNamespace},

	// batch
	{group: "batch", version: "v1", kind: "CronJob", plural: "cronjobs", short: []string{"cj"}, namespaced: inNamespace},
	{group: "batch", version: "v1", kind: "Job", plural: "jobs", namespaced: inNamespace},

	// certificates.k8s.io
	{group: "certificates.k8s.io", version: "v1", kind: "CertificateSigningRequest", plural: "certificatesigningrequests", short: []string{"csr"}, namespaced: clusterWide},
	{group: "certificates.k8s.io", version: "v1", kind: "ClusterTrustBundle", plural: "clustertrustbundles", namespaced: clusterWide},
	{group: "certificates.k8s.io", version: "v1", kind: "PodCertificateRequest", plural: "podcertificaterequests", namespaced: inNamespace},

	// coordination.k8s.io
	{group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases", namespaced: inNamespace},
	{group: "coordination.k8s.io", version: "v1beta1", kind: "LeaseCandidate", plural: "leasecandidates", namespaced: inNamespace},

	// discovery.k8s.io
	{group: "discovery.k8s.io", version: "v1", kind: "EndpointSlice", plural: "endpointslices", namespaced: inNamespace},

	// flowcontrol.apiserver.k8s.io
	{group: "flowcontrol.apiserver.k8s.io", version: "v1", kind: "FlowSchema", plural: "flowschemas", namespaced: clusterWide},
	{group: "flowcontrol.apiserver.k8s.io", version: "v1", kind: "PriorityLevelConfiguration", plural: "prioritylevelconfigurations", namespaced: clusterWide},

	// internal.apiserver.k8s.io
	{group: "internal.apiserver.k8s.io", version: "v1alpha1", kind: "StorageVersion", plural: "storageversions", namespaced: clusterWide},

	// lifecycle.k8s.io
	{group: "lifecycle.k8s.io", version: "v1alpha1", kind: "Eviction", plural: "evictions", namespaced: inNamespace},
	{group: "lifecycle.k8s.io", version: "v1alpha1", kind: "EvictionRequest", plural: "evictionrequests", namespaced: inNamespace},

	// networking.k8s.io
	{group: "networking.k8s.io", version: "v1", kind: "Ingress", plural: "ingresses", short: []string{"ing"}, namespaced: inNamespace, path: "ingress"},
	{group: "networking.k8s.io", version: "v1", kind: "IngressClass", plural: "ingressclasses", namespaced: clusterWide},
	{group: "networking.k8s.io", version: "v1", kind: "IPAddress", plural: "ipaddresses", short: []string{"ip"}, namespaced: clusterWide},
	{group: "networking.k8s.io", version: "v1", kind: "NetworkPolicy", plural: "networkpolicies", short: []string{"netpol"}, namespaced: inNamespace},
	{group: "networking.k8s.io", version: "v1", kind: "ServiceCIDR", plural: "servicecidrs", namespaced: clusterWide},

	// node.k8s.io
	{group: "node.k8s.io", version: "v1", kind: "RuntimeClass", plural: "runtimeclasses", namespaced: clusterWide},

	// policy
	{group: "policy", version: "v1", kind: "PodDisruptionBudget", plural: "poddisruptionbudgets", short: []string{"pdb"}, namespaced: inNamespace},

	// rbac.authorization.k8s.io
	{group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRoleBinding", plural: "clusterrolebindings", namespaced: clusterWide},
	{group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", plural: "clusterroles", namespaced: clusterWide},
	{group: "rbac.authorization.k8s.io", version: "v1", kind: "RoleBinding", plural: "rolebindings", namespaced: inNamespace},
	{group: "rbac.authorization.k8s.io", version: "v1", kind: "Role", plural: "roles", namespaced: inNamespace},

	// resource.k8s.io (dynamic resource allocation)
	{group: "resource.k8s.io", version: "v1", kind: "DeviceClass", plural: "deviceclasses", namespaced: clusterWide},
	{group: "resource.k8s.io", version: "v1", kind: "DeviceTaintRule", plural: "devicetaintrules", namespaced: clusterWide},
	{group: "resource.k8s.io", version: "v1", kind: "ResourceClaim", plural: "resourceclaims", namespaced: inNamespace},
	{group: "resource.k8s.io", version: "v1", kind: "ResourceClaimTemplate", plural: "resourceclaimtemplates", namespaced: inNamespace},
	{group: "resource.k8s.io", version: "v1alpha3", kind: "ResourcePoolStatusRequest", plural: "resourcepoolstatusrequests", namespaced: clusterWide},
	{group: "resource.k8s.io", version: "v1", kind: "ResourceSlice", plural: "resourceslices", namespaced: clusterWide},

	// scheduling.k8s.io
	{group: "scheduling.k8s.io", version: "v1alpha3", kind: "CompositePodGroup", plural: "compositepodgroups", namespaced: inNamespace},
	{group: "scheduling.k8s.io", version: "v1beta1", kind: "PodGroup", plural: "podgroups", namespaced: inNamespace},
	{group: "scheduling.k8s.io", version: "v1", kind: "PriorityClass", plural: "priorityclasses", short: []string{"pc"}, namespaced: clusterWide},
	{group: "scheduling.k8s.io", version: "v1beta1", kind: "Workload", plural: "workloads", namespaced: inNamespace},

	// storage.k8s.io
	{group: "storage.k8s.io", version: "v1", kind: "CSIDriver", plural: "csidrivers", namespaced: clusterWide},
	{group: "storage.k8s.io", version: "v1", kind: "CSINode", plural: "csinodes", namespaced: clusterWide},
	{group: "storage.k8s.io", version: "v1", kind: "CSIStorageCapacity", plural: "csistoragecapacities", namespaced: inNamespace},
	{group: "storage.k8s.io", version: "v1", kind: "StorageClass", plural: "storageclasses", short: []string{"sc"}, namespaced: clusterWide},
	{group: "storage.k8s.io", version: "v1", kind: "VolumeAttachment", plural: "volumeattachments", namespaced: clusterWide},
	{group: "storage.k8s.io", version: "v1", kind: "VolumeAttributesClass", plural: "volumeattributesclasses", short: []string{"vac"}, namespaced: clusterWide},

	// storagemigration.k8s.io
	{group: "storagemigration.k8s.io", version: "v1", kind: "StorageVersionMigration", plural: "storageversionmigrations", namespaced: clusterWide},
}

// alias names a resource that kube-apiserver serves in one more group but
// stores as another (cohabitating resources): names in the alias group
// resolve to the storage owner.
type alias struct {
	group       string // the group the name is qualified with
	ownerGroup  string
	ownerPlural string
}

// aliases are the cohabitating resources of
// kubernetes/pkg/kubeapiserver/default_storage_factory_builder.go. The
// extensions group is no longer served, but objects it wrote live on in the
// owners' keys, and operators still type those names.
var aliases = []alias{
	{group: "events.k8s.io", ownerGroup: "", ownerPlural: "events"},
	{group: "extensions", ownerGroup: "apps", ownerPlural: "daemonsets"},
	{group: "extensions", ownerGroup: "apps", ownerPlural: "deployments"},
	{group: "extensions", ownerGroup: "apps", ownerPlural: "replicasets"},
	{group: "extensions", ownerGroup: "networking.k8s.io", ownerPlural: "ingresses"},
	{group: "extensions", ownerGroup: "networking.k8s.io", ownerPlural: "networkpolicies"},
}

// notStored lists resources kube-apiserver serves without ever persisting
// them: it computes the answer per request. Naming one is an error
// (ErrNotStored) rather than "unknown".
var notStored = []entry{
	{group: "", kind: "Binding", plural: "bindings"},
	{group: "", kind: "ComponentStatus", plural: "componentstatuses", short: []string{"cs"}},
	{group: "authentication.k8s.io", kind: "SelfSubjectReview", plural: "selfsubjectreviews"},
	{group: "authentication.k8s.io", kind: "TokenReview", plural: "tokenreviews"},
	{group: "authorization.k8s.io", kind: "LocalSubjectAccessReview", plural: "localsubjectaccessreviews"},
	{group: "authorization.k8s.io", kind: "SelfSubjectAccessReview", plural: "selfsubjectaccessreviews"},
	{group: "authorization.k8s.io", kind: "SelfSubjectRulesReview", plural: "selfsubjectrulesreviews"},
	{group: "authorization.k8s.io", kind: "SubjectAccessReview", plural: "subjectaccessreviews"},
	{group: "policy", kind: "Eviction", plural: "evictions"}, // the pods/eviction subresource
}

// resource converts a table row to its Resource.
func (e entry) resource() Resource {
	p := e.path
	if p == "" {
		p = e.plural
	}
	return Resource{
		Group:      e.group,
		Version:    e.version,
		Kind:       e.kind,
		Plural:     e.plural,
		Singular:   strings.ToLower(e.kind),
		ShortNames: append([]string(nil), e.short...),
		Namespaced: e.namespaced,
		Path:       p,
		JSON:       e.json,
		BuiltIn:    true,
	}
}

// names returns every lowercase name the row answers to without a group,
// each once.
func (e entry) names() []string {
	n := []string{e.plural}
	for _, s := range append([]string{strings.ToLower(e.kind)}, e.short...) {
		if !slices.Contains(n, s) {
			n = append(n, s)
		}
	}
	return n
}

// index holds the lookup maps built from the tables.
type index struct {
	all       []Resource
	byName    map[string]int     // unqualified name → position in all
	byQual    map[qualName]int   // (name, group) → position in all
	byPath    map[string]int     // storage path → position in all
	groups    map[string]bool    // every built-in or alias group
	notStored map[qualName]entry // (name, group) → row, for ErrNotStored
	nsUnqual  map[string]entry   // unqualified name → row, for ErrNotStored
}

type qualName struct{ name, group string }

var idx = buildIndex()

func buildIndex() *index {
	x := &index{
		byName:    map[string]int{},
		byQual:    map[qualName]int{},
		byPath:    map[string]int{},
		groups:    map[string]bool{},
		notStored: map[qualName]entry{},
		nsUnqual:  map[string]entry{},
	}
	for i, e := range builtins {
		r := e.resource()
		x.all = append(x.all, r)
		x.byPath[r.Path] = i
		x.groups[e.group] = true
		for _, n := range e.names() {
			if _, dup := x.byName[n]; !dup {
				x.byName[n] = i
			}
			x.byQual[qualName{n, e.group}] = i
		}
	}
	for _, a := range aliases {
		owner := -1
		for i, e := range builtins {
			if e.group == a.ownerGroup && e.plural == a.ownerPlural {
				owner = i
			}
		}
		if owner < 0 {
			panic("resource: alias " + a.ownerPlural + "." + a.group + " has no owner")
		}
		x.groups[a.group] = true
		for _, n := range builtins[owner].names() {
			x.byQual[qualName{n, a.group}] = owner
		}
	}
	for _, e := range notStored {
		x.groups[e.group] = true
		for _, n := range e.names() {
			x.notStored[qualName{n, e.group}] = e
			if _, stored := x.byName[n]; !stored {
				if _, dup := x.nsUnqual[n]; !dup {
					x.nsUnqual[n] = e
				}
			}
		}
	}
	return x
}
