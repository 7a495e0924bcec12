package surgery

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
)

// ResizeNextSteps explains what the controllers do after resize-recover
// set claim pvc's request to to (pvc and pv as read before the write; pv
// nil when it cannot be read). when starts it: "Now", "Once written", or
// when the edited copy of a db is in use.
func ResizeNextSteps(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, to apiresource.Quantity, when string) string {
	capacity := pvc.Status.Capacity[corev1.ResourceStorage]
	request := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s the claim asks for %s instead of %s, with no allocation recorded:\n", when, to.String(), request.String())
	if pv != nil {
		if have, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok && have.Cmp(to) >= 0 {
			fmt.Fprintf(&b, "  - PersistentVolume %s already has capacity %s: the controller side of the failed expansion went\n"+
				"    through. The resizer finds the volume large enough and only a filesystem resize is left; the\n"+
				"    claim will report %s, not %s. Nothing ever shrinks a volume.\n", pv.Name, have.String(), have.String(), to.String())
		}
	}
	fmt.Fprintf(&b, "  - the external-resizer (the CSI driver's csi-resizer sidecar; kube-controller-manager's expand\n"+
		"    controller for in-tree volumes) sees a request above the capacity %s and starts a new\n"+
		"    expansion to %s, setting the Resizing condition while the driver works;\n", capacity.String(), to.String())
	b.WriteString("  - if the volume also needs its filesystem grown, the resizer sets FileSystemResizePending and the\n" +
		"    kubelet of the node where a pod mounts the claim grows it (online, or when a pod next mounts\n" +
		"    it); status.capacity then becomes the new size and the conditions clear;\n")
	fmt.Fprintf(&b, "  - if the expansion to %s fails too, ControllerResizeError or NodeResizeError comes back: read the\n"+
		"    events with `kubectl describe pvc %s -n %s` and pick a size the storage can give.\n", to.String(), pvc.Name, pvc.Namespace)
	return b.String()
}

// RebindNextSteps explains what the PersistentVolume controller does after
// a rebind of volume to the claim namespace/claim; when starts it, as for
// ResizeNextSteps.
func RebindNextSteps(volume, namespace, claim, when string) string {
	return fmt.Sprintf("\n%s the volume's claimRef and the claim's volumeName name each other: the\n"+
		"PersistentVolume controller in kube-controller-manager binds them (status.phase Bound on both,\n"+
		"annotation pv.kubernetes.io/bind-completed on the claim) at its next sync; check with\n"+
		"`kubectl get pvc %s -n %s` and `kubectl get pv %s`. Pods waiting for the claim then start.\n", when, claim, namespace, volume)
}

// HalfDone describes a rebind that stopped after writing the volume,
// err being the error of the writes (steps): the claim was not written,
// or with ErrUncertain may or may not have been. It returns the lines that
// say what state the pair is in and the way out; ok is false when the
// volume was not written (nothing is half done).
func (rb *Rebind) HalfDone(steps []Step, err error) (lines []string, hint string, ok bool) {
	vol, ok := rb.VolumeWritten(steps)
	if !ok {
		return nil, "", false
	}
	claim := "was NOT written"
	if errors.Is(err, ErrUncertain) {
		claim = "may or may not have been written"
	}
	lines = []string{
		fmt.Sprintf("the rebind is half done: %s was written, %s %s.", rb.Volume.ObjectName(), rb.Claim.ObjectName(), claim),
		"the volume's claimRef now names the claim, but the claim's spec.volumeName may not name the volume;",
		"the binder may still bind a Pending claim to a volume reserved for it, or leave the volume Available.",
	}
	return lines, "finish by running the same rebind again (it plans only what is left), or undo the volume's write with: " + vol.Undo, true
}
