package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// nsObject is one object of the namespace TestRecoverNamespace recovers.
type nsObject struct {
	gvr  schema.GroupVersionResource
	name string
	key  string // its etcd key
}

func (o nsObject) String() string { return o.gvr.Resource + "/" + o.name }

var widgetsGVR = schema.GroupVersionResource{Group: "e2e.example.com", Version: "v1", Resource: "widgets"}

// widgetsCRD is a namespaced custom resource with a free-form spec.
func widgetsCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets.e2e.example.com"},
		"spec": map[string]any{
			"group": "e2e.example.com",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"spec": map[string]any{
						"type": "object", "x-kubernetes-preserve-unknown-fields": true,
					}},
				}},
			}},
		},
	}}
}

// TestRecoverNamespace is the recover-namespace runbook
// (docs/runbooks/recover-namespace.md) end to end, with encryption at rest
// (Secrets aescbc, ConfigMaps aesgcm, PVCs secretbox). A namespace holding
// one object of each common kind, a custom resource and an Event is
// snapshotted (etcdctl snapshot save), then deleted: through the API first,
// which leaves it Terminating for good since no kube-controller-manager
// runs its namespace controller here, then by deleting every key of the
// namespace in etcd directly, which is what the namespace controller and
// the garbage collector would have done. A namespace created after the
// snapshot must be left alone. `etcdpvc --db SNAP recover namespace NAME
// --yes` into the live etcd brings everything back with its uid and data;
// the apiserver serves it and accepts updates; Events are not recreated; a
// second run writes nothing; the Secret is stored encrypted.
func TestRecoverNamespace(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "encryption-config.yaml")
	if err := os.WriteFile(cfg, []byte(encryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "recover-namespace", ClusterOptions{EncryptionConfig: cfg})
	ctx := context.Background()
	const ns, later = "shop", "shop-later"
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}

	// The CRD stays in the cluster: only the namespace is deleted.
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Create(ctx, widgetsCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create customresourcedefinition widgets.e2e.example.com: %v", err)
	}
	c.EnsureNamespace(t, ns)
	create := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("create %s in namespace %s: %v", what, ns, err)
		}
	}
	labels := map[string]string{"app": "shop"}
	core, apps, rbac := c.Client.CoreV1(), c.Client.AppsV1(), c.Client.RbacV1()
	_, err = core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "shop-sa", Labels: labels}}, metav1.CreateOptions{})
	create("serviceaccount", err)
	_, err = core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-db", Labels: labels},
		Data: map[string][]byte{"password": []byte("s3cr3t-shop-password")}}, metav1.CreateOptions{})
	create("secret", err)
	_, err = core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop-config", Labels: labels},
		Data: map[string]string{"settings.yaml": "replicas: 3\n"}}, metav1.CreateOptions{})
	create("configmap", err)
	_, err = rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "shop-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{})
	create("role", err)
	_, err = rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shop-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "shop-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "shop-sa", Namespace: ns}}}, metav1.CreateOptions{})
	create("rolebinding", err)
	_, err = core.PersistentVolumeClaims(ns).Create(ctx, newPVC("shop-data", "local-disks", "10Gi"), metav1.CreateOptions{})
	create("persistentvolumeclaim", err)
	_, err = apps.Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-api", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{ServiceAccountName: "shop-sa", Containers: []corev1.Container{{
					Name: "api", Image: "registry.k8s.io/pause:3.10",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-config"}}}},
				}}},
			},
		},
	}, metav1.CreateOptions{})
	create("deployment", err)
	_, err = core.Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-api", Labels: labels},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	create("service", err)
	_, err = apps.StatefulSets(ns).Create(ctx, newStatefulSet("shop-db"), metav1.CreateOptions{})
	create("statefulset", err)
	ev := newEvent("shop-api.e2e")
	ev.InvolvedObject = corev1.ObjectReference{Kind: "Deployment", Namespace: ns, Name: "shop-api"}
	_, err = core.Events(ns).Create(ctx, ev, metav1.CreateOptions{})
	create("event", err)
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "blue", "labels": map[string]any{"app": "shop"}},
		"spec":     map[string]any{"color": "blue", "size": int64(3)},
	}}
	eventually(t, "create widget blue (the CRD becomes Established)", func() error {
		_, err := dyn.Resource(widgetsGVR).Namespace(ns).Create(ctx, widget, metav1.CreateOptions{})
		return err
	})

	v1 := func(res string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Version: "v1", Resource: res}
	}
	appsGVR := func(res string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: res}
	}
	rbacGVR := func(res string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: res}
	}
	recovered := []nsObject{
		{v1("namespaces"), ns, "/registry/namespaces/" + ns},
		{v1("serviceaccounts"), "shop-sa", "/registry/serviceaccounts/" + ns + "/shop-sa"},
		{v1("secrets"), "shop-db", "/registry/secrets/" + ns + "/shop-db"},
		{v1("configmaps"), "shop-config", "/registry/configmaps/" + ns + "/shop-config"},
		{rbacGVR("roles"), "shop-reader", "/registry/roles/" + ns + "/shop-reader"},
		{rbacGVR("rolebindings"), "shop-reader", "/registry/rolebindings/" + ns + "/shop-reader"},
		{v1("persistentvolumeclaims"), "shop-data", "/registry/persistentvolumeclaims/" + ns + "/shop-data"},
		{appsGVR("deployments"), "shop-api", "/registry/deployments/" + ns + "/shop-api"},
		{v1("services"), "shop-api", "/registry/services/specs/" + ns + "/shop-api"},
		{appsGVR("statefulsets"), "shop-db", "/registry/statefulsets/" + ns + "/shop-db"},
		{widgetsGVR, "blue", "/registry/e2e.example.com/widgets/" + ns + "/blue"},
	}
	event := nsObject{v1("events"), ev.Name, "/registry/events/" + ns + "/" + ev.Name}
	get := func(o nsObject) (*unstructured.Unstructured, error) {
		if o.gvr.Resource == "namespaces" {
			return dyn.Resource(o.gvr).Get(ctx, o.name, metav1.GetOptions{})
		}
		return dyn.Resource(o.gvr).Namespace(ns).Get(ctx, o.name, metav1.GetOptions{})
	}
	update := func(o nsObject, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if o.gvr.Resource == "namespaces" {
			return dyn.Resource(o.gvr).Update(ctx, u, metav1.UpdateOptions{})
		}
		return dyn.Resource(o.gvr).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{})
	}
	before := map[string]*unstructured.Unstructured{}
	for _, o := range append(recovered, event) {
		u, err := get(o)
		if err != nil {
			t.Fatalf("get %s before the deletion: %v", o, err)
		}
		before[o.String()] = u
	}
	if p := storedPrefix(c.etcdGet(t, recovered[2].key).Value); p != aescbcPrefix {
		t.Fatalf("the secret is stored as %s before the deletion, want %s", p, aescbcPrefix)
	}

	snap := filepath.Join(t.TempDir(), "etcd-before-delete.db")
	runTool(t, suite.etcdctl, "--endpoints", c.EtcdURL, "snapshot", "save", snap)

	// The cluster goes on: a namespace created after the snapshot.
	c.EnsureNamespace(t, later)
	if _, err := core.ConfigMaps(later).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later-config"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap in namespace %s: %v", later, err)
	}
	laterNS := c.etcdGet(t, "/registry/namespaces/"+later)
	laterCM := c.etcdGet(t, "/registry/configmaps/"+later+"/later-config")

	// Delete the namespace through the API: it becomes Terminating and
	// stays so (no namespace controller runs here). Then delete every key
	// of it in etcd, as the namespace controller would have, and wait
	// until the apiserver no longer serves it.
	if err := core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace %s: %v", ns, err)
	}
	deleted := deleteNamespaceKeys(t, c, ns)
	if want := len(recovered) + 1; deleted != want {
		t.Fatalf("deleted %d keys of namespace %s in etcd, want %d (the objects created and the event)", deleted, ns, want)
	}
	eventually(t, "namespace "+ns+" gone", func() error {
		if _, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get namespace %s: %v, want NotFound", ns, err)
		}
		for _, o := range recovered[1:] {
			if _, err := get(o); !apierrors.IsNotFound(err) {
				return fmt.Errorf("get %s: %v, want NotFound", o, err)
			}
		}
		return nil
	})

	backups := t.TempDir()
	args := []string{"--db", snap, "recover", "namespace", ns, "--encryption-config", cfg, "--yes", "--backup-dir", backups}
	r := c.etcdpvc(t, args...)
	if r.code != 0 {
		t.Fatalf("recover namespace %s: want exit status 0:\n%s", ns, r)
	}
	for _, o := range recovered {
		if !strings.Contains(r.stdout, "written: "+o.key+" (create)") {
			t.Errorf("recover does not report %s written:\n%s", o.key, r)
		}
	}
	if !strings.Contains(r.stdout, "summary: 11 written") {
		t.Errorf("recover: want a summary of 11 objects written:\n%s", r)
	}
	if strings.Contains(r.stdout+r.stderr, "s3cr3t-shop-password") {
		t.Errorf("recover printed the secret's value:\n%s", r)
	}

	eventually(t, "namespace "+ns+" Active", func() error {
		got, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != corev1.NamespaceActive || got.DeletionTimestamp != nil {
			return fmt.Errorf("phase %s, deletionTimestamp %v", got.Status.Phase, got.DeletionTimestamp)
		}
		return nil
	})
	for _, o := range recovered {
		var got *unstructured.Unstructured
		eventually(t, "the apiserver serves "+o.String(), func() error {
			got, err = get(o)
			return err
		})
		stored := c.etcdGet(t, o.key)
		if got.GetResourceVersion() != fmt.Sprint(stored.ModRevision) {
			t.Errorf("%s: served resourceVersion %s, etcd holds mod revision %d", o, got.GetResourceVersion(), stored.ModRevision)
		}
		want := before[o.String()].DeepCopy()
		if got.GetUID() != want.GetUID() {
			t.Errorf("%s: recovered uid %s, want the original %s", o, got.GetUID(), want.GetUID())
		}
		// Everything but the resourceVersion is what the apiserver
		// served before the deletion.
		cmpGot := got.DeepCopy()
		unstructured.RemoveNestedField(cmpGot.Object, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(want.Object, "metadata", "resourceVersion")
		if diff := cmp.Diff(want.Object, cmpGot.Object); diff != "" {
			t.Errorf("%s: served after the recovery differs from before the deletion (-before +after):\n%s", o, diff)
		}
	}
	if _, err := get(event); !apierrors.IsNotFound(err) {
		t.Errorf("event %s after the recovery: %v, want NotFound (events are not recovered)", event.name, err)
	}
	if strings.Contains(r.stdout, "written: "+event.key) {
		t.Errorf("recover wrote the event:\n%s", r)
	}
	if got := c.etcdGet(t, "/registry/namespaces/"+later); got.ModRevision != laterNS.ModRevision {
		t.Errorf("namespace %s, created after the snapshot, was rewritten (revision %d → %d)", later, laterNS.ModRevision, got.ModRevision)
	}
	if got := c.etcdGet(t, "/registry/configmaps/"+later+"/later-config"); got.ModRevision != laterCM.ModRevision {
		t.Errorf("configmap later-config in namespace %s was rewritten (revision %d → %d)", later, laterCM.ModRevision, got.ModRevision)
	}
	if got, err := core.Namespaces().Get(ctx, later, metav1.GetOptions{}); err != nil || got.Status.Phase != corev1.NamespaceActive {
		t.Errorf("namespace %s after the recovery: %v (phase %v), want Active", later, err, got.Status.Phase)
	}

	// Stored encrypted with the first provider of its resource.
	for _, chk := range []struct{ key, prefix, clear string }{
		{recovered[2].key, aescbcPrefix, "s3cr3t-shop-password"},
		{recovered[3].key, aesgcmPrefix, "replicas: 3"},
		{recovered[6].key, secretboxPrefix, "local-disks"},
	} {
		kv := c.etcdGet(t, chk.key)
		if p := storedPrefix(kv.Value); p != chk.prefix {
			t.Errorf("%s is stored as %s after the recovery, want %s", chk.key, p, chk.prefix)
		}
		if strings.Contains(string(kv.Value), chk.clear) {
			t.Errorf("%s is stored with %q in clear text", chk.key, chk.clear)
		}
	}

	// A second run finds every object identical and writes nothing.
	// (etcd's revision moves on by itself: the apiserver renews its
	// identity lease; each key's mod revision must not.)
	modRevs := map[string]int64{}
	for _, o := range recovered {
		modRevs[o.key] = c.etcdGet(t, o.key).ModRevision
	}
	r = c.etcdpvc(t, args...)
	if r.code != 0 {
		t.Fatalf("recover namespace %s again: want exit status 0:\n%s", ns, r)
	}
	if !strings.Contains(r.stdout, "plan: 0 to create, 0 to replace") || !strings.Contains(r.stdout, "11 exists-identical") ||
		!strings.Contains(r.stdout, "nothing to do: every object is skipped or exists") || strings.Contains(r.stdout, "written: ") {
		t.Errorf("a second recover: want 0 to create, 11 exists-identical, nothing to do:\n%s", r)
	}
	for _, o := range recovered {
		if !hasPlanRow(r.stdout, "exists-identical", o.name) {
			t.Errorf("a second recover does not report %s exists-identical:\n%s", o, r)
		}
	}
	for _, o := range recovered {
		if now := c.etcdGet(t, o.key).ModRevision; now != modRevs[o.key] {
			t.Errorf("a second recover rewrote %s: mod revision %d → %d", o.key, modRevs[o.key], now)
		}
	}

	// Each recovered object takes a real update through the API.
	for _, o := range recovered {
		eventually(t, "an API update of "+o.String(), func() error {
			got, err := get(o)
			if err != nil {
				return err
			}
			l := got.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			l["recovered"] = "yes"
			got.SetLabels(l)
			upd, err := update(o, got)
			if err != nil {
				return err
			}
			if upd.GetLabels()["recovered"] != "yes" || upd.GetResourceVersion() == got.GetResourceVersion() {
				return fmt.Errorf("the update was not applied: labels %v, resourceVersion %s", upd.GetLabels(), upd.GetResourceVersion())
			}
			return nil
		})
	}
	if p := storedPrefix(c.etcdGet(t, recovered[2].key).Value); p != aescbcPrefix {
		t.Errorf("the secret is stored as %s after an API update, want %s", p, aescbcPrefix)
	}
}

// deleteNamespaceKeys deletes from etcd the namespace ns and every key of
// an object in it, as the namespace controller would, and returns how many
// keys it deleted.
func deleteNamespaceKeys(t *testing.T, c *Cluster, ns string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Etcd.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("list etcd keys: %v", err)
	}
	n := 0
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		parts := strings.Split(key, "/")
		if key != "/registry/namespaces/"+ns && (len(parts) < 5 || parts[len(parts)-2] != ns) {
			continue
		}
		if _, err := c.Etcd.Delete(ctx, key); err != nil {
			t.Fatalf("etcd delete %s: %v", key, err)
		}
		n++
	}
	return n
}

// hasPlanRow reports whether a plan table row has action and name.
func hasPlanRow(out, action, name string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == action && f[3] == name {
			return true
		}
	}
	return false
}
