package inspect

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"

	"github.com/etcdpvc/etcdpvc/resource"
)

// The selection of `ls -l SELECTOR --field-selector SELECTOR`: kubectl's
// label selector syntax (k8s.io/apimachinery/pkg/labels, as recover -l
// takes it) and the apiserver's field selectors, with the fields each
// resource supports.

// ParseLabelSelector parses a label selector in kubectl's syntax
// ("app=web,tier!=db", "env in (a,b)", "!legacy"), as kubectl's -l and
// recover -l take it.
func ParseLabelSelector(s string) (labels.Selector, error) {
	return labels.Parse(s)
}

// UnsupportedFieldError is a field selector naming a field the apiserver
// does not select the resource by.
type UnsupportedFieldError struct {
	Resource resource.Resource
	Label    string
	// Supported are the fields the apiserver selects the resource by.
	Supported []string
}

// Error is the apiserver's words: "field label not supported: LABEL".
func (e *UnsupportedFieldError) Error() string {
	return "field label not supported: " + e.Label
}

// Hint names the fields the resource supports.
func (e *UnsupportedFieldError) Hint() string {
	h := e.Resource.String() + " are selected by " + strings.Join(e.Supported, ", ")
	if !e.Resource.BuiltIn {
		h += " (and the selectableFields of its CustomResourceDefinition's storage version)"
	}
	return h
}

// fieldValue is a selectable field's value in an object's content.
type fieldValue func(content map[string]any) string

// path is the string at a path of content, "" when absent.
func path(keys ...string) fieldValue {
	return func(content map[string]any) string {
		v, _ := lookup(content, keys...).(string)
		return v
	}
}

// lookup is the value at a path of content, nil when absent.
func lookup(content map[string]any, keys ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(content, keys...)
	return v
}

// boolAt is a boolean field as the apiserver renders it: "true" or "false"
// (false when absent).
func boolAt(keys ...string) fieldValue {
	return func(content map[string]any) string {
		b, _ := lookup(content, keys...).(bool)
		return strconv.FormatBool(b)
	}
}

// intAt is an integer field as the apiserver renders it (0 when absent).
func intAt(keys ...string) fieldValue {
	return func(content map[string]any) string {
		switch n := lookup(content, keys...).(type) {
		case int64:
			return strconv.FormatInt(n, 10)
		case float64:
			return strconv.FormatInt(int64(n), 10)
		}
		return "0"
	}
}

// none is a field the apiserver accepts in a selector but does not set
// (pods' status.podIPs): it is "" on every object.
func none(map[string]any) string { return "" }

// selectableFields are the fields kube-apiserver v1.37 selects each
// built-in resource by, besides metadata.name and metadata.namespace
// (those of a cluster-scoped resource: metadata.name only where the
// apiserver says so, below). Hand-kept from the apiserver's field label
// conversion functions (k8s.io/kubernetes pkg/apis/core/v1/conversion.go,
// pkg/apis/batch/v1/conversion.go, pkg/apis/certificates/v1/conversion.go,
// pkg/apis/resource/*/conversion.go) for the names, and from each
// resource's GetAttrs / ToSelectableFields (pkg/registry/core/pod,
// event, namespace, node, secret, service, replicationcontroller;
// pkg/registry/batch/job; pkg/registry/certificates; pkg/registry/resource)
// for the values, read here from the stored (versioned) object. A resource
// not listed is selected by metadata.name and metadata.namespace only, the
// apiserver's default (runtime.DefaultMetaV1FieldSelectorConversion).
var selectableFields = map[schema.GroupResource]map[string]fieldValue{
	{Resource: "pods"}: {
		"spec.nodeName":            path("spec", "nodeName"),
		"spec.restartPolicy":       path("spec", "restartPolicy"),
		"spec.schedulerName":       path("spec", "schedulerName"),
		"spec.serviceAccountName":  path("spec", "serviceAccountName"),
		"spec.hostNetwork":         boolAt("spec", "hostNetwork"),
		"status.phase":             path("status", "phase"),
		"status.podIP":             podIP,
		"status.podIPs":            none,
		"status.nominatedNodeName": path("status", "nominatedNodeName"),
	},
	{Resource: "nodes"}: {
		"spec.unschedulable": boolAt("spec", "unschedulable"),
	},
	{Resource: "replicationcontrollers"}: {
		"status.replicas": intAt("status", "replicas"),
	},
	{Resource: "events"}: {
		"involvedObject.kind":            path("involvedObject", "kind"),
		"involvedObject.namespace":       path("involvedObject", "namespace"),
		"involvedObject.name":            path("involvedObject", "name"),
		"involvedObject.uid":             path("involvedObject", "uid"),
		"involvedObject.apiVersion":      path("involvedObject", "apiVersion"),
		"involvedObject.resourceVersion": path("involvedObject", "resourceVersion"),
		"involvedObject.fieldPath":       path("involvedObject", "fieldPath"),
		"reason":                         path("reason"),
		"reportingComponent":             path("reportingComponent"),
		"source":                         eventSource,
		"type":                           path("type"),
	},
	{Resource: "namespaces"}: {
		"status.phase": path("status", "phase"),
	},
	{Resource: "secrets"}: {
		"type": path("type"),
	},
	{Resource: "services"}: {
		"spec.clusterIP": path("spec", "clusterIP"),
		"spec.type":      path("spec", "type"),
	},
	{Group: "batch", Resource: "jobs"}: {
		"status.successful": intAt("status", "succeeded"),
	},
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: {
		"spec.signerName": path("spec", "signerName"),
	},
	{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}: {
		"spec.signerName": path("spec", "signerName"),
	},
	{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}: {
		"spec.signerName": path("spec", "signerName"),
		"spec.podName":    path("spec", "podName"),
		"spec.nodeName":   path("spec", "nodeName"),
	},
	{Group: "resource.k8s.io", Resource: "resourceslices"}: {
		"spec.nodeName": path("spec", "nodeName"),
		"spec.driver":   path("spec", "driver"),
	},
}

