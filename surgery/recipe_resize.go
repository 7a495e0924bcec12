package surgery

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// ResizeConditions are the PersistentVolumeClaim conditions a volume
// expansion sets and ResizeRecover drops, so that nothing reports the
// abandoned expansion as still in progress or failed.
var ResizeConditions = []corev1.PersistentVolumeClaimConditionType{
	corev1.PersistentVolumeClaimResizing,
	corev1.PersistentVolumeClaimFileSystemResizePending,
	corev1.PersistentVolumeClaimControllerResizeError,
	corev1.PersistentVolumeClaimNodeResizeError,
}

// ResizeRecover recovers a PersistentVolumeClaim from a failed volume
// expansion, the way Kubernetes v1.34 lets a user do it through the API
// (the RecoverVolumeExpansionFailure feature; before v1.34, or with the
// feature off, the apiserver refuses to lower a claim's request). It sets
// spec.resources.requests.storage to To; removes the storage entries of
// status.allocatedResources and status.allocatedResourceStatuses and the
// legacy status.resizeStatus, so the external-resizer starts a new
// expansion to To instead of retrying the failed size; and drops the
// ResizeConditions.
//
// It checks what a v1.34 apiserver checks: the claim is Bound, and To is
// greater than status.capacity.storage (the apiserver refuses a request at
// or below the capacity: "field can not be less than status.capacity") and
// less than the current request (else there is nothing to recover). A
// refusal wraps ErrRefused.
//
// The change is made on the object's JSON view with the same rules as
// Patch: a protobuf-stored claim is re-encoded only when this build knows
// every field it holds, except that the legacy status.resizeStatus
// (protobuf field 6 of the status, written by v1.23–v1.27 with the alpha
// feature gate and no longer in k8s.io/api) is removed first at the wire
// level, since removing it is part of the recovery.
type ResizeRecover struct {
	// To is the new storage request.
	To apiresource.Quantity
}

// Transform implements Edit.
func (r ResizeRecover) Transform(cur *kubevalue.Current) ([]byte, error) {
	what := fmt.Sprintf("resize-recover of %s %s", cur.Obj.GVK.Kind, cur.Obj.Name())
	pvc, err := claimOf(cur, what)
	if err != nil {
		return nil, err
	}
	if err := CheckResizeRecover(pvc, r.To); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	want := codec.CopyContent(cur.Obj.Content)
	setPath(want, r.To.String(), "spec", "resources", "requests", "storage")
	deletePath(want, "status", "allocatedResources", string(corev1.ResourceStorage))
	deletePath(want, "status", "allocatedResourceStatuses", string(corev1.ResourceStorage))
	deletePath(want, "status", "resizeStatus")
	if status, ok := want["status"].(map[string]any); ok {
		if conds, ok := status["conditions"].([]any); ok {
			kept := slices.DeleteFunc(conds, func(c any) bool {
				m, _ := c.(map[string]any)
				t, _ := m["type"].(string)
				return slices.Contains(ResizeConditions, corev1.PersistentVolumeClaimConditionType(t))
			})
			if len(kept) == 0 {
				delete(status, "conditions")
			} else {
				status["conditions"] = kept
			}
		}
	}
	base, err := withoutLegacyResizeStatus(cur)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return applyContent(base, want, what)
}

// Describe implements Edit.
func (r ResizeRecover) Describe() string {
	return fmt.Sprintf("resize-recover: set spec.resources.requests.storage to %s; remove storage from status.allocatedResources and status.allocatedResourceStatuses, and status.resizeStatus; drop the Resizing, FileSystemResizePending, ControllerResizeError and NodeResizeError conditions", r.To.String())
}

