package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeKubeconfig writes a kubeconfig for c's apiserver (its CA and the
// admin token) and returns its path.
func (c *Cluster) writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
`, c.APIServerURL, base64.StdEncoding.EncodeToString(c.pki.caPEM), c.token)
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// verifiedAt checks that r reports the write verified at the key's mod
// revision in etcd.
func verifiedAt(t *testing.T, c *Cluster, r result, key string) {
	t.Helper()
	if !strings.Contains(r.stdout, "validated: the apiserver accepts") {
		t.Errorf("no pre-write validation reported:\n%s", r)
	}
	rev := c.etcdGet(t, key).ModRevision
	want := regexp.MustCompile(fmt.Sprintf(`verified: the apiserver serves .* at revision %d and accepts updates`, rev))
	if !want.MatchString(r.stdout) {
		t.Errorf("want %q in the output:\n%s", want, r)
	}
}

// TestVerifyWithTheAPIServer checks writes with the apiserver as the
// oracle: an undelete and immutable-field changes are verified after the
// write; a StatefulSet patched to replicas -1 is refused before the write
// with the apiserver's own validation message, and nothing is written.
func TestVerifyWithTheAPIServer(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	const ns = "demo"
	ctx := context.Background()
	kc := c.writeKubeconfig(t)

	t.Run("doctor reports the apiserver usable", func(t *testing.T) {
		r := c.etcdpvc(t, "--kubeconfig", kc, "doctor")
		if !regexp.MustCompile(`OK +apiserver +https://127\.0\.0\.1:\d+ answers for this cluster; writes will be verified`).MatchString(r.stdout) {
			t.Errorf("doctor does not report the apiserver usable:\n%s", r)
		}
	})

	t.Run("undelete terminating pvc verified", func(t *testing.T) {
		terminatingPVC(t, c, ns, "verify-stuck")
		key := "/registry/persistentvolumeclaims/demo/verify-stuck"
		r := c.etcdpvc(t, "--kubeconfig", kc, "undelete", "pvc", "verify-stuck", "-n", ns, "--yes", "--backup-dir", t.TempDir())
		if r.code != 0 {
			t.Fatalf("want exit status 0:\n%s", r)
		}
		verifiedAt(t, c, r, key)
		got, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "verify-stuck", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp != nil {
			t.Fatalf("after undelete: %v, deletionTimestamp %v", err, got.DeletionTimestamp)
		}
	})

	t.Run("statefulset replicas -1 refused before the write", func(t *testing.T) {
		if _, err := c.Client.AppsV1().StatefulSets(ns).Create(ctx, newStatefulSet("verify-web"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		key := "/registry/statefulsets/demo/verify-web"
		before := c.etcdGet(t, key)
		for _, extra := range [][]string{{"--dry-run"}, {"--yes"}} {
			args := append([]string{"--kubeconfig", kc, "patch", "sts", "verify-web", "-n", ns, "-p", `{"spec":{"replicas":-1}}`, "--backup-dir", t.TempDir()}, extra...)
			r := c.etcdpvc(t, args...)
			if r.code != 5 {
				t.Fatalf("want exit status 5:\n%s", r)
			}
			for _, want := range []string{"the apiserver rejects the edited object", "spec.replicas", "must be greater than or equal to 0", "nothing written"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r)
				}
			}
			if strings.Contains(r.stdout, "written:") {
				t.Errorf("reports a write:\n%s", r)
			}
		}
		after := c.etcdGet(t, key)
		if after.ModRevision != before.ModRevision || string(after.Value) != string(before.Value) {
			t.Fatalf("the key changed: revision %d → %d", before.ModRevision, after.ModRevision)
		}
	})

	t.Run("immutable fields verified as accepted", func(t *testing.T) {
		if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newPVC("verify-class", "slow", "5Gi"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Client.AppsV1().StatefulSets(ns).Create(ctx, newStatefulSet("verify-vct"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			key  string
			args []string
		}{
			{"/registry/persistentvolumeclaims/demo/verify-class", []string{"patch", "pvc", "verify-class", "-p", `{"spec":{"storageClassName":"fast"}}`}},
			{"/registry/statefulsets/demo/verify-vct", []string{"patch", "sts", "verify-vct", "--type", "json", "-p",
				`[{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/storageClassName","value":"fast"}]`}},
		} {
			args := append([]string{"--kubeconfig", kc}, tc.args...)
			r := c.etcdpvc(t, append(args, "-n", ns, "--yes", "--backup-dir", t.TempDir())...)
			if r.code != 0 {
				t.Fatalf("want exit status 0:\n%s", r)
			}
			verifiedAt(t, c, r, tc.key)
		}
	})
}

// TestVerifyWithTheAPIServerStopped writes with the apiserver down:
// --verify=auto writes and says nothing was verified, --verify=always
// refuses and writes nothing.
func TestVerifyWithTheAPIServerStopped(t *testing.T) {
	c := startCluster(t, "verify-down", ClusterOptions{})
	c.EnsureNamespace(t, "demo")
	const ns = "demo"
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), newPVC("down", "slow", "5Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := c.writeKubeconfig(t)
	c.kas.stop(stopGrace)
	c.kas = nil
	key := "/registry/persistentvolumeclaims/demo/down"

	before := c.etcdGet(t, key)
	r := c.etcdpvc(t, "--kubeconfig", kc, "--verify=always", "label", "pvc", "down", "-n", ns, "team=a", "--yes", "--backup-dir", t.TempDir())
	if r.code != 5 || !strings.Contains(r.stderr, "cannot verify the write with the apiserver") || !strings.Contains(r.stderr, "apiserver unreachable") {
		t.Fatalf("want exit status 5, refused as unverifiable:\n%s", r)
	}
	if after := c.etcdGet(t, key); after.ModRevision != before.ModRevision {
		t.Fatalf("--verify=always wrote: revision %d → %d", before.ModRevision, after.ModRevision)
	}

	r = c.etcdpvc(t, "--kubeconfig", kc, "label", "pvc", "down", "-n", ns, "team=a", "--yes", "--backup-dir", t.TempDir())
	if r.code != 0 {
		t.Fatalf("want exit status 0:\n%s", r)
	}
	if !strings.Contains(r.stdout, "not verified: apiserver unreachable") || strings.Contains(r.stdout, "verified: the apiserver") {
		t.Errorf("want \"not verified: apiserver unreachable\" and no verified line:\n%s", r)
	}
	if after := c.etcdGet(t, key); after.ModRevision <= before.ModRevision {
		t.Fatalf("--verify=auto did not write: revision %d → %d", before.ModRevision, after.ModRevision)
	}
}
