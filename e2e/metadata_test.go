package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// apiJSON is the apiserver's JSON of the object at path, decoded.
func (c *Cluster) apiJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := c.Client.CoreV1().RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, b)
	}
	return m
}

// TestGetMatchesAPIServer checks that etcdpvc decodes stored values of
// every kind the scenarios touch exactly as the apiserver does: `etcdpvc
// get -o json` and the apiserver's JSON are the same object.
func TestGetMatchesAPIServer(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	ctx := context.Background()
	const ns = "demo"
	core := c.Client.CoreV1()
	if _, err := core.PersistentVolumeClaims(ns).Create(ctx, newPVC("get-0", "local-disks", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.AppsV1().StatefulSets(ns).Create(ctx, newStatefulSet("get-web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "get-cm"}, Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {0, 1, 2}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "get-secret"}, Data: map[string][]byte{"token": []byte("test-only")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "get-svc"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Events(ns).Create(ctx, newEvent("get-ev"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		args    []string // etcdpvc get arguments
		key     string
		apiPath string
	}{
		{[]string{"pvc", "get-0", "-n", ns}, "/registry/persistentvolumeclaims/demo/get-0", "/api/v1/namespaces/demo/persistentvolumeclaims/get-0"},
		{[]string{"sts", "get-web", "-n", ns}, "/registry/statefulsets/demo/get-web", "/apis/apps/v1/namespaces/demo/statefulsets/get-web"},
		{[]string{"cm", "get-cm", "-n", ns}, "/registry/configmaps/demo/get-cm", "/api/v1/namespaces/demo/configmaps/get-cm"},
		{[]string{"secret", "get-secret", "-n", ns, "--show-secrets"}, "/registry/secrets/demo/get-secret", "/api/v1/namespaces/demo/secrets/get-secret"},
		{[]string{"svc", "get-svc", "-n", ns}, "/registry/services/specs/demo/get-svc", "/api/v1/namespaces/demo/services/get-svc"},
		{[]string{"ev", "get-ev", "-n", ns}, "/registry/events/demo/get-ev", "/api/v1/namespaces/demo/events/get-ev"},
		{[]string{"ns", ns}, "/registry/namespaces/demo", "/api/v1/namespaces/demo"},
		{[]string{"clusterrole", "view"}, "/registry/clusterroles/view", "/apis/rbac.authorization.k8s.io/v1/clusterroles/view"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[:2], "/"), func(t *testing.T) {
			var want map[string]any
			var r result
			// Read both until they agree on the revision: the apiserver may
			// serve from its watch cache a moment behind etcd.
			eventually(t, "etcdpvc and the apiserver at the same revision", func() error {
				want = c.apiJSON(t, tc.apiPath)
				r = c.mustEtcdpvc(t, append([]string{"get", "-o", "json", "--show-managed-fields"}, tc.args...)...)
				var got map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
					t.Fatalf("etcdpvc get -o json: %v\n%s", err, r)
				}
				// These objects were never updated, so the fields the
				// apiserver defaults on read are not stored yet.
				for _, path := range defaultedOnRead[resourceOf(tc.key)] {
					if v := lookup(got, path); v != nil {
						t.Errorf("etcdpvc shows %s = %v, which this test expects only from the apiserver's defaulting: update defaultedOnRead", strings.Join(path, "."), v)
					}
					if v := lookup(want, path); v == nil {
						t.Errorf("the apiserver no longer fills in %s on read: update defaultedOnRead", strings.Join(path, "."))
					}
					remove(want, path)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					return fmt.Errorf("etcdpvc get -o json differs from the apiserver's JSON (-apiserver +etcdpvc):\n%s", diff)
				}
				return nil
			})
			c.capture(t, "plain", "", c.etcdGet(t, tc.key))
		})
	}
}

// defaultedOnRead lists, per resource, the fields the apiserver fills in
// when it decodes a stored value (its defaulting functions) and that are
// absent from the stored bytes until the object is next written: etcdpvc
// shows what is stored, so it does not show them. "*" matches every
// element of a list.
var defaultedOnRead = map[string][][]string{
	"persistentvolumeclaims": {{"status", "phase"}},
	"statefulsets":           {{"spec", "volumeClaimTemplates", "*", "apiVersion"}, {"spec", "volumeClaimTemplates", "*", "kind"}},
}

// resourceOf is the resource of a /registry/RESOURCE/... key.
func resourceOf(key string) string {
	r, _, _ := strings.Cut(strings.TrimPrefix(key, "/registry/"), "/")
	return r
}

// lookup returns the value at path in a decoded JSON object, or nil; "*"
// returns the first list element's value.
func lookup(v any, path []string) any {
	for i, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			if p != "*" {
				return nil
			}
			for _, e := range x {
				if r := lookup(e, path[i+1:]); r != nil {
					return r
				}
			}
			return nil
		default:
			return nil
		}
	}
	return v
}

