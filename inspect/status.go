package inspect

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcdpvc/etcdpvc/codec"
)

// StatusOf is the STATUS kubectl shows for a stored pod, namespace,
// claim or volume (plaintext), and whether the object is one: a pod's
// status as kubectl's printer sums it up (PodStatus), the others' phase.
// An object of another kind has none.
func StatusOf(plain []byte) (status string, ok bool, err error) {
	return statusOf(codec.Decode(plain))
}

// statusOf is StatusOf of a decoded object, or of why it was not.
func statusOf(obj *codec.Object, err error) (status string, ok bool, _ error) {
	if err != nil {
		return "", false, err
	}
	switch o := obj.Typed.(type) {
	case *corev1.Pod:
		return PodStatus(o), true, nil
	case *corev1.Namespace:
		return string(o.Status.Phase), true, nil
	case *corev1.PersistentVolumeClaim:
		return string(o.Status.Phase), true, nil
	case *corev1.PersistentVolume:
		return string(o.Status.Phase), true, nil
	}
	return "", false, nil
}

// statusKinds are the core resources whose objects StatusOf gives a
// STATUS.
var statusKinds = map[string]bool{"pods": true, "namespaces": true, "persistentvolumeclaims": true, "persistentvolumes": true}

// PodStatus is the STATUS column kubectl shows for a pod: its phase, or
// the reason an init container or a container gives (Init:0/1,
// ContainerCreating, CrashLoopBackOff, Completed, Error), Terminating once
// deleted. It is kube-apiserver's own table printer (printPod in
// k8s.io/kubernetes/pkg/printers/internalversion, v1.37), which only
// k8s.io/kubernetes holds, on its internal types: ported to v1 types here,
// the STATUS part alone.
func PodStatus(pod *corev1.Pod) string {
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}
	initContainers := make(map[string]*corev1.Container)
	for i := range pod.Spec.InitContainers {
		initContainers[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
	}
	initializing := false
	for i, c := range pod.Status.InitContainerStatuses {
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case restartableInit(initContainers[c.Name]) && c.Started != nil && *c.Started:
			continue
		case c.State.Terminated != nil:
			switch t := c.State.Terminated; {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || podCondition(pod, corev1.PodInitialized) {
		hasRunning, errorReason := false, ""
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := pod.Status.ContainerStatuses[i]
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil:
				switch t := c.State.Terminated; {
				case t.Reason != "":
					reason = t.Reason
				case t.Signal != 0:
					reason = fmt.Sprintf("Signal:%d", t.Signal)
				default:
					reason = fmt.Sprintf("ExitCode:%d", t.ExitCode)
				}
				if c.State.Terminated.ExitCode != 0 {
					errorReason = reason
				}
			case c.Ready && c.State.Running != nil:
				hasRunning = true
			}
		}
		if reason == "Completed" {
			switch {
			case hasRunning && podCondition(pod, corev1.PodReady):
				reason = "Running"
			case errorReason != "":
				reason = errorReason
			case hasRunning:
				reason = "NotReady"
			}
		}
	}
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	switch {
	case pod.DeletionTimestamp != nil && pod.Status.Reason == "NodeLost":
		reason = "Unknown"
	case pod.DeletionTimestamp != nil && !terminal:
		reason = "Terminating"
	}
	return reason
}

// restartableInit reports whether c is a sidecar: an init container whose
// restartPolicy is Always.
func restartableInit(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// podCondition reports whether pod's condition t is True.
func podCondition(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
