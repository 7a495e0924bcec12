package surgery

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdpvc/etcdpvc/store"
)

const (
	boundPVKey  = "/registry/persistentvolumes/pv-www-web-1"
	boundPVFile = "persistentvolumes__-__pv-www-web-1__bound"
	// boundUID is the corpus claim www-web-1's uid, which pv-www-web-1's
	// claimRef names.
	boundUID = types.UID("2347e8c0-d3fa-44be-9c72-5d89807fd3fa")
	newUID   = types.UID("0d3c5e1a-7f7e-4b8e-9d59-3f1b8c2a9e11")
)

// recreatedClaim returns the corpus claim www-web-1 as if deleted and
// created again by `kubectl apply`: another uid, Pending, no volumeName,
// optionally renamed.
func recreatedClaim(t testing.TB, name string, fn func(*corev1.PersistentVolumeClaim)) []byte {
	t.Helper()
	return typedEdit(t, corpus(t, pvcBound), func(p *corev1.PersistentVolumeClaim) {
		p.Name = name
		p.UID = newUID
		p.Annotations = nil
		p.Spec.VolumeName = ""
		p.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
		if fn != nil {
			fn(p)
		}
	})
}

func TestPlanRebind(t *testing.T) {
	ctx := testCtx(t)
	cl, s := startEtcd(t)
	cli := cl.Client(t)
	claimKey := func(name string) string { return "/registry/persistentvolumeclaims/demo/" + name }
	deleting := func(p *corev1.PersistentVolumeClaim) {
		now := metav1.NewTime(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
		p.DeletionTimestamp = &now
	}
	otherPV := typedEdit(t, corpus(t, boundPVFile), func(pv *corev1.PersistentVolume) {
		pv.Name, pv.UID = "pv-new", "5b1f0d7e-3e37-4a43-a6b3-7c1c6a0f0c42"
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "demo", Name: "www-web-1", UID: newUID}
	})
	tests := []struct {
		name string
		// objects are written before planning, by key.
		objects map[string][]byte
		claim   string
		force   bool
		err     error
		msg     string
		// noop says which plans change nothing (volume, claim).
		noop [2]bool
		// warn are substrings the warnings must hold; quiet wants none.
		warn  []string
		quiet bool
	}{
		{
			name:    "claim re-created",
			objects: map[string][]byte{boundPVKey: corpus(t, boundPVFile), claimKey("www-web-1"): recreatedClaim(t, "www-web-1", nil)},
			claim:   "www-web-1",
			quiet:   true,
		},
		{
			name:    "already bound to it",
			objects: map[string][]byte{boundPVKey: corpus(t, boundPVFile), claimKey("www-web-1"): corpus(t, pvcBound)},
			claim:   "www-web-1",
			noop:    [2]bool{true, true},
		},
		{
			name: "volume bound to another live claim",
			objects: map[string][]byte{boundPVKey: corpus(t, boundPVFile), claimKey("www-web-1"): corpus(t, pvcBound),
				claimKey("www-web-1-new"): recreatedClaim(t, "www-web-1-new", nil)},
			claim: "www-web-1-new",
			err:   ErrRefused,
			msg:   "PersistentVolume pv-www-web-1 is bound to the live claim demo/www-web-1 (uid " + string(boundUID) + ")",
		},
		{
			name: "volume bound to another live claim, forced",
			objects: map[string][]byte{boundPVKey: corpus(t, boundPVFile), claimKey("www-web-1"): corpus(t, pvcBound),
				claimKey("www-web-1-new"): recreatedClaim(t, "www-web-1-new", nil)},
			claim: "www-web-1-new",
			force: true,
			warn:  []string{"forced: PersistentVolume pv-www-web-1 is bound to the live claim demo/www-web-1"},
		},
		{
			name: "claim bound to another volume",
			objects: map[string][]byte{boundPVKey: corpus(t, boundPVFile), "/registry/persistentvolumes/pv-new": otherPV,
				claimKey("www-web-1"): recreatedClaim(t, "www-web-1", func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeName = "pv-new" })},
			claim: "www-web-1",
			err:   ErrRefused,
			msg:   "bound to PersistentVolume pv-new, whose claimRef names it: rebinding leaves pv-new Released",
		},
		{
			name:    "claim being deleted",
			objects: map[string][]byte{boundPVKey: corpus(t, boundPVFile), claimKey("www-web-1"): recreatedClaim(t, "www-web-1", deleting)},
			claim:   "www-web-1",
			err:     ErrRefused,
			msg:     "PersistentVolumeClaim demo/www-web-1 is being deleted",
		},
		{
			name: "binder mismatch",
			objects: map[string][]byte{boundPVKey: corpus(t, boundPVFile), claimKey("www-web-1"): recreatedClaim(t, "www-web-1", func(p *corev1.PersistentVolumeClaim) {
				fast := "fast"
				p.Spec.StorageClassName = &fast
				p.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
			})},
			claim: "www-web-1",
			warn: []string{
				`VolumeMismatch): the claim's storage class "fast" differs from the volume's "local-disks"`,
				"the claim asks for access mode ReadWriteMany",
			},
		},
		{
			name:    "no such claim",
			objects: map[string][]byte{boundPVKey: corpus(t, boundPVFile)},
			claim:   "www-web-1",
			err:     store.ErrNotFound,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cli.Delete(ctx, "/registry/", clientPrefix()...); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.objects {
				create(t, s, k, v)
			}
			rb, err := Planner{}.PlanRebind(ctx, s, "pv-www-web-1", "demo", tc.claim, tc.force)
			if tc.err != nil || tc.msg != "" {
				if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("PlanRebind = %v, want an error matching %v containing %q", err, tc.err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := [2]bool{rb.Volume.NoOp, rb.Claim.NoOp}; got != tc.noop {
				t.Fatalf("NoOp (volume, claim) = %v, want %v", got, tc.noop)
			}
			all := strings.Join(rb.Warnings, "\n")
			if tc.quiet && len(rb.Warnings) > 0 {
				t.Errorf("unexpected warnings:\n%s", all)
			}
			for _, w := range tc.warn {
				if !strings.Contains(all, w) {
					t.Errorf("warnings lack %q:\n%s", w, all)
				}
			}
			if tc.noop[0] {
				return
			}
			// Apply both, volume first, and check what the binder will see.
			for _, p := range rb.Plans() {
				if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: t.TempDir()}); err != nil {
					t.Fatal(err)
				}
			}
			pv := decode(t, get(t, s, boundPVKey).Value).Typed.(*corev1.PersistentVolume)
			pvc := decode(t, get(t, s, claimKey(tc.claim)).Value).Typed.(*corev1.PersistentVolumeClaim)
			want := &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "demo", Name: tc.claim, UID: pvc.UID}
			if diff := cmp.Diff(want, pv.Spec.ClaimRef); diff != "" {
				t.Errorf("claimRef (-want +got):\n%s", diff)
			}
			if pvc.Spec.VolumeName != "pv-www-web-1" {
				t.Errorf("volumeName = %q", pvc.Spec.VolumeName)
			}
		})
	}
}

// TestRebindEditsCheckUIDs: the edits refuse an object re-created between
// the checks and the plan.
func TestRebindEditsCheckUIDs(t *testing.T) {
	_, err := SetVolumeName{Volume: "pv-www-web-1", ClaimUID: newUID}.Transform(current(t, boundKey, corpus(t, pvcBound)))
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "re-created since") {
		t.Errorf("SetVolumeName = %v, want a refusal", err)
	}
	_, err = SetClaimRef{Namespace: "demo", Name: "www-web-1", UID: newUID, VolumeUID: newUID}.Transform(current(t, boundPVKey, corpus(t, boundPVFile)))
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "re-created since") {
		t.Errorf("SetClaimRef = %v, want a refusal", err)
	}
	_, err = SetClaimRef{Namespace: "demo", Name: "www-web-1", UID: newUID}.Transform(current(t, boundKey, corpus(t, pvcBound)))
	if err == nil || !strings.Contains(err.Error(), "is not a v1 PersistentVolume") {
		t.Errorf("SetClaimRef on a claim = %v", err)
	}
}
