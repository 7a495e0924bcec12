package surgery

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdpvc/etcdpvc/codec"
)

const boundKey = "/registry/persistentvolumeclaims/demo/www-web-1"

// failedExpansion returns the corpus's Bound claim www-web-1 as a failed
// expansion leaves it: capacity 10Gi, request 1000Gi, the allocation and
// the resize conditions recorded, and one unrelated condition.
func failedExpansion(t testing.TB) []byte {
	t.Helper()
	return typedEdit(t, corpus(t, pvcBound), func(p *corev1.PersistentVolumeClaim) {
		setFailedExpansion(p)
	})
}

func setFailedExpansion(p *corev1.PersistentVolumeClaim) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	p.Spec.Resources.Requests[corev1.ResourceStorage] = apiresource.MustParse("1000Gi")
	p.Status.Capacity[corev1.ResourceStorage] = apiresource.MustParse("10Gi")
	p.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("1000Gi")}
	p.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
		corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInfeasible,
	}
	p.Status.Conditions = []corev1.PersistentVolumeClaimCondition{
		{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: at},
		{Type: corev1.PersistentVolumeClaimVolumeModifyingVolume, Status: corev1.ConditionTrue, LastTransitionTime: at},
		{Type: corev1.PersistentVolumeClaimControllerResizeError, Status: corev1.ConditionTrue, LastTransitionTime: at, Message: "resize volume: disk quota exceeded"},
	}
}

// recovered is what ResizeRecover{To: to} must make of failedExpansion.
func recovered(t testing.TB, to string) []byte {
	t.Helper()
	return typedEdit(t, failedExpansion(t), func(p *corev1.PersistentVolumeClaim) {
		p.Spec.Resources.Requests[corev1.ResourceStorage] = apiresource.MustParse(to)
		p.Status.AllocatedResources = nil
		p.Status.AllocatedResourceStatuses = nil
		p.Status.Conditions = p.Status.Conditions[1:2]
	})
}

// withLegacyResizeStatus adds the v1.23–v1.27 status.resizeStatus
// (field 6 of the claim's status) to a protobuf claim.
func withLegacyResizeStatus(t testing.TB, stored []byte) []byte {
	t.Helper()
	return withExtraField(t, stored, 3, 6, "ControllerExpansionFailed")
}