// noNamespaceField are the resources whose conversion function accepts
// metadata.name but not metadata.namespace (the cluster-scoped ones with
// a function of their own; other cluster-scoped resources take
// metadata.namespace, which is "" on each of their objects).
var noNamespaceField = map[schema.GroupResource]bool{
	{Resource: "nodes"}:      true,
	{Resource: "namespaces"}: true,
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: true,
	{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}:        true,
	{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}:     true,
	{Group: "resource.k8s.io", Resource: "resourceslices"}:                 true,
}

// fieldAliases are the old names a conversion function translates: pods'
// spec.host is spec.nodeName.
var fieldAliases = map[schema.GroupResource]map[string]string{
	{Resource: "pods"}: {"spec.host": "spec.nodeName"},
}

// podIP is the apiserver's status.podIP: the first of status.podIPs (the
// v1 status.podIP when the object has none).
func podIP(content map[string]any) string {
	if ips, ok := lookup(content, "status", "podIPs").([]any); ok && len(ips) > 0 {
		if m, ok := ips[0].(map[string]any); ok {
			ip, _ := m["ip"].(string)
			return ip
		}
	}
	return path("status", "podIP")(content)
}

// eventSource is an Event's source: source.component, else
// reportingComponent (events written through events.k8s.io).
func eventSource(content map[string]any) string {
	if s := path("source", "component")(content); s != "" {
		return s
	}
	return path("reportingComponent")(content)
}

// SupportedFields are the fields the apiserver selects r's objects by;
// custom are a custom resource's selectable fields (CRDSelectableFields).
func SupportedFields(r resource.Resource, custom []string) []string {
	gr := r.GroupResource()
	out := []string{"metadata.name"}
	if !noNamespaceField[gr] && (r.Namespaced || r.BuiltIn) {
		out = append(out, "metadata.namespace")
	}
	var more []string
	for f := range selectableFields[gr] {
		more = append(more, f)
	}
	for _, p := range custom {
		more = append(more, strings.TrimPrefix(p, "."))
	}
	slices.Sort(more)
	return append(out, more...)
}

// CRDSelectableFields are the JSONPaths of the selectableFields of a
// CustomResourceDefinition's storage version (crd: its content), the
// fields the apiserver selects its custom resources by besides the name
// and namespace. The apiserver takes those of the version a request
// names, and kubectl names the preferred one, which is the storage
// version of most definitions.
func CRDSelectableFields(crd map[string]any) []string {
	versions, _ := lookup(crd, "spec", "versions").([]any)
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if storage, _ := m["storage"].(bool); !storage {
			continue
		}
		var out []string
		fs, _ := m["selectableFields"].([]any)
		for _, f := range fs {
			if p, ok := lookup(asMap(f), "jsonPath").(string); ok {
				out = append(out, p)
			}
		}
		return out
	}
	return nil
}

