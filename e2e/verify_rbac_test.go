package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeTokenKubeconfig writes a kubeconfig for c's apiserver that
// authenticates with token, and returns its path.
func (c *Cluster) writeTokenKubeconfig(t *testing.T, name, token string) string {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: %s}
current-context: e2e
`, c.APIServerURL, base64.StdEncoding.EncodeToString(c.pki.caPEM), name, token, name)
	p := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// limitedKubeconfig creates a ServiceAccount in ns allowed verbs on
// configmaps in ns (and to get namespaces, which the check that the
// apiserver serves the etcd written needs), and returns a kubeconfig
// with a token of it.
func limitedKubeconfig(t *testing.T, c *Cluster, ns, name string, verbs ...string) string {
	t.Helper()
	ctx := context.Background()
	core, rbac := c.Client.CoreV1(), c.Client.RbacV1()
	ok := func(what string, err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-get-namespaces"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
	ok("clusterrole e2e-get-namespaces", err)
	_, err = core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	ok("serviceaccount "+name, err)
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}
	_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-get-namespaces-" + ns + "-" + name},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "e2e-get-namespaces"}, Subjects: subject}, metav1.CreateOptions{})
	ok("clusterrolebinding", err)
	if len(verbs) > 0 {
		_, err = rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}, metav1.CreateOptions{})
		ok("role "+name, err)
		_, err = rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}, Subjects: subject}, metav1.CreateOptions{})
		ok("rolebinding "+name, err)
	}
	tr, err := core.ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of serviceaccount %s: %v", name, err)
	}
	return c.writeTokenKubeconfig(t, name, tr.Status.Token)
}

// TestVerifyWithLimitedCredentials checks that a permission the
// kubeconfig's user lacks is "not verified", never "the apiserver rejects
// it": a user who may read a configmap but not update it (or not even
// read it) gets exit status 0 and "not verified" under --verify=auto for
// a write that is fine; under --verify=always the write is refused before
// it is made (exit 5), also when only the check after it would be
// forbidden.
func TestVerifyWithLimitedCredentials(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	const ns = "verify-rbac"
	c.EnsureNamespace(t, ns)
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rbac-config"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	const key = "/registry/configmaps/" + ns + "/rbac-config"
	reader := limitedKubeconfig(t, c, ns, "cm-reader", "get", "list", "watch")
	nothing := limitedKubeconfig(t, c, ns, "cm-nothing")
	creator := limitedKubeconfig(t, c, ns, "cm-creator", "get", "create")

	label := func(t *testing.T, kc, mode, value string) result {
		t.Helper()
		return c.etcdpvc(t, "--kubeconfig", kc, "--verify", mode, "label", "cm", "rbac-config", "-n", ns, "e2e-rbac="+value, "--overwrite", "--yes", "--backup-dir", t.TempDir())
	}
	notRejected := func(t *testing.T, r result) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("want exit status 0 (a permission error is not a rejection):\n%s", r)
		}
		if strings.Contains(r.stdout+r.stderr, "rejects") || strings.Contains(r.stdout, "verified: the apiserver serves") {
			t.Errorf("a write that could not be checked is reported rejected or verified:\n%s", r)
		}
	}

	t.Run("may read but not update: not verified, exit 0", func(t *testing.T) {
		r := label(t, reader, "auto", "reader")
		notRejected(t, r)
		for _, want := range []string{
			"not validated before the write (it is checked after it): configmap rbac-config in namespace verify-rbac: the kubeconfig's user may not create configmaps",
			"not verified: configmap rbac-config in namespace verify-rbac: the kubeconfig's user may not update it",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("want %q in the output:\n%s", want, r)
			}
		}
		if got := c.etcdGet(t, key); !strings.Contains(string(got.Value), "reader") {
			t.Errorf("the label was not written:\n%s", r)
		}
	})

	t.Run("may not even get: not verified, exit 0", func(t *testing.T) {
		r := label(t, nothing, "auto", "nothing")
		notRejected(t, r)
		if want := "not verified: configmap rbac-config in namespace verify-rbac: the kubeconfig's user may not get it"; !strings.Contains(r.stdout, want) {
			t.Errorf("want %q in the output:\n%s", want, r)
		}
	})

	for _, tc := range []struct{ name, kc, why string }{
		{"always, may not create: refused before the write", reader, "the kubeconfig's user may not create configmaps"},
		{"always, may not update: refused before the write", creator, "the kubeconfig's user may not update configmaps in namespace verify-rbac, so the write could not be verified after it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.etcdGet(t, key).ModRevision
			r := label(t, tc.kc, "always", "always")
			if r.code != 5 {
				t.Fatalf("want exit status 5:\n%s", r)
			}
			if !strings.Contains(r.stderr, tc.why) || !strings.Contains(r.stderr, "nothing written") {
				t.Errorf("want %q and \"nothing written\" in the error:\n%s", tc.why, r)
			}
			if after := c.etcdGet(t, key).ModRevision; after != before {
				t.Errorf("the key moved from revision %d to %d: a refused write was made", before, after)
			}
		})
	}
}
