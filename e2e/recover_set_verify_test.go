package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// TestRecoverSetVerified holds namespace recovery to the rules of single
// writes, against the real apiserver. A namespace is snapshotted, then
// deleted through the API, which leaves it Terminating (no namespace
// controller runs here): recover namespace into it is refused, and so is
// a single recover, whose server-side dry-run create the apiserver
// rejects ("being terminated"). Once its keys are gone, --verify=always
// refuses (its objects cannot be checked before the namespace exists) and
// --verify=auto writes and verifies every object after its write, with a
// summary: a custom resource whose CustomResourceDefinition is recovered
// with it included.
func TestRecoverSetVerified(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	const ns = "setverify"
	kc := c.writeKubeconfig(t)
	core := c.Client.CoreV1()
	c.EnsureNamespace(t, ns)
	if _, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "setverify-config"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "setverify-secret"},
		Data: map[string][]byte{"p": []byte("s3cr3t")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A custom resource whose CustomResourceDefinition goes too: it is
	// recovered with it, and verified once the apiserver serves the kind.
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := widgetsCRD()
	crd.SetName("gadgets.setverify.example.com")
	_ = unstructured.SetNestedField(crd.Object, "setverify.example.com", "spec", "group")
	_ = unstructured.SetNestedStringMap(crd.Object, map[string]string{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"}, "spec", "names")
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create customresourcedefinition: %v", err)
	}
	gadgets := schema.GroupVersionResource{Group: "setverify.example.com", Version: "v1", Resource: "gadgets"}
	gadget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "setverify.example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g1"}, "spec": map[string]any{"size": int64(1)},
	}}
	eventually(t, "create gadget g1 (the CRD becomes Established)", func() error {
		_, err := dyn.Resource(gadgets).Namespace(ns).Create(ctx, gadget, metav1.CreateOptions{})
		return err
	})
	snap := t.TempDir() + "/before.db"
	runTool(t, suite.etcdctl, "--endpoints", c.EtcdURL, "snapshot", "save", snap)

	// Deleted through the API: Terminating for good here. The configmap
	// is deleted too (as the namespace controller would).
	if err := core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := core.ConfigMaps(ns).Delete(ctx, "setverify-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	const cmKey = "/registry/configmaps/" + ns + "/setverify-config"
	absent := func(t *testing.T, key string) {
		t.Helper()
		resp, err := c.Etcd.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 0 {
			t.Errorf("%s was written (revision %d)", key, resp.Kvs[0].ModRevision)
		}
	}

	t.Run("into a terminating namespace: refused", func(t *testing.T) {
		for _, args := range [][]string{
			{"--db", snap, "--kubeconfig", kc, "recover", "namespace", ns, "--yes", "--backup-dir", t.TempDir()},
			{"--db", snap, "--kubeconfig", kc, "recover", "cm", "--all", "-n", ns, "--yes", "--backup-dir", t.TempDir()},
		} {
			r := c.etcdpvc(t, args...)
			if r.code != 5 || !strings.Contains(r.stderr, "the namespace is Terminating in the live cluster") || !strings.Contains(r.stderr, "etcdpvc undelete namespace "+ns) {
				t.Errorf("want exit status 5, the namespace Terminating and the way out:\n%s", r)
			}
			absent(t, cmKey)
		}
	})

	t.Run("single recover rejected by the server-side dry run", func(t *testing.T) {
		r := c.etcdpvc(t, "--kubeconfig", kc, "recover", "cm", "setverify-config", "-n", ns, "--yes", "--backup-dir", t.TempDir())
		if r.code != 5 || !strings.Contains(r.stderr, "the apiserver rejects the edited object") || !strings.Contains(r.stderr, "being terminated") {
			t.Errorf("want exit status 5 with the apiserver's message:\n%s", r)
		}
		absent(t, cmKey)
	})

	// The namespace controller's work, done by hand: every key gone;
	// and the CustomResourceDefinition too.
	deleteNamespaceKeys(t, c, ns)
	if _, err := c.Etcd.Delete(ctx, "/registry/apiextensions.k8s.io/customresourcedefinitions/gadgets.setverify.example.com"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "namespace "+ns+" and gadgets gone", func() error {
		if _, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get namespace %s: %v, want NotFound", ns, err)
		}
		if _, err := crds.Get(ctx, "gadgets.setverify.example.com", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get customresourcedefinition: %v, want NotFound", err)
		}
		return nil
	})

	t.Run("always: refused, the objects cannot be checked before their namespace exists", func(t *testing.T) {
		r := c.etcdpvc(t, "--db", snap, "--kubeconfig", kc, "--verify=always", "recover", "namespace", ns, "--exclude", "gadgets.setverify.example.com", "--yes", "--backup-dir", t.TempDir())
		if r.code != 5 || !strings.Contains(r.stderr, "cannot verify the write with the apiserver") || !strings.Contains(r.stderr, "recover the namespace object first") {
			t.Errorf("want exit status 5 and the way out:\n%s", r)
		}
		absent(t, "/registry/namespaces/"+ns)
	})

	t.Run("always: refused, a CustomResourceDefinition stored as v1beta1 cannot be sent for a dry run", func(t *testing.T) {
		r := c.etcdpvc(t, "--db", snap, "--kubeconfig", kc, "--verify=always", "recover", "namespace", ns, "--yes", "--backup-dir", t.TempDir())
		if r.code != 5 || !strings.Contains(r.stderr, "a version the apiserver does not serve") || !strings.Contains(r.stderr, "hint: the apiserver answers but cannot check this object") {
			t.Errorf("want exit status 5 and what to do:\n%s", r)
		}
		absent(t, "/registry/namespaces/"+ns)
	})

	t.Run("auto: every object verified after its write", func(t *testing.T) {
		r := c.etcdpvc(t, "--db", snap, "--kubeconfig", kc, "recover", "namespace", ns, "--yes", "--backup-dir", t.TempDir())
		if r.code != 0 {
			t.Fatalf("want exit status 0:\n%s", r)
		}
		for _, key := range []string{"/registry/namespaces/" + ns, cmKey, "/registry/secrets/" + ns + "/setverify-secret",
			"/registry/apiextensions.k8s.io/customresourcedefinitions/gadgets.setverify.example.com", "/registry/setverify.example.com/gadgets/" + ns + "/g1"} {
			rev := c.etcdGet(t, key).ModRevision
			if want := regexp.MustCompile(fmt.Sprintf(`(?m)^verified: the apiserver serves .* at revision %d and accepts updates$`, rev)); !want.MatchString(r.stdout) {
				t.Errorf("%s: want %q in the output:\n%s", key, want, r)
			}
		}
		if want := "verification: 5 verified, 0 not verified, 0 not accepted by the apiserver"; !strings.Contains(r.stdout, want) {
			t.Errorf("want %q in the output:\n%s", want, r)
		}
		if !strings.Contains(r.stdout, "validated: the apiserver accepts namespace "+ns) {
			t.Errorf("the namespace was not validated before the write:\n%s", r)
		}
	})
}

// TestDemoIgnoresKubeconfig runs the demo with $KUBECONFIG naming a real
// apiserver of another cluster: the demo's etcd has no apiserver, so it
// does not verify against that one (which serves none of its objects)
// and says why, once.
func TestDemoIgnoresKubeconfig(t *testing.T) {
	c := sharedCluster(t)
	kc := c.writeKubeconfig(t)
	r := runEtcdpvc(t, []string{"KUBECONFIG=" + kc, "TMPDIR=" + t.TempDir()}, "demo")
	if r.code != 0 {
		t.Fatalf("want exit status 0:\n%s", r)
	}
	if n := strings.Count(r.stdout, "$KUBECONFIG, if set, names another cluster and is not used"); n != 1 {
		t.Errorf("the demo says %d times why verification is skipped, want once:\n%s", n, r)
	}
	if strings.Contains(r.stdout, "verified: the apiserver") || strings.Contains(r.stdout, c.APIServerURL) {
		t.Errorf("the demo asked the apiserver of $KUBECONFIG:\n%s", r)
	}
}
