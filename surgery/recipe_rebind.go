package surgery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// SetClaimRef points a PersistentVolume's spec.claimRef at a claim: kind
// PersistentVolumeClaim, apiVersion v1, the claim's namespace, name and
// uid, and no resourceVersion or fieldPath. The volume binder then treats
// the volume as reserved for that claim, and binds the two when the
// claim's spec.volumeName names the volume (see SetVolumeName). It changes
// the object's JSON view with the same rules as Patch.
type SetClaimRef struct {
	Namespace, Name string
	UID             types.UID
	// VolumeUID, when set, is the uid the volume must have: the edit
	// refuses a volume re-created since it was checked.
	VolumeUID types.UID
}

// Transform implements Edit.
func (s SetClaimRef) Transform(cur *kubevalue.Current) ([]byte, error) {
	what := fmt.Sprintf("claimRef of %s %s", cur.Obj.GVK.Kind, cur.Obj.Name())
	pv, err := volumeOf(cur, what)
	if err != nil {
		return nil, err
	}
	if s.VolumeUID != "" && pv.UID != s.VolumeUID {
		return nil, refusef("%s: the volume has uid %s, not %s as checked: it was re-created since; run the command again", what, pv.UID, s.VolumeUID)
	}
	if s.Namespace == "" || s.Name == "" || s.UID == "" {
		return nil, fmt.Errorf("%s: the claim's namespace, name and uid are all needed", what)
	}
	want := codec.CopyContent(cur.Obj.Content)
	setPath(want, map[string]any{
		"kind":       "PersistentVolumeClaim",
		"apiVersion": "v1",
		"namespace":  s.Namespace,
		"name":       s.Name,
		"uid":        string(s.UID),
	}, "spec", "claimRef")
	return applyContent(cur, want, what)
}

// Describe implements Edit.
func (s SetClaimRef) Describe() string {
	return fmt.Sprintf("rebind: set spec.claimRef to PersistentVolumeClaim %s/%s uid %s", s.Namespace, s.Name, s.UID)
}

// SetVolumeName sets a PersistentVolumeClaim's spec.volumeName, which the
// API allows only at creation. It changes the object's JSON view with the
// same rules as Patch.
type SetVolumeName struct {
	Volume string
	// ClaimUID, when set, is the uid the claim must have: the edit refuses
	// a claim re-created since it was checked.
	ClaimUID types.UID
}

// Transform implements Edit.
func (s SetVolumeName) Transform(cur *kubevalue.Current) ([]byte, error) {
	what := fmt.Sprintf("volumeName of %s %s", cur.Obj.GVK.Kind, cur.Obj.Name())
	pvc, err := claimOf(cur, what)
	if err != nil {
		return nil, err
	}
	if s.ClaimUID != "" && pvc.UID != s.ClaimUID {
		return nil, refusef("%s: the claim has uid %s, not %s as checked: it was re-created since; run the command again", what, pvc.UID, s.ClaimUID)
	}
	if s.Volume == "" {
		return nil, fmt.Errorf("%s: no volume name", what)
	}
	want := codec.CopyContent(cur.Obj.Content)
	setPath(want, s.Volume, "spec", "volumeName")
	return applyContent(cur, want, what)
}

// Describe implements Edit.
func (s SetVolumeName) Describe() string {
	return "rebind: set spec.volumeName to " + s.Volume
}

// Rebind is a planned rebind of a PersistentVolume to a
// PersistentVolumeClaim: two writes, to be applied in order, Volume first.
// Either plan may be NoOp when its half is already done.
type Rebind struct {
	// Volume sets the PersistentVolume's spec.claimRef.
	Volume *Plan
	// Claim sets the PersistentVolumeClaim's spec.volumeName.
	Claim *Plan
	// Warnings are about the pair: what the volume binder will make of it,
	// and what forced past a refusal.
	Warnings []string
}

// Plans returns the plans in the order they must be applied.
func (rb *Rebind) Plans() []*Plan { return []*Plan{rb.Volume, rb.Claim} }

