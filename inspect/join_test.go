package inspect

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func claim(t *testing.T, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := DecodeClaim(corpus(t, "plain/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return pvc
}

func volume(t *testing.T, name string) *corev1.PersistentVolume {
	t.Helper()
	pv, err := DecodeVolume(corpus(t, "plain/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

func TestClaimOf(t *testing.T) {
	pending := claim(t, "persistentvolumeclaims__demo__www-web-0__terminating.bin")
	bound := claim(t, "persistentvolumeclaims__demo__www-web-1__bound.bin")
	pv0 := VolumeOf(volume(t, "persistentvolumes__-__pv-www-web-0.bin"))
	pv1 := VolumeOf(volume(t, "persistentvolumes__-__pv-www-web-1__bound.bin"))
	all := NewVolumes()
	all.Add(pv0)
	all.Add(pv1)
	grown := pv1
	grown.Capacity = "10Gi"
	expanding := NewVolumes()
	expanding.Add(grown)
	otherUID := pv0
	otherUID.ClaimUID = "another-incarnation"
	stale := NewVolumes()
	stale.Add(otherUID)
	unread := NewVolumes()
	unread.Unread = 1
	for _, tc := range []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		vols *Volumes
		want Claim
	}{
		{"bound", bound, all, Claim{Phase: "Bound", Volume: "pv-www-web-1", Capacity: "5Gi", AccessModes: "RWO", StorageClass: "local-disks", ReclaimPolicy: "Retain", VolumeMode: "Filesystem"}},
		{"pre-bound through claimRef", pending, all, Claim{Phase: "Pending", Volume: "pv-www-web-0", Capacity: "-", AccessModes: "-", StorageClass: "local-disks", ReclaimPolicy: "Retain", VolumeMode: "Filesystem"}},
		{"claimRef of another incarnation", pending, stale, Claim{Phase: "Pending", Volume: "-", Capacity: "-", AccessModes: "-", StorageClass: "local-disks", ReclaimPolicy: "-", VolumeMode: "Filesystem"}},
		{"volume missing", bound, NewVolumes(), Claim{Phase: "Bound", Volume: "pv-www-web-1(missing)", Capacity: "5Gi", AccessModes: "RWO", StorageClass: "local-disks", ReclaimPolicy: "-", VolumeMode: "Filesystem"}},
		{"volumes unread", bound, unread, Claim{Phase: "Bound", Volume: "pv-www-web-1(unread)", Capacity: "5Gi", AccessModes: "RWO", StorageClass: "local-disks", ReclaimPolicy: "-", VolumeMode: "Filesystem"}},
		{"no volume known, some unread", pending, unread, Claim{Phase: "Pending", Volume: "?", Capacity: "-", AccessModes: "-", StorageClass: "local-disks", ReclaimPolicy: "-", VolumeMode: "Filesystem"}},
		{"expansion under way", bound, expanding, Claim{Phase: "Bound", Volume: "pv-www-web-1", Capacity: "5Gi(pv:10Gi)", AccessModes: "RWO", StorageClass: "local-disks", ReclaimPolicy: "Retain", VolumeMode: "Filesystem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClaimOf(tc.pvc, tc.vols); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestVolumeColumnsOf(t *testing.T) {
	pv := volume(t, "persistentvolumes__-__pv-www-web-1__bound.bin")
	want := VolumeColumns{Capacity: "5Gi", AccessModes: "RWO", ReclaimPolicy: "Retain", Status: "Bound", Claim: "demo/www-web-1", StorageClass: "local-disks", VolumeMode: "Filesystem"}
	if got := VolumeColumnsOf(pv); got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	pv.Status.Phase = corev1.VolumeReleased
	pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("1Ti")}
	if got := VolumeColumnsOf(pv); got.Status != "Released" || got.Capacity != "1Ti" {
		t.Errorf("got %+v, want Released and 1Ti", got)
	}
}

func TestAccessModes(t *testing.T) {
	for _, tc := range []struct {
		in   []corev1.PersistentVolumeAccessMode
		want string
	}{
		{nil, "-"},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, "RWO"},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}, "RWO,ROX,RWX,RWOP"},
	} {
		if got := AccessModes(tc.in); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMounts(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase, vols ...corev1.Volume) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Volumes: vols}, Status: corev1.PodStatus{Phase: phase}}
	}
	claimVol := func(claim string) corev1.Volume {
		return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	}
	m := &Mounts{byClaim: map[string][]string{}}
	m.AddPod(pod("web-0", corev1.PodRunning, claimVol("www-web-0")))
	m.AddPod(pod("job-0", corev1.PodSucceeded, claimVol("www-web-1")))
	m.AddPod(pod("eph", corev1.PodRunning, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}))
	for _, n := range []string{"a", "b", "c", "d"} {
		m.AddPod(pod(n, corev1.PodPending, claimVol("shared")))
	}
	for claim, want := range map[string]string{"www-web-0": "web-0", "www-web-1": "-", "eph-scratch": "eph", "shared": "a,b,c,+1", "none": "-"} {
		if got := m.By(claim); got != want {
			t.Errorf("By(%q) = %q, want %q", claim, got, want)
		}
	}
	m.Unread = 1
	if got := m.By("none"); got != "?" {
		t.Errorf("By with unread pods = %q, want ?", got)
	}
}