// asJSON stores a claim as JSON (as a non-default storage media type
// would), with extra members in its status.
func asJSON(t testing.TB, stored []byte, extraStatus map[string]any) []byte {
	t.Helper()
	content := codec.CopyContent(decode(t, stored).Content)
	for k, v := range extraStatus {
		content["status"].(map[string]any)[k] = v
	}
	out, err := codec.EncodeContent(content, codec.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestResizeRecover(t *testing.T) {
	failed := failedExpansion(t)
	tests := []struct {
		name  string
		value []byte
		to    string
		// want is the exact new stored value; nil when the edit fails.
		want []byte
		// err is matched with errors.Is; msg must appear in the message.
		err error
		msg string
	}{
		{name: "lower to a feasible size", value: failed, to: "20Gi", want: recovered(t, "20Gi")},
		{name: "just above the capacity", value: failed, to: "10241Mi", want: recovered(t, "10241Mi")},
		{name: "legacy resizeStatus removed", value: withLegacyResizeStatus(t, failed), to: "20Gi", want: recovered(t, "20Gi")},
		{name: "equal to the capacity: cancels the expansion", value: failed, to: "10Gi", want: recovered(t, "10Gi")},
		{name: "below the capacity", value: failed, to: "5Gi", err: ErrRefused, msg: "a volume never shrinks"},
		{name: "equal to the request", value: failed, to: "1000Gi", err: ErrRefused, msg: "must be less than the current request 1000Gi"},
		{name: "above the request", value: failed, to: "2Ti", err: ErrRefused, msg: "ordinary expansion"},
		{name: "no expansion pending", value: corpus(t, pvcBound), to: "6Gi", err: ErrRefused, msg: "request 5Gi is not above its capacity 5Gi"},
		{name: "unbound claim", value: corpus(t, "persistentvolumeclaims__demo__www-web-0__pending"), to: "6Gi", err: ErrRefused, msg: "the claim is Pending, not Bound"},
		{name: "field unknown to this build", value: withUnknownSpecField(t, failed), to: "20Gi", err: codec.ErrLossy, msg: "does not know every field"},
		{name: "not a claim", value: corpus(t, pvFile), to: "20Gi", msg: "is not a v1 PersistentVolumeClaim"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := current(t, boundKey, tc.value)
			got, err := ResizeRecover{To: apiresource.MustParse(tc.to)}.Transform(cur)
			if tc.want == nil {
				if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("Apply = %v, want an error matching %v containing %q", err, tc.err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("new value differs from the expected re-encode:\n%s", cmp.Diff(decode(t, tc.want).Content, decode(t, got).Content))
			}
		})
	}
}

// TestResizeRecoverJSON: a claim stored as JSON is edited in its stored
// text, the legacy resizeStatus included, and nothing else changes.
func TestResizeRecoverJSON(t *testing.T) {
	stored := asJSON(t, failedExpansion(t), map[string]any{"resizeStatus": "ControllerExpansionFailed"})
	got, err := ResizeRecover{To: apiresource.MustParse("20Gi")}.Transform(current(t, boundKey, stored))
	if err != nil {
		t.Fatal(err)
	}
	after := decode(t, got)
	if after.Format != codec.FormatJSON {
		t.Fatalf("format %v, want JSON", after.Format)
	}
	want := codec.CopyContent(decode(t, recovered(t, "20Gi")).Content)
	if diff := cmp.Diff(want, after.Content); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// TestResizeRecoverPlan runs the recipe through the write path against
// etcd: a Terminating claim whose volume's reclaim policy is Delete gets the
// plan's warning, and Apply writes exactly the planned bytes.
func TestResizeRecoverPlan(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	value := typedEdit(t, corpus(t, pvcBound), func(p *corev1.PersistentVolumeClaim) {
		setFailedExpansion(p)
		now := metav1.NewTime(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
		p.DeletionTimestamp = &now
	})
	create(t, s, boundKey, value)
	create(t, s, "/registry/persistentvolumes/pv-www-web-1", typedEdit(t, corpus(t, "persistentvolumes__-__pv-www-web-1__bound"), func(pv *corev1.PersistentVolume) {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	}))
	p, err := Planner{}.MakePlan(ctx, s, boundKey, ResizeRecover{To: apiresource.MustParse("20Gi")})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range p.Warnings {
		found = found || strings.Contains(w, "whose persistentVolumeReclaimPolicy is Delete")
	}
	if !found {
		t.Errorf("no reclaim policy warning for a Terminating claim on a Delete volume:\n%s", strings.Join(p.Warnings, "\n"))
	}
	for _, line := range []string{"-      storage: 1000Gi", "+      storage: 20Gi", "-    type: Resizing", "-    message: 'resize volume: disk quota exceeded'"} {
		if !strings.Contains(p.Diff, line) {
			t.Errorf("diff lacks %q:\n%s", line, p.Diff)
		}
	}
	res, err := Apply(ctx, s, p, ApplyOptions{BackupDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if kv := get(t, s, boundKey); kv.ModRevision != res.Revision || !bytes.Equal(kv.Value, p.NewStored) {
		t.Fatalf("key holds revision %d, want the planned value at %d", kv.ModRevision, res.Revision)
	}
}

// TestLegacyResizeStatusIsUnknown proves the legacy field is one this build
// does not know: any other typed edit of such a claim is refused, so only
// ResizeRecover's deliberate removal gets past the round-trip guard.
func TestLegacyResizeStatusIsUnknown(t *testing.T) {
	cur := current(t, boundKey, withLegacyResizeStatus(t, failedExpansion(t)))
	_, err := Patch{Type: PatchMerge, Patch: []byte(`{"spec":{"resources":{"requests":{"storage":"20Gi"}}}}`)}.Transform(cur)
	if !errors.Is(err, codec.ErrLossy) {
		t.Fatalf("Patch = %v, want an error wrapping codec.ErrLossy", err)
	}
}