// PlanRebind plans pointing PersistentVolume volume at the claim
// namespace/claim, typically a claim re-created with another uid (a
// storage class migration, a claim deleted by mistake while its volume was
// retained): the volume's spec.claimRef gets the claim's uid, and the
// claim's spec.volumeName the volume's name.
//
// It refuses, with an error wrapping ErrRefused, unless force is set, when
// the volume is bound to another live claim (its claimRef names an existing
// claim with that uid, or without a uid), when the claim is bound to
// another volume that names it, and when either is being deleted. It warns
// when the binder would refuse the pair (storage class, size, access
// modes, volume mode) and when the volume's reclaim policy is Delete.
func (c Planner) PlanRebind(ctx context.Context, r store.Reader, volume, namespace, claim string, force bool) (*Rebind, error) {
	what := fmt.Sprintf("rebind PersistentVolume %s to PersistentVolumeClaim %s/%s", volume, namespace, claim)
	pvcCur, err := c.lookup(ctx, r, "persistentvolumeclaims", namespace, claim)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	pvCur, err := c.lookup(ctx, r, "persistentvolumes", "", volume)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	pvc, err := claimOf(pvcCur, what)
	if err != nil {
		return nil, err
	}
	pv, err := volumeOf(pvCur, what)
	if err != nil {
		return nil, err
	}

	var problems, warnings []string
	if terminating(&pvc.ObjectMeta) {
		problems = append(problems, fmt.Sprintf("PersistentVolumeClaim %s/%s is being deleted: once it goes the volume is released (and deleted, with reclaim policy Delete); undelete it first", namespace, claim))
	}
	if terminating(&pv.ObjectMeta) {
		problems = append(problems, fmt.Sprintf("PersistentVolume %s is being deleted", volume))
	}
	if ref := pv.Spec.ClaimRef; ref != nil && ref.Name != "" && (ref.Namespace != namespace || ref.Name != claim) {
		other, err := c.lookup(ctx, r, "persistentvolumeclaims", ref.Namespace, ref.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			warnings = append(warnings, fmt.Sprintf("PersistentVolume %s's claimRef names PersistentVolumeClaim %s/%s, which no longer exists", volume, ref.Namespace, ref.Name))
		case err != nil:
			return nil, fmt.Errorf("%s: check the claim %s/%s the volume is bound to: %w", what, ref.Namespace, ref.Name, err)
		case ref.UID == "" || other.Obj.Meta.UID == ref.UID:
			problems = append(problems, fmt.Sprintf("PersistentVolume %s is bound to the live claim %s/%s (uid %s): rebinding takes the volume and its data away from that claim", volume, ref.Namespace, ref.Name, other.Obj.Meta.UID))
		default:
			warnings = append(warnings, fmt.Sprintf("PersistentVolume %s's claimRef names uid %s, but PersistentVolumeClaim %s/%s has uid %s now: the claim it was bound to is gone", volume, ref.UID, ref.Namespace, ref.Name, other.Obj.Meta.UID))
		}
	}
	if v := pvc.Spec.VolumeName; v != "" && v != volume {
		other, err := c.lookup(ctx, r, "persistentvolumes", "", v)
		switch {
		case errors.Is(err, store.ErrNotFound):
			warnings = append(warnings, fmt.Sprintf("PersistentVolumeClaim %s/%s names PersistentVolume %s, which does not exist", namespace, claim, v))
		case err != nil:
			return nil, fmt.Errorf("%s: check the volume %s the claim names: %w", what, v, err)
		default:
			opv, _ := other.Obj.Typed.(*corev1.PersistentVolume)
			if opv != nil && opv.Spec.ClaimRef != nil && opv.Spec.ClaimRef.Namespace == namespace && opv.Spec.ClaimRef.Name == claim &&
				(opv.Spec.ClaimRef.UID == "" || opv.Spec.ClaimRef.UID == pvc.UID) {
				fate := "Released"
				if opv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
					fate = "Released, and with reclaim policy Delete the volume and its data are deleted"
				}
				problems = append(problems, fmt.Sprintf("PersistentVolumeClaim %s/%s is bound to PersistentVolume %s, whose claimRef names it: rebinding leaves %s %s", namespace, claim, v, v, fate))
			} else {
				warnings = append(warnings, fmt.Sprintf("PersistentVolumeClaim %s/%s names PersistentVolume %s, which is not bound to it", namespace, claim, v))
			}
		}
	}
	if len(problems) > 0 {
		if !force {
			return nil, refusef("%s: %s; --force rebinds anyway", what, strings.Join(problems, "; "))
		}
		for _, p := range problems {
			warnings = append(warnings, "forced: "+p)
		}
	}
	warnings = append(warnings, bindMismatches(pv, pvc)...)
	if pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
		warnings = append(warnings, fmt.Sprintf("PersistentVolume %s has persistentVolumeReclaimPolicy Delete: if the claim is ever deleted, the volume and its data are deleted; consider `kubectl patch pv %s -p '{\"spec\":{\"persistentVolumeReclaimPolicy\":\"Retain\"}}'`", volume, volume))
	}

	rb := &Rebind{Warnings: warnings}
	if rb.Volume, err = c.MakePlan(ctx, r, pvCur.KV.Key, SetClaimRef{Namespace: namespace, Name: claim, UID: pvc.UID, VolumeUID: pv.UID}); err != nil {
		return nil, err
	}
	if rb.Claim, err = c.MakePlan(ctx, r, pvcCur.KV.Key, SetVolumeName{Volume: volume, ClaimUID: pvc.UID}); err != nil {
		return nil, err
	}
	return rb, nil
}