// CheckResizeRecover reports whether ResizeRecover may lower pvc's storage
// request to to: the claim must be Bound with a status.capacity.storage,
// its request must be above that capacity (an expansion is pending or has
// failed), and to must be above the capacity and below the request. The
// error wraps ErrRefused.
func CheckResizeRecover(pvc *corev1.PersistentVolumeClaim, to apiresource.Quantity) error {
	if pvc.Status.Phase != corev1.ClaimBound {
		phase := string(pvc.Status.Phase)
		if phase == "" {
			phase = string(corev1.ClaimPending) // the apiserver defaults it so
		}
		return refusef("the claim is %s, not Bound: only a bound claim's storage request can change, and an unbound claim has no expansion to recover", phase)
	}
	capacity, ok := pvc.Status.Capacity[corev1.ResourceStorage]
	if !ok {
		return refusef("the claim has no status.capacity.storage, so the size its volume has is unknown")
	}
	request, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return refusef("the claim has no spec.resources.requests.storage")
	}
	if request.Cmp(capacity) <= 0 {
		return refusef("the claim's request %s is not above its capacity %s: no expansion is pending, nothing to recover", request.String(), capacity.String())
	}
	// The request may go back down to the capacity itself: that cancels
	// the expansion (the volume already has that size). A v1.34 apiserver
	// is stricter through its API (its check is "<= capacity → field can
	// not be less than status.capacity"), but a request equal to the
	// capacity is a state every claim is in before any expansion.
	if to.Cmp(capacity) < 0 {
		return refusef("--to %s must not be less than status.capacity.storage %s: a volume never shrinks", to.String(), capacity.String())
	}
	if to.Cmp(request) >= 0 {
		return refusef("--to %s must be less than the current request %s: recovering asks for less than the failed size; asking for as much or more is an ordinary expansion (kubectl patch)", to.String(), request.String())
	}
	return nil
}

// Protobuf field numbers of the legacy resize status: status is field 3 of
// PersistentVolumeClaim, and resizeStatus was field 6 of
// PersistentVolumeClaimStatus.
const (
	pvcStatusField          protowire.Number = 3
	legacyResizeStatusField protowire.Number = 6
)

// withoutLegacyResizeStatus returns cur, or, when cur is a protobuf-stored
// claim whose status holds the legacy resizeStatus field, cur as if that
// field had never been stored. Every other byte stays as stored, so the
// round-trip guard of applyContent still catches any other field this
// build does not know.
func withoutLegacyResizeStatus(cur *kubevalue.Current) (*kubevalue.Current, error) {
	if cur.Obj.Format != codec.FormatProtobuf {
		return cur, nil
	}
	env, err := codec.ParseUnknown(cur.Plain)
	if err != nil {
		return nil, err
	}
	var raw []byte
	found := false
	b := env.Raw
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("claim bytes: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, fmt.Errorf("claim field %d: %w", num, protowire.ParseError(m))
		}
		field := b[:n+m]
		b = b[n+m:]
		if num != pvcStatusField || typ != protowire.BytesType {
			raw = append(raw, field...)
			continue
		}
		status, _ := protowire.ConsumeBytes(field[n:])
		kept, dropped, err := dropField(status, legacyResizeStatusField)
		if err != nil {
			return nil, fmt.Errorf("claim status: %w", err)
		}
		if !dropped {
			raw = append(raw, field...)
			continue
		}
		found = true
		raw = protowire.AppendTag(raw, pvcStatusField, protowire.BytesType)
		raw = protowire.AppendBytes(raw, kept)
	}
	if !found {
		return cur, nil
	}
	plain := env.WithRaw(raw)
	obj, err := codec.Decode(plain)
	if err != nil {
		return nil, fmt.Errorf("claim without status.resizeStatus: %w", err)
	}
	out := *cur
	out.Plain, out.Obj = plain, obj
	return &out, nil
}

// dropField returns msg without its fields numbered num, and whether there
// were any.
func dropField(msg []byte, num protowire.Number) ([]byte, bool, error) {
	out := make([]byte, 0, len(msg))
	dropped := false
	for len(msg) > 0 {
		n2, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, false, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(n2, typ, msg[n:])
		if m < 0 {
			return nil, false, fmt.Errorf("field %d: %w", n2, protowire.ParseError(m))
		}
		if n2 == num {
			dropped = true
		} else {
			out = append(out, msg[:n+m]...)
		}
		msg = msg[n+m:]
	}
	return out, dropped, nil
}

// ResizeSubjects returns the claim plan (a ResizeRecover plan) edits, as it
// was before the edit, and the volume it is bound to, for explaining what
// the controllers do next. The volume is nil when the claim names none or
// it cannot be read; the claim is nil when plan is not of a claim.
func (p Planner) ResizeSubjects(ctx context.Context, r store.Reader, plan *Plan) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	if plan == nil || plan.Before == nil || plan.Before.Obj == nil {
		return nil, nil
	}
	pvc, _ := plan.Before.Obj.Typed.(*corev1.PersistentVolumeClaim)
	if pvc == nil || pvc.Spec.VolumeName == "" {
		return pvc, nil
	}
	cur, err := p.Load(ctx, r, p.Prefix+"/persistentvolumes/"+pvc.Spec.VolumeName, 0)
	if err != nil {
		return pvc, nil
	}
	pv, _ := cur.Obj.Typed.(*corev1.PersistentVolume)
	return pvc, pv
}
