package surgery

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdpvc/etcdpvc/codec"
)

// TestWarnings undeletes a PVC next to objects that would delete it again
// (or its data) and checks that the plan says so.
func TestWarnings(t *testing.T) {
	pvc := corpus(t, pvcFile)
	ns := corpus(t, nsFile)
	sts := corpus(t, stsFile)
	pv := corpus(t, pvFile)
	pod := corpus(t, "pods__demo__web-0")
	stsUID := decode(t, sts).Meta.UID
	podKey := "/registry/pods/demo/web-0"

	withOwners := func(refs ...metav1.OwnerReference) []byte {
		return typedEdit(t, pvc, func(o *corev1.PersistentVolumeClaim) {
			o.OwnerReferences = refs
			o.Spec.VolumeName = "pv-www-web-0"
		})
	}
	stsRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: stsUID}
	podRef := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: types.UID("0b8e4f0e-gone")}
	terminatingNS := typedEdit(t, ns, func(o *corev1.Namespace) {
		o.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)}
		o.Status.Phase = corev1.NamespaceTerminating
	})
	deletingSTS := typedEdit(t, sts, func(o *appsv1.StatefulSet) {
		o.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		}
	})
	deletePV := typedEdit(t, pv, func(o *corev1.PersistentVolume) {
		o.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	})
	otherPV := typedEdit(t, pv, func(o *corev1.PersistentVolume) { o.Spec.ClaimRef.UID = "someone-else" })

	tests := []struct {
		name    string
		objects map[string][]byte
		want    []string
	}{
		{"nothing to warn about", map[string][]byte{pvcKey: withOwners(stsRef), nsKey: ns, stsKey: sts, pvKey: pv}, nil},
		{"owner gone", map[string][]byte{pvcKey: withOwners(stsRef, podRef), nsKey: ns, stsKey: sts, pvKey: pv}, []string{
			"the owner Pod web-0 (uid 0b8e4f0e-gone) of PersistentVolumeClaim demo/www-web-0 no longer exists: the garbage collector will delete PersistentVolumeClaim demo/www-web-0 again unless the ownerReference is removed first",
		}},
		{"owner replaced", map[string][]byte{pvcKey: withOwners(podRef), nsKey: ns, podKey: pod, pvKey: pv}, []string{
			"the owner Pod web-0 (uid 0b8e4f0e-gone) of PersistentVolumeClaim demo/www-web-0 was replaced: Pod web-0 now has uid " + string(decode(t, pod).Meta.UID),
		}},
		{"namespace terminating", map[string][]byte{pvcKey: withOwners(), nsKey: terminatingNS, pvKey: pv}, []string{
			"the namespace demo is Terminating since 2026-11-30T01:00:00Z: the namespace controller deletes everything in it, PersistentVolumeClaim demo/www-web-0 included; undelete the namespace first",
		}},
		{"namespace gone", map[string][]byte{pvcKey: withOwners(), pvKey: pv}, []string{
			"the namespace demo of PersistentVolumeClaim demo/www-web-0 does not exist",
		}},
		{"statefulset retention delete", map[string][]byte{pvcKey: withOwners(stsRef), nsKey: ns, stsKey: deletingSTS, pvKey: pv}, []string{
			"PersistentVolumeClaim demo/www-web-0 is owned by StatefulSet demo/web, whose persistentVolumeClaimRetentionPolicy.whenDeleted is Delete: deleting the StatefulSet deletes this claim",
			"PersistentVolumeClaim demo/www-web-0 belongs to StatefulSet demo/web, whose persistentVolumeClaimRetentionPolicy.whenScaled is Delete",
		}},
		{"volume reclaim delete", map[string][]byte{pvcKey: withOwners(), nsKey: ns, pvKey: deletePV}, []string{
			"PersistentVolumeClaim demo/www-web-0 is bound to PersistentVolume pv-www-web-0, whose persistentVolumeReclaimPolicy is Delete: if the claim goes, the volume and its data are deleted; consider setting the policy to Retain first",
		}},
		{"volume bound elsewhere", map[string][]byte{pvcKey: withOwners(), nsKey: ns, pvKey: otherPV}, []string{
			"PersistentVolume pv-www-web-0's claimRef names uid someone-else, not PersistentVolumeClaim demo/www-web-0's uid 82fa94a9-3913-4cd1-b13b-a7f7b1cbb3d2",
		}},
		{"volume gone", map[string][]byte{pvcKey: withOwners(), nsKey: ns}, []string{
			"PersistentVolumeClaim demo/www-web-0 is bound to PersistentVolume pv-www-web-0, which does not exist",
		}},
	}
	ctx := testCtx(t)
	cl, s := startEtcd(t)
	t.Run("last finalizer removed from a terminating claim", func(t *testing.T) {
		if _, err := cl.Client(t).Delete(ctx, "/registry/", clientPrefix()...); err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string][]byte{pvcKey: withOwners(), nsKey: ns, pvKey: deletePV} {
			create(t, s, k, v)
		}
		p, err := Planner{}.MakePlan(ctx, s, pvcKey, Meta{MetaEdit: codec.MetaEdit{RemoveFinalizers: []string{"kubernetes.io/pvc-protection"}}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"PersistentVolumeClaim demo/www-web-0 keeps its deletionTimestamp and has no finalizers left: the API server deletes it for good on its next update",
			"PersistentVolumeClaim demo/www-web-0 is bound to PersistentVolume pv-www-web-0, whose persistentVolumeReclaimPolicy is Delete",
		}
		if len(p.Warnings) != len(want) {
			t.Fatalf("warnings:\n%s", strings.Join(p.Warnings, "\n"))
		}
		for i, w := range want {
			if !strings.HasPrefix(p.Warnings[i], w) {
				t.Errorf("warning %d: %q, want %q", i, p.Warnings[i], w)
			}
		}
	})
	cli := cl.Client(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cli.Delete(ctx, "/registry/", clientPrefix()...); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.objects {
				create(t, s, k, v)
			}
			p, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Warnings) != len(tc.want) {
				t.Errorf("%d warnings, want %d:\n%s", len(p.Warnings), len(tc.want), strings.Join(p.Warnings, "\n"))
			}
			for _, w := range tc.want {
				found := false
				for _, got := range p.Warnings {
					found = found || strings.Contains(got, w)
				}
				if !found {
					t.Errorf("no warning %q in:\n%s", w, strings.Join(p.Warnings, "\n"))
				}
			}
		})
	}
}