// bindMismatches lists what would make the volume binder refuse to bind
// pvc to pv (it reports VolumeMismatch and leaves the claim Pending), as
// its checkVolumeSatisfyClaim checks.
func bindMismatches(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) []string {
	var out []string
	mismatch := func(format string, args ...any) {
		out = append(out, "the volume binder will not bind them (VolumeMismatch): "+fmt.Sprintf(format, args...))
	}
	if a, b := claimClass(pvc), volumeClass(pv); a != b {
		mismatch("the claim's storage class %q differs from the volume's %q; change one of them to match first", a, b)
	}
	if want, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		have := pv.Spec.Capacity[corev1.ResourceStorage]
		if have.Cmp(want) < 0 {
			mismatch("the claim requests %s but the volume's capacity is %s", want.String(), have.String())
		}
	}
	if a, b := volumeMode(pvc.Spec.VolumeMode), volumeMode(pv.Spec.VolumeMode); a != b {
		mismatch("the claim's volumeMode %s differs from the volume's %s", a, b)
	}
	for _, m := range pvc.Spec.AccessModes {
		if !slices.Contains(pv.Spec.AccessModes, m) {
			mismatch("the claim asks for access mode %s, which the volume does not offer (%v)", m, pv.Spec.AccessModes)
		}
	}
	if a, b := strOrEmpty(pvc.Spec.VolumeAttributesClassName), strOrEmpty(pv.Spec.VolumeAttributesClassName); a != b {
		mismatch("the claim's volumeAttributesClassName %q differs from the volume's %q", a, b)
	}
	return out
}

// betaStorageClassAnnotation is the annotation that named the storage
// class before spec.storageClassName; the binder still honours it.
const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

func claimClass(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[betaStorageClassAnnotation]; ok {
		return c
	}
	return strOrEmpty(pvc.Spec.StorageClassName)
}

func volumeClass(pv *corev1.PersistentVolume) string {
	if c, ok := pv.Annotations[betaStorageClassAnnotation]; ok {
		return c
	}
	return pv.Spec.StorageClassName
}

func volumeMode(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
}

func strOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// VolumeWritten returns the outcome of the volume's write among steps (the
// steps of rb.Plans() written), and whether it was written.
func (rb *Rebind) VolumeWritten(steps []Step) (Outcome, bool) {
	for _, st := range steps {
		if st.Plan == rb.Volume {
			return st.Outcome()
		}
	}
	return Outcome{}, false
}
