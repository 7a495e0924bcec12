package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestRecoverDeletedConfigMap deletes a ConfigMap through the API and
// recreates it with `etcdpvc recover` from etcd's history, which the
// apiserver does not compact in this suite (--etcd-compaction-interval=0).
func TestRecoverDeletedConfigMap(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	const ns = "demo"
	v1 := map[string]string{"mode": "v1", "settings.yaml": "replicas: 3\n"}
	v2 := map[string]string{"mode": "v2", "settings.yaml": "replicas: 5\n", "extra": "yes"}

	tests := []struct {
		name string
		// rev selects the revision to recover: "" for recover's default
		// (the last live one), "first" for the revision created.
		rev  string
		want map[string]string
	}{
		{name: "settings-latest", want: v2},
		{name: "settings-first", rev: "first", want: v1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cms := c.Client.CoreV1().ConfigMaps(ns)
			created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Labels: map[string]string{"app": "web"}}, Data: v1}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create configmap: %v", err)
			}
			created.Data = v2
			if _, err := cms.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("update configmap: %v", err)
			}
			if err := cms.Delete(ctx, tc.name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete configmap: %v", err)
			}
			list, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list configmaps: %v", err)
			}
			for _, cm := range list.Items {
				if cm.Name == tc.name {
					t.Fatalf("configmap %s still listed after delete", tc.name)
				}
			}
			w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + tc.name, ResourceVersion: list.ResourceVersion})
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer w.Stop()

			args := []string{"recover", "configmap", tc.name, "-n", ns, "--yes", "--backup-dir", t.TempDir()}
			if tc.rev == "first" {
				args = append(args, "--rev", created.ResourceVersion)
			}
			r := c.etcdpvc(t, args...)
			if r.code != 0 {
				hint := ""
				if strings.Contains(r.stderr, "No help topic for 'recover'") || strings.Contains(r.stderr, "recover") && r.code == 2 {
					hint = "\n(this etcdpvc build may not have the recover command yet: it is documented as `etcdpvc recover RESOURCE NAME [-n NS] [--rev N] --yes`)"
				}
				t.Fatalf("want exit status 0:\n%s%s", r, hint)
			}

			ev := nextEvent(t, w, "watch after recover")
			if ev.Type != watch.Added {
				t.Fatalf("watch after recover: got a %s event, want ADDED", ev.Type)
			}
			key := "/registry/configmaps/" + ns + "/" + tc.name
			stored := c.etcdGet(t, key)
			var got *corev1.ConfigMap
			eventually(t, "the apiserver serves the recovered configmap", func() error {
				got, err = cms.Get(ctx, tc.name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("not found")
				}
				return err
			})
			if diff := cmp.Diff(tc.want, got.Data); diff != "" {
				t.Errorf("recovered data (-want +served):\n%s", diff)
			}
			if got.UID != created.UID {
				t.Errorf("recovered uid %s, want the original %s", got.UID, created.UID)
			}
			if got.ResourceVersion != fmt.Sprint(stored.ModRevision) {
				t.Errorf("served resourceVersion %s, etcd holds mod revision %d", got.ResourceVersion, stored.ModRevision)
			}
			if got.DeletionTimestamp != nil {
				t.Errorf("the recovered configmap is being deleted: %v", got.DeletionTimestamp)
			}
			c.capture(t, "plain", "recovered", stored)
			// The recreated object is valid: the API can update it.
			got.Data["touched"] = "by-api"
			if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Errorf("an API Update of the recovered configmap failed: %v", err)
			}
		})
	}
}

// TestRecoverDeletedPVC recreates a PVC that was deleted for good (its
// finalizer removed through the API, as the controller does once no pod
// uses it). recover takes the last live revision, which was already
// Terminating, and clears the deletion, so the claim comes back live and
// still protected.
func TestRecoverDeletedPVC(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	ctx := context.Background()
	const ns, name = "demo", "lost-web-0"
	pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)
	terminating := terminatingPVC(t, c, ns, name)
	terminating.Finalizers = nil
	if _, err := pvcs.Update(ctx, terminating, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("remove the finalizer through the API: %v", err)
	}
	list, err := pvcs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.Name == name {
			t.Fatalf("pvc %s still listed after its last finalizer was removed", name)
		}
	}
	w, err := pvcs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	r := c.mustEtcdpvc(t, "recover", "pvc", name, "-n", ns, "--yes", "--backup-dir", t.TempDir())
	if !strings.Contains(r.stderr, "was already being deleted") {
		t.Errorf("no warning that the revision recovered was Terminating:\n%s", r)
	}
	if ev := nextEvent(t, w, "watch after recover"); ev.Type != watch.Added {
		t.Fatalf("watch after recover: got %s, want ADDED", ev.Type)
	}
	stored := c.etcdGet(t, "/registry/persistentvolumeclaims/"+ns+"/"+name)
	var got *corev1.PersistentVolumeClaim
	eventually(t, "the apiserver serves the recovered pvc", func() error {
		got, err = pvcs.Get(ctx, name, metav1.GetOptions{})
		return err
	})
	checks := []struct {
		what string
		ok   bool
	}{
		{"not Terminating", got.DeletionTimestamp == nil && got.DeletionGracePeriodSeconds == nil},
		{"finalizers [" + pvcProtection + "]", len(got.Finalizers) == 1 && got.Finalizers[0] == pvcProtection},
		{"the original uid", got.UID == terminating.UID},
		{"the original spec", equalJSON(got.Spec, terminating.Spec)},
		{"etcd's mod revision as resourceVersion", got.ResourceVersion == fmt.Sprint(stored.ModRevision)},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("recovered pvc: want %s\nserved: %s", ch.what, mustJSON(got))
		}
	}
	c.capture(t, "plain", "recovered", stored)
	got.Labels["touched"] = "by-api"
	if _, err := pvcs.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an API Update of the recovered pvc failed: %v", err)
	}
}
