package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUndeleteTerminatingNamespace: a namespace deleted through the API
// stays Terminating (no controller-manager empties it), and the apiserver
// refuses new objects in it. After etcdpvc undelete it is Active and takes
// new objects again.
func TestUndeleteTerminatingNamespace(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	const ns = "stuck-ns"
	c.EnsureNamespace(t, ns)
	nss := c.Client.CoreV1().Namespaces()
	if err := nss.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	got, err := nss.Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace: %v", err)
	}
	if got.DeletionTimestamp == nil || got.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("namespace not Terminating after delete: %+v %+v", got.ObjectMeta, got.Status)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "being terminated") {
		t.Fatalf("create in a Terminating namespace: %v, want refused", err)
	}

	c.mustEtcdpvc(t, "undelete", "ns", ns, "--yes")

	eventually(t, "namespace Active", func() error {
		got, err := nss.Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.DeletionTimestamp != nil || got.Status.Phase != corev1.NamespaceActive {
			return fmt.Errorf("namespace %+v %+v", got.ObjectMeta.DeletionTimestamp, got.Status)
		}
		return nil
	})
	eventually(t, "create in the namespace", func() error {
		_, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})

	// Deleting it again, then removing its finalizers with etcdpvc, lets
	// the apiserver finish the deletion on the next update: the classic
	// stuck-namespace fix, done without the /finalize subresource.
	if err := c.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "probe", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace again: %v", err)
	}
	c.mustEtcdpvc(t, "finalizers", "ns", ns, "--remove", "kubernetes", "--yes")
	got, err = nss.Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace: %v", err)
	}
	if len(got.Spec.Finalizers) != 0 {
		t.Fatalf("spec.finalizers = %v after etcdpvc finalizers --remove kubernetes", got.Spec.Finalizers)
	}
}
