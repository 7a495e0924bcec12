package surgery

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestResizeNextSteps: the explanation names the sizes and the claim, and
// says when the volume already has the size asked for.
func TestResizeNextSteps(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "www-web-1", Namespace: "demo"},
		Spec:   corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{}}},
		Status: corev1.PersistentVolumeClaimStatus{Capacity: corev1.ResourceList{}}}
	setFailedExpansion(pvc)
	pv := func(size string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
			Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse(size)}}}
	}
	common := []string{
		"Now the claim asks for 20Gi instead of 1000Gi, with no allocation recorded:\n",
		"sees a request above the capacity 10Gi and starts a new\n    expansion to 20Gi,",
		"if the expansion to 20Gi fails too,",
		"`kubectl describe pvc www-web-1 -n demo`",
	}
	grown := "PersistentVolume pv-1 already has capacity 30Gi"
	for _, tc := range []struct {
		name  string
		pv    *corev1.PersistentVolume
		grown bool
	}{
		{"volume unknown", nil, false},
		{"volume not grown", pv("10Gi"), false},
		{"volume grown past the new size", pv("30Gi"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ResizeNextSteps(pvc, tc.pv, apiresource.MustParse("20Gi"), "Now")
			for _, want := range common {
				if !strings.Contains(got, want) {
					t.Errorf("lacks %q:\n%s", want, got)
				}
			}
			if strings.Contains(got, grown) != tc.grown {
				t.Errorf("says %q: %v, want %v:\n%s", grown, !tc.grown, tc.grown, got)
			}
		})
	}
}

func TestRebindNextSteps(t *testing.T) {
	got := RebindNextSteps("pv-1", "demo", "data", "Once written")
	for _, want := range []string{"\nOnce written the volume's claimRef", "`kubectl get pvc data -n demo` and `kubectl get pv pv-1`"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
}

// TestRebindHalfDone: a rebind that wrote the volume and not the claim
// says so, and how to finish or undo; one that wrote nothing is not half
// done.
func TestRebindHalfDone(t *testing.T) {
	rb := &Rebind{Volume: &Plan{Key: "/registry/persistentvolumes/pv-1", Expect: 7}, Claim: &Plan{Key: "/registry/persistentvolumeclaims/demo/data"}}
	written := Step{Plan: rb.Volume, Result: &Result{Revision: 9, BackupPath: "/b/pv.json"}}
	for _, tc := range []struct {
		name  string
		steps []Step
		err   error
		claim string // "" when not half done
	}{
		{"nothing written", []Step{{Plan: rb.Volume, Err: ErrPartial}}, ErrPartial, ""},
		{"claim not written", []Step{written, {Plan: rb.Claim, Err: ErrPartial}}, fmt.Errorf("x: %w", ErrPartial), "was NOT written"},
		{"claim uncertain", []Step{written, {Plan: rb.Claim, Err: ErrUncertain}}, fmt.Errorf("%w: %w", ErrPartial, ErrUncertain), "may or may not have been written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, hint, ok := rb.HalfDone(tc.steps, tc.err)
			if ok != (tc.claim != "") {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				return
			}
			want := "the rebind is half done: /registry/persistentvolumes/pv-1 was written, /registry/persistentvolumeclaims/demo/data " + tc.claim + "."
			if d := cmp.Diff(want, lines[0]); d != "" {
				t.Errorf("first line (-want +got):\n%s", d)
			}
			if !strings.HasSuffix(hint, "undo the volume's write with: etcdpvc restore /b/pv.json") {
				t.Errorf("hint %q", hint)
			}
		})
	}
}
