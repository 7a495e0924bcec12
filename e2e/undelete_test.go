package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

const pvcProtection = "kubernetes.io/pvc-protection"

func newPVC(name, storageClass, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &storageClass,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			},
		},
	}
}

// terminatingPVC creates a PVC and deletes it through the API. With no
// controller-manager running, its kubernetes.io/pvc-protection finalizer
// is never removed and it stays Terminating: the incident etcdpvc exists
// for.
func terminatingPVC(t *testing.T, c *Cluster, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	ctx := context.Background()
	pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)
	created, err := pvcs.Create(ctx, newPVC(name, "local-disks", "5Gi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pvc %s/%s: %v", ns, name, err)
	}
	if !slices.Contains(created.Finalizers, pvcProtection) {
		t.Fatalf("the StorageObjectInUseProtection admission plugin did not add %s: finalizers %v", pvcProtection, created.Finalizers)
	}
	if err := pvcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pvc %s/%s: %v", ns, name, err)
	}
	got, err := pvcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pvc %s/%s after delete: %v", ns, name, err)
	}
	if got.DeletionTimestamp == nil {
		t.Fatalf("pvc %s/%s is not Terminating after delete: %+v", ns, name, got.ObjectMeta)
	}
	return got
}

// TestUndeleteTerminatingPVC is the tool's reason to exist: a PVC stuck
// Terminating is taken out of it in etcd, the apiserver and its watchers
// see an ordinary update, and restore puts the original bytes back.
func TestUndeleteTerminatingPVC(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	ctx := context.Background()
	const ns, name = "demo", "www-web-0"
	key := "/registry/persistentvolumeclaims/" + ns + "/" + name
	pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)

	terminating := terminatingPVC(t, c, ns, name)
	orig := c.etcdGet(t, key)
	if got := strconv.FormatInt(orig.ModRevision, 10); got != terminating.ResourceVersion {
		t.Fatalf("the apiserver serves resourceVersion %s, etcd holds mod revision %s", terminating.ResourceVersion, got)
	}
	c.capture(t, "plain", "terminating", orig)

	w, err := pvcs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: terminating.ResourceVersion})
	if err != nil {
		t.Fatalf("watch pvc: %v", err)
	}
	defer w.Stop()

	backups := t.TempDir()
	r := c.mustEtcdpvc(t, "undelete", "pvc", name, "-n", ns, "--yes", "--backup-dir", backups)
	backup := backupPath(t, r)

	ev := nextEvent(t, w, "watch after undelete")
	if ev.Type != watch.Modified {
		t.Fatalf("watch after undelete: got a %s event, want MODIFIED: %+v", ev.Type, ev.Object)
	}
	seen := ev.Object.(*corev1.PersistentVolumeClaim)
	if seen.DeletionTimestamp != nil {
		t.Errorf("the watch's MODIFIED event still has deletionTimestamp %v", seen.DeletionTimestamp)
	}

	stored := c.etcdGet(t, key)
	if p := storedPrefix(stored.Value); p != "k8s\\x00 (protobuf)" {
		t.Errorf("undelete stored a value starting %s, want the protobuf envelope", p)
	}
	var got *corev1.PersistentVolumeClaim
	eventually(t, "the apiserver serves the undeleted pvc", func() error {
		got, err = pvcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.ResourceVersion != strconv.FormatInt(stored.ModRevision, 10) {
			return fmt.Errorf("resourceVersion %s, want etcd's mod revision %d", got.ResourceVersion, stored.ModRevision)
		}
		return nil
	})
	checks := []struct {
		what string
		ok   bool
	}{
		{"deletionTimestamp is gone", got.DeletionTimestamp == nil},
		{"deletionGracePeriodSeconds is gone", got.DeletionGracePeriodSeconds == nil},
		{"finalizers are exactly [" + pvcProtection + "]", slices.Equal(got.Finalizers, []string{pvcProtection})},
		{"resourceVersion advanced", rv(t, got.ResourceVersion) > rv(t, terminating.ResourceVersion)},
		{"the watch event carries the new resourceVersion", seen.ResourceVersion == got.ResourceVersion},
		{"uid is kept", got.UID == terminating.UID},
		{"the spec is unchanged", equalJSON(got.Spec, terminating.Spec)},
		{"labels are unchanged", equalJSON(got.Labels, terminating.Labels)},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("after undelete, as the apiserver serves it: want %s\nserved: %s", ch.what, mustJSON(got))
		}
	}
	c.capture(t, "plain", "undeleted", stored)

	// restore puts the original bytes back; the object is Terminating again.
	c.mustEtcdpvc(t, "restore", backup, "--yes", "--backup-dir", backups)
	ev = nextEvent(t, w, "watch after restore")
	if ev.Type != watch.Modified {
		t.Fatalf("watch after restore: got a %s event, want MODIFIED", ev.Type)
	}
	if dt := ev.Object.(*corev1.PersistentVolumeClaim).DeletionTimestamp; dt == nil || !dt.Equal(terminating.DeletionTimestamp) {
		t.Errorf("after restore the watch saw deletionTimestamp %v, want %v", dt, terminating.DeletionTimestamp)
	}
	restored := c.etcdGet(t, key)
	if !bytes.Equal(restored.Value, orig.Value) {
		t.Errorf("after restore etcd holds %d bytes that differ from the original %d bytes", len(restored.Value), len(orig.Value))
	}
	if raw := c.mustEtcdpvc(t, "get", "pvc", name, "-n", ns, "-o", "raw"); raw.stdout != string(orig.Value) {
		t.Errorf("etcdpvc get -o raw after restore: %d bytes that differ from the original %d bytes", len(raw.stdout), len(orig.Value))
	}
	if v := etcdctlGet(t, c, key); !bytes.Equal(v, orig.Value) {
		t.Errorf("etcdctl get after restore: %d bytes that differ from the original %d bytes", len(v), len(orig.Value))
	}
	eventually(t, "the apiserver serves the restored pvc", func() error {
		got, err := pvcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.ResourceVersion != strconv.FormatInt(restored.ModRevision, 10) {
			return fmt.Errorf("resourceVersion %s, want %d", got.ResourceVersion, restored.ModRevision)
		}
		if got.DeletionTimestamp == nil || !got.DeletionTimestamp.Equal(terminating.DeletionTimestamp) {
			return fmt.Errorf("deletionTimestamp %v, want %v", got.DeletionTimestamp, terminating.DeletionTimestamp)
		}
		return nil
	})
}

func equalJSON(a, b any) bool {
	return bytes.Equal(mustJSON(a), mustJSON(b))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
