package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestResizeRecoverFailedExpansion builds, through the API, the state a
// failed volume expansion leaves: a Bound claim with capacity 10Gi whose
// request was raised to 1000Gi (its StorageClass allows expansion), and the
// status the external-resizer writes when the driver cannot give that much
// (allocatedResources 1000Gi, ControllerResizeInfeasible, the Resizing and
// ControllerResizeError conditions). No controller runs, so the test plays
// the binder and the resizer with UpdateStatus. etcdpvc resize-recover
// lowers the request to 100Gi and clears the allocation; the apiserver
// serves exactly that, its watch sees it, and the claim stays valid for API
// updates.
func TestResizeRecoverFailedExpansion(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	ctx := context.Background()
	const (
		ns, name = "demo", "data-pg-0"
		pvName   = "pv-data-pg-0"
		class    = "expandable"
	)
	key := "/registry/persistentvolumeclaims/" + ns + "/" + name
	pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)
	storage := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}
	}

	// The StorageClass must allow expansion, or the PersistentVolumeClaimResize
	// admission plugin refuses any larger request.
	_, err := c.Client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: class},
		Provisioner:          "disk.csi.example.com",
		AllowVolumeExpansion: ptr(true),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create storageclass %s: %v", class, err)
	}
	pv, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      storage("10Gi"),
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.example.com", VolumeHandle: "vol-" + name},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pv %s: %v", pvName, err)
	}
	pv.Status.Phase = corev1.VolumeBound
	if _, err := c.Client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pv %s: set status Bound: %v", pvName, err)
	}
	claim := newPVC(name, class, "10Gi")
	claim.Spec.VolumeName = pvName
	claim, err = pvcs.Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pvc %s/%s: %v", ns, name, err)
	}
	// The binder's part: Bound, with the volume's capacity.
	claim.Status = corev1.PersistentVolumeClaimStatus{
		Phase:       corev1.ClaimBound,
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:    storage("10Gi"),
	}
	if claim, err = pvcs.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pvc %s/%s: set status Bound, capacity 10Gi: %v", ns, name, err)
	}

	// The typo: 1000Gi for 100Gi. The admission plugin reads the
	// StorageClass from an informer, which may not have seen it yet.
	eventually(t, "raise the request to 1000Gi through the API", func() error {
		cur, err := pvcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Resources.Requests = storage("1000Gi")
		claim, err = pvcs.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	// The resizer's part: it recorded the allocation and the driver said
	// the size is out of range.
	now := metav1.Now()
	claim.Status.AllocatedResources = storage("1000Gi")
	claim.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
		corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInfeasible,
	}
	claim.Status.Conditions = []corev1.PersistentVolumeClaimCondition{
		{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{
			Type: corev1.PersistentVolumeClaimControllerResizeError, Status: corev1.ConditionTrue, LastTransitionTime: now,
			Message: "resize volume " + pvName + ": rpc error: code = OutOfRange desc = requested size exceeds the pool",
		},
	}
	failed, err := pvcs.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("pvc %s/%s: set the status of a failed expansion: %v", ns, name, err)
	}
	if got := failed.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "1000Gi" {
		t.Fatalf("setup: the failed claim requests %s, want 1000Gi", got.String())
	}
	if got := failed.Status.AllocatedResources[corev1.ResourceStorage]; got.String() != "1000Gi" || len(failed.Status.Conditions) != 2 {
		t.Fatalf("setup: the failed claim's status is not what the resizer writes: %s", mustJSON(failed.Status))
	}
	before := c.etcdGet(t, key)

	// A request below the capacity would shrink the volume: refused,
	// nothing written.
	r := c.etcdpvc(t, "resize-recover", "pvc", name, "-n", ns, "--to", "5Gi", "--yes", "--backup-dir", t.TempDir())
	if r.code != 5 || !strings.Contains(r.stderr, "never shrinks") {
		t.Errorf("resize-recover --to 5Gi (below the capacity 10Gi): want exit status 5 and \"never shrinks\":\n%s", r)
	}
	if after := c.etcdGet(t, key); after.ModRevision != before.ModRevision {
		t.Fatalf("a refused resize-recover wrote: mod revision %d → %d", before.ModRevision, after.ModRevision)
	}

	w, err := pvcs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: failed.ResourceVersion})
	if err != nil {
		t.Fatalf("watch pvc: %v", err)
	}
	defer w.Stop()

	r = c.mustEtcdpvc(t, "resize-recover", "pvc", name, "-n", ns, "--to", "100Gi", "--yes", "--backup-dir", t.TempDir())
	backupPath(t, r)
	// The next steps, whatever the line breaks.
	out := strings.Join(strings.Fields(r.stdout), " ")
	for _, want := range []string{
		"Now the claim asks for 100Gi instead of 1000Gi, with no allocation recorded",
		"the external-resizer",
		"sees a request above the capacity 10Gi and starts a new expansion to 100Gi",
		"the kubelet of the node where a pod mounts the claim grows it",
		"if the expansion to 100Gi fails too",
		"kubectl describe pvc " + name + " -n " + ns,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("resize-recover does not explain what happens next: no %q in its output:\n%s", want, r)
		}
	}
	// The volume still has 10Gi: no "already has capacity" note.
	if strings.Contains(out, "already has capacity") {
		t.Errorf("resize-recover says the volume already has the size, but %s has 10Gi:\n%s", pvName, r)
	}

	ev := nextEvent(t, w, "watch after resize-recover")
	if ev.Type != watch.Modified {
		t.Fatalf("watch after resize-recover: got a %s event, want MODIFIED: %+v", ev.Type, ev.Object)
	}
	if got := ev.Object.(*corev1.PersistentVolumeClaim).Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "100Gi" {
		t.Errorf("the watch's MODIFIED event requests %s, want 100Gi", got.String())
	}

	stored := c.etcdGet(t, key)
	if p := storedPrefix(stored.Value); p != "k8s\\x00 (protobuf)" {
		t.Errorf("resize-recover stored a value starting %s, want the protobuf envelope", p)
	}
	var got *corev1.PersistentVolumeClaim
	eventually(t, "the apiserver serves the recovered claim", func() error {
		got, err = pvcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.ResourceVersion != fmt.Sprint(stored.ModRevision) {
			return fmt.Errorf("resourceVersion %s, want etcd's mod revision %d", got.ResourceVersion, stored.ModRevision)
		}
		return nil
	})
	request := got.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := got.Status.Capacity[corev1.ResourceStorage]
	_, allocated := got.Status.AllocatedResources[corev1.ResourceStorage]
	_, allocatedStatus := got.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	resizeConds := slices.ContainsFunc(got.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		return c.Type == corev1.PersistentVolumeClaimResizing || c.Type == corev1.PersistentVolumeClaimControllerResizeError
	})
	checks := []struct {
		what string
		ok   bool
	}{
		{"spec.resources.requests.storage 100Gi", request.String() == "100Gi"},
		{"no status.allocatedResources.storage", !allocated},
		{"no status.allocatedResourceStatuses.storage", !allocatedStatus},
		{"no Resizing or ControllerResizeError condition", !resizeConds},
		{"status.capacity.storage still 10Gi", capacity.String() == "10Gi"},
		{"still Bound to " + pvName, got.Status.Phase == corev1.ClaimBound && got.Spec.VolumeName == pvName},
		{"the uid, labels and finalizers kept", got.UID == failed.UID && equalJSON(got.Labels, failed.Labels) && slices.Equal(got.Finalizers, failed.Finalizers)},
		{"resourceVersion advanced", rv(t, got.ResourceVersion) > rv(t, failed.ResourceVersion)},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("after resize-recover, as the apiserver serves it: want %s\nserved: %s", ch.what, mustJSON(got))
		}
	}

	// The stored claim is valid: an ordinary API Update succeeds and keeps
	// the new request.
	got.Labels["touched"] = "by-api"
	updated, err := pvcs.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("an API Update of the recovered claim failed: %v", err)
	}
	if q := updated.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "100Gi" || updated.Labels["touched"] != "by-api" {
		t.Errorf("after an API Update the claim requests %s with labels %v, want 100Gi and touched=by-api", q.String(), updated.Labels)
	}
	// And the resizer can take it from there: its status update starting
	// the new expansion to 100Gi is accepted.
	updated.Status.AllocatedResources = storage("100Gi")
	updated.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
		corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress,
	}
	updated.Status.Conditions = []corev1.PersistentVolumeClaimCondition{
		{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
	}
	if _, err := pvcs.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Errorf("the resizer's status update starting the expansion to 100Gi failed: %v", err)
	}
}
