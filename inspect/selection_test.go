package inspect

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/etcdpvc/etcdpvc/resource"
)

func mustLookup(t *testing.T, name string) resource.Resource {
	t.Helper()
	r, err := resource.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseFieldSelector(t *testing.T) {
	pod := map[string]any{
		"metadata": map[string]any{"name": "db-0", "namespace": "demo", "labels": map[string]any{"app": "db"}},
		"spec":     map[string]any{"nodeName": "node-1", "restartPolicy": "Always", "hostNetwork": true},
		"status":   map[string]any{"phase": "Running", "podIPs": []any{map[string]any{"ip": "10.0.0.7"}}},
	}
	event := map[string]any{"reportingComponent": "kubelet", "involvedObject": map[string]any{"kind": "Pod"}, "type": "Warning"}
	job := map[string]any{"status": map[string]any{"succeeded": int64(3)}}
	for _, tc := range []struct {
		res, sel string
		content  map[string]any
		match    bool
		// unsupported is the field refused, "" for none.
		unsupported string
		needsObject bool
	}{
		{res: "pods", sel: "spec.nodeName=node-1", content: pod, match: true, needsObject: true},
		{res: "pods", sel: "spec.host=node-1", content: pod, match: true, needsObject: true},
		{res: "pods", sel: "spec.nodeName!=node-1", content: pod, match: false, needsObject: true},
		{res: "pods", sel: "status.phase==Running,spec.restartPolicy=Always", content: pod, match: true, needsObject: true},
		{res: "pods", sel: "status.podIP=10.0.0.7", content: pod, match: true, needsObject: true},
		{res: "pods", sel: "spec.hostNetwork=true", content: pod, match: true, needsObject: true},
		// Accepted by the apiserver, never set by it: "" on every pod.
		{res: "pods", sel: "status.podIPs=10.0.0.7", content: pod, match: false, needsObject: true},
		{res: "pods", sel: "metadata.name=db-0,metadata.namespace=demo", match: true},
		{res: "pods", sel: "spec.containers=x", unsupported: "spec.containers"},
		{res: "configmaps", sel: "data.x=y", unsupported: "data.x"},
		{res: "namespaces", sel: "metadata.namespace=x", unsupported: "metadata.namespace"},
		{res: "nodes", sel: "spec.unschedulable=false", content: map[string]any{}, match: true, needsObject: true},
		// A cluster-scoped resource without a conversion of its own takes
		// metadata.namespace, "" on each object.
		{res: "pv", sel: "metadata.namespace=", match: true},
		{res: "pv", sel: "metadata.namespace=x", match: false},
		{res: "events", sel: "source=kubelet,type=Warning,involvedObject.kind=Pod", content: event, match: true, needsObject: true},
		{res: "jobs", sel: "status.successful=3", content: job, match: true, needsObject: true},
		{res: "secrets", sel: "type=Opaque", content: map[string]any{"type": "Opaque"}, match: true, needsObject: true},
	} {
		r := mustLookup(t, tc.res)
		f, err := ParseFieldSelector(r, tc.sel, nil)
		var uf *UnsupportedFieldError
		if tc.unsupported != "" {
			if !errors.As(err, &uf) || uf.Label != tc.unsupported || err.Error() != "field label not supported: "+tc.unsupported {
				t.Errorf("%s %q: %v, want field label not supported: %s", tc.res, tc.sel, err, tc.unsupported)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", tc.res, tc.sel, err)
			continue
		}
		if f.NeedsObject() != tc.needsObject {
			t.Errorf("%s %q: NeedsObject %v", tc.res, tc.sel, f.NeedsObject())
		}
		ns := "demo"
		if !r.Namespaced {
			ns = ""
		}
		if got := f.Matches(ns, "db-0", tc.content); got != tc.match {
			t.Errorf("%s %q: Matches %v, want %v", tc.res, tc.sel, got, tc.match)
		}
	}
	if _, err := ParseFieldSelector(mustLookup(t, "pods"), "spec.nodeName", nil); err == nil {
		t.Error("a selector without an operator parsed")
	}
}

func TestSupportedFields(t *testing.T) {
	for res, want := range map[string][]string{
		"configmaps": {"metadata.name", "metadata.namespace"},
		"namespaces": {"metadata.name", "status.phase"},
		"secrets":    {"metadata.name", "metadata.namespace", "type"},
		"pv":         {"metadata.name", "metadata.namespace"},
	} {
		if diff := cmp.Diff(want, SupportedFields(mustLookup(t, res), nil)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", res, diff)
		}
	}
}

func TestSelection(t *testing.T) {
	l, err := ParseLabelSelector("app in (db,web),!legacy")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFieldSelector(mustLookup(t, "pods"), "metadata.namespace=demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Selection{Labels: l, Fields: f}
	obj := func(labels map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": labels}}
	}
	for _, tc := range []struct {
		ns      string
		content map[string]any
		want    bool
	}{
		{"demo", obj(map[string]any{"app": "db"}), true},
		{"demo", obj(map[string]any{"app": "db", "legacy": "yes"}), false},
		{"demo", obj(nil), false},
		{"other", obj(map[string]any{"app": "web"}), false},
	} {
		if got := s.Matches(tc.ns, "x", tc.content); got != tc.want {
			t.Errorf("%s %v: %v, want %v", tc.ns, tc.content, got, tc.want)
		}
	}
	if !s.NeedsObject() || s.MatchesKey("other", "x") || !s.MatchesKey("demo", "x") {
		t.Error("a label selector needs the object; the namespace alone rules other namespaces out")
	}
	var none *Selection
	if none.NeedsObject() || !none.MatchesKey("a", "b") || !none.Matches("a", "b", nil) {
		t.Error("no selection keeps everything")
	}
}

func TestCustomResourceFields(t *testing.T) {
	crd := map[string]any{"spec": map[string]any{"versions": []any{
		map[string]any{"name": "v1beta1", "storage": false, "selectableFields": []any{map[string]any{"jsonPath": ".spec.old"}}},
		map[string]any{"name": "v1", "storage": true, "selectableFields": []any{map[string]any{"jsonPath": ".spec.color"}, map[string]any{"jsonPath": ".spec.size"}}},
	}}}
	custom := CRDSelectableFields(crd)
	if diff := cmp.Diff([]string{".spec.color", ".spec.size"}, custom); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	r := resource.Resource{Group: "e2e.example.com", Plural: "widgets", Namespaced: true}
	if diff := cmp.Diff([]string{"metadata.name", "metadata.namespace", "spec.color", "spec.size"}, SupportedFields(r, custom)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	f, err := ParseFieldSelector(r, "spec.color=blue,spec.size=3", custom)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Matches("demo", "w1", map[string]any{"spec": map[string]any{"color": "blue", "size": int64(3)}}) {
		t.Error("a custom resource's selectable fields do not match")
	}
	if f.Matches("demo", "w1", map[string]any{"spec": map[string]any{"color": "red", "size": int64(3)}}) {
		t.Error("spec.color=blue matches red")
	}
	var uf *UnsupportedFieldError
	if _, err := ParseFieldSelector(r, "spec.old=x", custom); !errors.As(err, &uf) {
		t.Errorf("a field of another version than the storage one: %v", err)
	}
	cluster := resource.Resource{Group: "e2e.example.com", Plural: "gadgets"}
	if _, err := ParseFieldSelector(cluster, "metadata.namespace=x", nil); !errors.As(err, &uf) {
		t.Errorf("a cluster-scoped custom resource by namespace: %v", err)
	}
}