// remove deletes the value at path in a decoded JSON object; "*" stands
// for every element of a list.
func remove(v any, path []string) {
	switch x := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			delete(x, path[0])
			return
		}
		remove(x[path[0]], path[1:])
	case []any:
		for _, e := range x {
			remove(e, path[1:])
		}
	}
}

func newEvent(name string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "demo", Name: "www-web-0"},
		Reason:         "E2E",
		Message:        "written by the etcdpvc e2e suite",
		Type:           corev1.EventTypeNormal,
	}
}

// TestAnnotateKeepsEventLease annotates an Event, which the apiserver
// stores attached to an etcd lease (--event-ttl): the edit must keep the
// lease, or etcd would never expire the event.
func TestAnnotateKeepsEventLease(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Events("demo").Create(ctx, newEvent("leased-ev"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create event: %v", err)
	}
	key := "/registry/events/demo/leased-ev"
	before := c.etcdGet(t, key)
	if before.Lease == 0 {
		t.Fatalf("the apiserver stored %s without a lease", key)
	}
	c.capture(t, "plain", "leased", before)
	c.mustEtcdpvc(t, "annotate", "ev", "leased-ev", "-n", "demo", "e2e/note=kept-lease", "--yes", "--backup-dir", t.TempDir())
	after := c.etcdGet(t, key)
	if after.Lease != before.Lease {
		t.Errorf("lease %x → %x: the edit must keep the key's lease", before.Lease, after.Lease)
	}
	ttl, err := c.Etcd.TimeToLive(ctx, clientv3.LeaseID(after.Lease), clientv3.WithAttachedKeys())
	if err != nil {
		t.Fatalf("lease time-to-live: %v", err)
	}
	attached := false
	for _, k := range ttl.Keys {
		attached = attached || string(k) == key
	}
	if ttl.TTL <= 0 || !attached {
		t.Errorf("lease %x: TTL %ds, attached keys %q; want a live lease holding %s", after.Lease, ttl.TTL, ttl.Keys, key)
	}
	eventually(t, "the apiserver serves the annotation", func() error {
		ev, err := c.Client.CoreV1().Events("demo").Get(ctx, "leased-ev", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ev.ResourceVersion != strconv.FormatInt(after.ModRevision, 10) || ev.Annotations["e2e/note"] != "kept-lease" {
			return fmt.Errorf("resourceVersion %s (want %d), annotations %v", ev.ResourceVersion, after.ModRevision, ev.Annotations)
		}
		return nil
	})
}

// TestRemoveFinalizerFromTerminatingPVC removes the last finalizer of a
// Terminating PVC. etcdpvc warns that the apiserver deletes such an object
// on its next update; this checks that it does.
func TestRemoveFinalizerFromTerminatingPVC(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	ctx := context.Background()
	const ns, name = "demo", "fin-web-0"
	pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)
	terminating := terminatingPVC(t, c, ns, name)
	w, err := pvcs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: terminating.ResourceVersion})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	r := c.mustEtcdpvc(t, "finalizers", "pvc", name, "-n", ns, "--remove", pvcProtection, "--yes", "--backup-dir", t.TempDir())
	if !strings.Contains(r.stderr, "deletes it for good on its next update") {
		t.Errorf("no warning that the apiserver will delete the object on its next update:\n%s", r)
	}
	ev := nextEvent(t, w, "watch after removing the finalizer")
	pvc, ok := ev.Object.(*corev1.PersistentVolumeClaim)
	if ev.Type != watch.Modified || !ok || len(pvc.Finalizers) != 0 || pvc.DeletionTimestamp == nil {
		t.Fatalf("watch after removing the finalizer: got %s %+v, want MODIFIED, Terminating, no finalizers", ev.Type, ev.Object)
	}

	// The next update, any update, completes the deletion.
	pvc.Labels["touched"] = "by-api"
	if _, err := pvcs.Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("API update: %v", err)
	}
	if ev := nextEvent(t, w, "watch after the API update"); ev.Type != watch.Deleted {
		t.Fatalf("watch after the API update: got %s, want DELETED", ev.Type)
	}
	if _, err := pvcs.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after the API update: %v, want NotFound", err)
	}
}

// TestWriteNeedsYesOffATerminal runs a write without --yes and without a
// terminal, as a script would: it must be refused (exit status 5) with
// nothing written.
func TestWriteNeedsYesOffATerminal(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	ctx := context.Background()
	if _, err := c.Client.CoreV1().ConfigMaps("demo").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unconfirmed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := "/registry/configmaps/demo/unconfirmed"
	before := c.etcdGet(t, key)
	r := c.etcdpvc(t, "label", "cm", "unconfirmed", "-n", "demo", "a=b", "--backup-dir", t.TempDir())
	if r.code != 5 {
		t.Errorf("want exit status 5 (refused):\n%s", r)
	}
	if after := c.etcdGet(t, key); after.ModRevision != before.ModRevision {
		t.Errorf("a write without --yes changed %s: revision %d → %d", key, before.ModRevision, after.ModRevision)
	}
}