// asMap is v as an object, nil when it is not one.
func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// customField is a custom resource's selectable field, as the
// apiextensions-apiserver reads it (customresource.selectableFields): the
// one match of its JSONPath, printed with fmt.Sprint, "" for none.
func customField(jsonPath string) (fieldValue, error) {
	p := jsonpath.New("selectableField").AllowMissingKeys(true)
	if err := p.Parse("{" + jsonPath + "}"); err != nil {
		return nil, err
	}
	return func(content map[string]any) string {
		results, err := p.FindResults(content)
		if err != nil || len(results) != 1 || len(results[0]) != 1 {
			return ""
		}
		if v := results[0][0].Interface(); v != nil {
			return fmt.Sprint(v)
		}
		return ""
	}, nil
}

// FieldSelection is a parsed field selector for one resource.
type FieldSelection struct {
	sel fields.Selector
	gr  schema.GroupResource
	// custom are a custom resource's selectable fields, by name.
	custom map[string]fieldValue
	// meta is true when it names metadata fields only, which the key
	// gives without decoding the value.
	meta bool
}

// ParseFieldSelector parses a field selector (kubectl's --field-selector:
// FIELD=VALUE, FIELD==VALUE, FIELD!=VALUE, comma-separated, all of them to
// hold) for resource r, with the apiserver's rules: a field it does not
// select r by is an *UnsupportedFieldError; pods' spec.host is
// spec.nodeName. A custom resource is selected by metadata.name (and
// metadata.namespace when namespaced) and custom, its definition's
// selectable fields (CRDSelectableFields).
func ParseFieldSelector(r resource.Resource, s string, custom []string) (*FieldSelection, error) {
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return nil, err
	}
	gr := r.GroupResource()
	supported := SupportedFields(r, custom)
	cf := map[string]fieldValue{}
	for _, p := range custom {
		v, err := customField(p)
		if err != nil {
			return nil, fmt.Errorf("the CustomResourceDefinition's selectable field %s: %w", p, err)
		}
		cf[strings.TrimPrefix(p, ".")] = v
	}
	meta := true
	sel, err = sel.Transform(func(f, v string) (string, string, error) {
		if to, ok := fieldAliases[gr][f]; ok {
			f = to
		}
		if !slices.Contains(supported, f) {
			return "", "", &UnsupportedFieldError{Resource: r, Label: f, Supported: supported}
		}
		if f != "metadata.name" && f != "metadata.namespace" {
			meta = false
		}
		return f, v, nil
	})
	if err != nil {
		return nil, err
	}
	return &FieldSelection{sel: sel, gr: gr, custom: cf, meta: meta}, nil
}

// NeedsObject reports whether matching needs the decoded object (a field
// other than metadata.name and metadata.namespace).
func (f *FieldSelection) NeedsObject() bool { return !f.meta }

// Matches reports whether the object named ns/name, with content (nil
// when NeedsObject is false), is selected.
func (f *FieldSelection) Matches(ns, name string, content map[string]any) bool {
	set := fields.Set{"metadata.name": name}
	if !noNamespaceField[f.gr] {
		set["metadata.namespace"] = ns
	}
	if content != nil {
		for k, v := range selectableFields[f.gr] {
			set[k] = v(content)
		}
		for k, v := range f.custom {
			set[k] = v(content)
		}
	}
	return f.sel.Matches(set)
}

// String is the selector as parsed.
func (f *FieldSelection) String() string { return f.sel.String() }

// Selection keeps the objects of a listing that match a label selector and
// a field selector (nil: every object).
type Selection struct {
	Labels labels.Selector
	Fields *FieldSelection
}

// NeedsObject reports whether matching decodes each object whole: a label
// selector (labels are not in the listing's summary) or a field selector
// on fields other than the name and namespace.
func (s *Selection) NeedsObject() bool {
	if s == nil {
		return false
	}
	return (s.Labels != nil && !s.Labels.Empty()) || (s.Fields != nil && s.Fields.NeedsObject())
}

// MatchesKey reports whether the object named ns/name may match, before
// its value is read: false when the name and namespace alone rule it out.
func (s *Selection) MatchesKey(ns, name string) bool {
	if s == nil || s.Fields == nil || !s.Fields.meta {
		return true
	}
	return s.Fields.Matches(ns, name, nil)
}

// Matches reports whether the decoded object ns/name with content matches.
func (s *Selection) Matches(ns, name string, content map[string]any) bool {
	if s == nil {
		return true
	}
	if s.Fields != nil && !s.Fields.Matches(ns, name, content) {
		return false
	}
	if s.Labels != nil && !s.Labels.Empty() {
		return s.Labels.Matches(labels.Set(stringMap(lookup(content, "metadata", "labels"))))
	}
	return true
}

// stringMap is a map of strings in content (labels), nil when not one.
func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		out[k] = fmt.Sprint(x)
	}
	return out
}
