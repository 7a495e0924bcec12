// Package resource maps kubectl-style resource names (plural, singular,
// short name, kind, "<plural>.<group>") to the etcd keys under which
// kube-apiserver v1.37 stores objects, and etcd keys back to resources.
//
// # Key layout
//
// Every object kube-apiserver persists lives at
//
//	<prefix>/<path>/<namespace>/<name>   namespaced resources
//	<prefix>/<path>/<name>               cluster-scoped resources
//
// where <prefix> is the apiserver's --etcd-prefix ("/registry" by default;
// joined like the apiserver does, path.Join("/", prefix), so "registry" and
// "/registry/" mean the same) and <path> is the resource's storage path.
//
// For built-in resources served by kube-apiserver itself the path is the
// lowercase plural (DefaultStorageFactory.ResourcePrefix in
// k8s.io/apiserver/pkg/server/storage), except the
// SpecialDefaultResourcePrefixes compiled into kube-apiserver
// (kubernetes/pkg/kubeapiserver/default_storage_factory_builder.go):
//
//	services                                   services/specs
//	endpoints                                  services/endpoints
//	nodes                                      minions
//	replicationcontrollers                     controllers
//	ingresses.networking.k8s.io                ingress
//	ingresses.extensions                       ingress
//
// Cohabitating resources share one storage location (AddCohabitatingResources
// in the same file): events.k8s.io events are core events under "events";
// extensions deployments, daemonsets, replicasets, networkpolicies and
// ingresses are the apps and networking.k8s.io ones. Lookup resolves those
// names to the owner of the storage, so there is one Resource per path.
//
// Resources served by apiextensions-apiserver and kube-aggregator, and custom
// resources, live at "<group>/<plural>" (SimpleStorageFactory.ResourcePrefix
// in k8s.io/apiserver/pkg/server/options/etcd.go):
//
//	customresourcedefinitions.apiextensions.k8s.io  apiextensions.k8s.io/customresourcedefinitions
//	apiservices.apiregistration.k8s.io              apiregistration.k8s.io/apiservices
//	widgets.e2e.example.com                         e2e.example.com/widgets
//
// Names and namespaces are single path segments: never empty, ".", ".." and
// never containing "/" or "%" (content.IsPathSegmentName, which the
// apiserver's key functions apply too). Listing uses a prefix that ends in
// "/", so "pods/default/" never matches "pods/default-2/...".
//
// # Keys that are not objects of a resource
//
// kube-apiserver also writes keys that no API resource serves; ParseKey
// reports ok == false for them:
//
//	<prefix>/ranges/serviceips, <prefix>/ranges/servicenodeports
//	        core/v1 RangeAllocation bitmaps of the service IP and node port allocators
//	<prefix>/masterleases/<ip>
//	        core/v1 Endpoints leases of the legacy endpoint reconciler
//	<prefix>/peerserverleases/<apiserver id>
//	        coordination/v1 Leases of the apiserver peer proxy
//	compact_rev_key
//	        the compactor's bookkeeping, outside the prefix
//
// # Encoding
//
// kube-apiserver stores built-in resources as protobuf (the "k8s\x00"
// envelope; the default --storage-media-type), and custom resources (which
// have no protobuf form), CustomResourceDefinitions and APIServices (whose
// servers are set up to store JSON) as JSON, as the corpus shows.
// Resource.JSON records which.
//
// # Versions
//
// Resource.Version is the version the resource is preferred in: the newest
// one (GA over beta over alpha) that client-go v0.37.2 knows for the kind,
// except CustomResourceDefinitions, which apiextensions-apiserver stores as
// apiextensions.k8s.io/v1beta1. An apiserver may keep encoding an older
// version for a release after a promotion, and objects keep the version they
// were written with until rewritten, so decoders must trust the apiVersion
// inside the stored value, never Resource.Version.
package resource
