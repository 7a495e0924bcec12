package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSnapshotSurgeryRecoverDeletedPVC is the snapshot-surgery runbook
// (docs/runbooks/forensics.md) end to end. A PVC is deleted for good
// through the API; a snapshot taken afterwards (etcdctl snapshot save) no
// longer holds it but still holds its history, which the apiserver does
// not compact in this suite (--etcd-compaction-interval=0). `etcdpvc --db
// SNAP --out EDITED recover` writes it back into a copy of the snapshot;
// the cluster is stopped, EDITED restored with etcdutl into a new data dir
// (--bump-revision --mark-compacted, since clients have seen revisions past
// the snapshot), and a new etcd and kube-apiserver started on it serve the
// claim with its uid, labels, annotations, spec and finalizer.
func TestSnapshotSurgeryRecoverDeletedPVC(t *testing.T) {
	c := startCluster(t, "snapshot", ClusterOptions{})
	c.EnsureNamespace(t, "demo")
	ctx := context.Background()
	const ns, name = "demo", "www-db-0"
	key := "/registry/persistentvolumeclaims/" + ns + "/" + name
	pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)
	dir := t.TempDir()

	claim := newPVC(name, "local-disks", "20Gi")
	claim.Annotations = map[string]string{"backup.example.com/policy": "daily"}
	created, err := pvcs.Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pvc %s/%s: %v", ns, name, err)
	}
	created.Labels["tier"] = "gold"
	live, err := pvcs.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update pvc %s/%s: %v", ns, name, err)
	}
	if !slices.Equal(live.Finalizers, []string{pvcProtection}) {
		t.Fatalf("pvc %s/%s: finalizers %v, want [%s]", ns, name, live.Finalizers, pvcProtection)
	}

	// Delete it for good: delete, then remove the finalizer through the
	// API, as the protection controller does once no pod uses the claim.
	if err := pvcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pvc %s/%s: %v", ns, name, err)
	}
	terminating, err := pvcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pvc %s/%s after delete: %v", ns, name, err)
	}
	terminating.Finalizers = nil
	if _, err := pvcs.Update(ctx, terminating, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("remove the finalizer through the API: %v", err)
	}
	if _, err := pvcs.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get pvc %s/%s after its finalizer was removed: %v, want NotFound", ns, name, err)
	}

	snap := filepath.Join(dir, "etcd-after-delete.db")
	runTool(t, suite.etcdctl, "--endpoints", c.EtcdURL, "snapshot", "save", snap)
	snapSum := sha256File(t, snap)

	// The snapshot holds no live claim, only its history.
	if r := runEtcdpvc(t, nil, "--db", snap, "get", "pvc", name, "-n", ns); r.code != 3 {
		t.Fatalf("the snapshot taken after the deletion: want exit status 3 (not found):\n%s", r)
	}
	if r := runEtcdpvc(t, nil, "--db", snap, "history", "pvc", name, "-n", ns); r.code != 0 {
		t.Fatalf("the snapshot's history of the deleted claim: want exit status 0:\n%s", r)
	}

	edited := filepath.Join(dir, "etcd-edited.db")
	r := runEtcdpvc(t, nil, "--db", snap, "--out", edited, "recover", "pvc", name, "-n", ns, "--yes", "--backup-dir", t.TempDir())
	if r.code != 0 {
		t.Fatalf("recover into a copy of the snapshot: want exit status 0:\n%s", r)
	}
	if !strings.Contains(r.stdout, "snapshot: "+edited) {
		t.Errorf("recover --out does not report the snapshot it wrote (%s):\n%s", edited, r)
	}
	if !strings.Contains(r.stderr, "was already being deleted") {
		t.Errorf("no warning that the revision recovered was Terminating:\n%s", r)
	}
	if got := sha256File(t, snap); got != snapSum {
		t.Errorf("recover --db %s --out changed its input: sha256 %s, was %s", snap, got, snapSum)
	}
	if r := runEtcdpvc(t, nil, "--db", snap, "--out", edited, "recover", "pvc", name, "-n", ns, "--yes", "--backup-dir", t.TempDir()); r.code != 5 {
		t.Errorf("recover with an --out that exists: want exit status 5 (refused):\n%s", r)
	}
	r = runEtcdpvc(t, nil, "--db", edited, "get", "pvc", name, "-n", ns, "-o", "json")
	if r.code != 0 {
		t.Fatalf("get the recovered claim from the edited snapshot: want exit status 0:\n%s", r)
	}
	var inEdited corev1.PersistentVolumeClaim
	if err := json.Unmarshal([]byte(r.stdout), &inEdited); err != nil {
		t.Fatalf("etcdpvc get -o json: %v\n%s", err, r)
	}
	if inEdited.UID != live.UID || inEdited.DeletionTimestamp != nil {
		t.Fatalf("the edited snapshot holds uid %s, deletionTimestamp %v; want uid %s, not Terminating", inEdited.UID, inEdited.DeletionTimestamp, live.UID)
	}

	// The cluster goes on after the snapshot; what it does then is lost
	// by the restore, and its clients have seen newer revisions.
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-snapshot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap after-snapshot: %v", err)
	}
	list, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list configmaps: %v", err)
	}
	lastSeen := rv(t, list.ResourceVersion)

	// Stop kube-apiserver and etcd, restore EDITED into a new data dir,
	// start etcd and kube-apiserver on it.
	err = c.RestartOnNewDataDir(func(dataDir, member, peerURL string) error {
		out, err := exec.Command(suite.etcdutl, "snapshot", "restore", edited,
			"--data-dir", dataDir,
			"--name", member,
			"--initial-cluster", member+"="+peerURL,
			"--initial-advertise-peer-urls", peerURL,
			"--bump-revision", "1000", "--mark-compacted",
		).CombinedOutput()
		if err != nil {
			return fmt.Errorf("etcdutl snapshot restore %s: %v\n%s", edited, err, out)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("restart the cluster on the restored snapshot: %v", err)
	}

	pvcs = c.Client.CoreV1().PersistentVolumeClaims(ns)
	var got *corev1.PersistentVolumeClaim
	eventually(t, "the new apiserver serves the recovered pvc", func() error {
		got, err = pvcs.Get(ctx, name, metav1.GetOptions{})
		return err
	})
	stored := c.etcdGet(t, key)
	checks := []struct {
		what string
		ok   bool
	}{
		{"the original uid", got.UID == live.UID},
		{"not Terminating", got.DeletionTimestamp == nil && got.DeletionGracePeriodSeconds == nil},
		{"finalizers [" + pvcProtection + "]", slices.Equal(got.Finalizers, []string{pvcProtection})},
		{"the labels of the last update", equalJSON(got.Labels, live.Labels)},
		{"the annotations", equalJSON(got.Annotations, live.Annotations)},
		{"the original spec", equalJSON(got.Spec, live.Spec)},
		{"etcd's mod revision as resourceVersion", got.ResourceVersion == fmt.Sprint(stored.ModRevision)},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("recovered through a snapshot restore: want %s\nserved: %s\nbefore the deletion: %s", ch.what, mustJSON(got), mustJSON(live))
		}
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "after-snapshot", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap after-snapshot, created after the snapshot: %v, want NotFound (is the apiserver on the restored data?)", err)
	}
	list, err = c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list configmaps on the restored cluster: %v", err)
	}
	if now := rv(t, list.ResourceVersion); now <= lastSeen {
		t.Errorf("the restored cluster is at revision %d, not past the %d clients saw before the restore (--bump-revision)", now, lastSeen)
	}

	// The recovered claim is valid: the API can update it.
	got.Labels["touched"] = "by-api"
	if _, err := pvcs.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an API Update of the recovered pvc failed: %v", err)
	}
}

// runTool runs one of the etcd tools and fails the test unless it exits 0.
func runTool(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
