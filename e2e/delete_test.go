package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDeleteUnreadable: a value the apiserver cannot decode breaks every
// LIST of its resource in its namespace, and kubectl cannot delete it;
// etcdpvc delete removes it, and the apiserver's LIST succeeds again
// ("verified"). An object the apiserver reads is left to kubectl.
func TestDeleteUnreadable(t *testing.T) {
	c := sharedCluster(t)
	const ns = "delete-unreadable"
	c.EnsureNamespace(t, ns)
	kc := c.writeKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A readable ConfigMap beside it, through the apiserver.
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fine"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := "/registry/configmaps/" + ns + "/broken"
	if _, err := c.Etcd.Put(ctx, key, "\x00\x01 not a stored object"); err != nil {
		t.Fatal(err)
	}
	// The LIST fails while it is there (the watch cache may take a moment
	// to see it).
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the list of configmaps succeeds with an undecodable value in etcd: nothing to test")
		}
		time.Sleep(200 * time.Millisecond)
	}

	r := c.etcdpvc(t, "--kubeconfig", kc, "--verify=always", "delete", "cm", "broken", "-n", ns, "--yes", "--backup-dir", t.TempDir())
	if r.code != 0 {
		t.Fatalf("want exit status 0:\n%s", r)
	}
	if !strings.Contains(r.stdout, "verified: the list of configmaps in namespace "+ns+" succeeds") {
		t.Errorf("the delete is not verified by a list:\n%s", r)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the list of configmaps still fails after the delete: %v", err)
	}

	r = c.etcdpvc(t, "--kubeconfig", kc, "delete", "cm", "fine", "-n", ns, "--yes", "--backup-dir", t.TempDir())
	if r.code != 5 || !strings.Contains(r.stderr, "kubectl delete configmaps fine -n "+ns) {
		t.Errorf("a readable object: want exit status 5 naming kubectl delete:\n%s", r)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "fine", metav1.GetOptions{}); err != nil {
		t.Errorf("the refused delete deleted it: %v", err)
	}
}

// TestDeleteAllUnreadable: several values the apiserver cannot read, in two
// namespaces and two resources, among readable objects: one scan finds them,
// each is backed up and deleted, and the LIST of each resource in each
// namespace is checked once, after its last such value is gone, and
// succeeds. The readable objects are untouched; a second run finds nothing.
func TestDeleteAllUnreadable(t *testing.T) {
	c := sharedCluster(t)
	nss := []string{"unreadable-a", "unreadable-b"}
	kc := c.writeKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, ns := range nss {
		c.EnsureNamespace(t, ns)
		if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fine"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"/registry/configmaps/" + ns + "/broken-1", "/registry/configmaps/" + ns + "/broken-2", "/registry/secrets/" + ns + "/broken"} {
			if _, err := c.Etcd.Put(ctx, k, "\x00\x01 not a stored object"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The lists fail while they are there.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err1 := c.Client.CoreV1().ConfigMaps(nss[1]).List(ctx, metav1.ListOptions{})
		_, err2 := c.Client.CoreV1().Secrets(nss[1]).List(ctx, metav1.ListOptions{})
		if err1 != nil && err2 != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lists succeed with undecodable values in etcd: nothing to test")
		}
		time.Sleep(200 * time.Millisecond)
	}

	backups := t.TempDir()
	var out strings.Builder
	for _, ns := range nss {
		r := c.etcdpvc(t, "--kubeconfig", kc, "--verify=always", "delete", "--all-unreadable", "-n", ns, "--yes", "--backup-dir", backups)
		if r.code != 0 {
			t.Fatalf("want exit status 0:\n%s", r)
		}
		if n := strings.Count(r.stdout, "\ndeleted: "); n != 3 {
			t.Errorf("%s: %d deleted, want 3:\n%s", ns, n, r)
		}
		for _, want := range []string{"verified: the list of configmaps in namespace " + ns + " succeeds", "verified: the list of secrets in namespace " + ns + " succeeds"} {
			if strings.Count(r.stdout, want) != 1 {
				t.Errorf("want %q once:\n%s", want, r)
			}
		}
		out.WriteString(r.stdout)
		if _, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "fine", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: the readable config map is gone: %v", ns, err)
		}
	}
	if strings.Contains(out.String(), "still fails") {
		t.Errorf("a list was checked before the last value of its namespace was gone:\n%s", out.String())
	}
	// (Not -A: the cluster is shared with other tests.)
	r := c.etcdpvc(t, "--kubeconfig", kc, "delete", "--all-unreadable", "-n", nss[0], "--yes", "--backup-dir", backups)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to do: the apiserver can read every one of the 1 object of every resource in namespace "+nss[0]) {
		t.Errorf("a second run: want nothing to do:\n%s", r)
	}
}
