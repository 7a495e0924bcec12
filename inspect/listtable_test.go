package inspect

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
)

func TestListTable(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	lookup := func(name string) *resource.Resource {
		r, err := resource.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return &r
	}
	pods, pvc, pv := lookup("pods"), lookup("pvc"), lookup("pv")
	sum := &codec.Summary{Kind: "Pod", UID: "u-1", CreationTimestamp: now.Add(-48 * time.Hour),
		DeletionTimestamp: now.Add(-time.Hour), Finalizers: []string{"f/a", "f/b"}}
	pod := Listed{ListItem: ListItem{Resource: *pods, Namespace: "demo", Name: "web-0", Key: "/registry/pods/demo/web-0",
		ModRevision: 12, CreateRevision: 3, Version: 4, Lease: 255, Summary: sum, Encryption: "identity"}}
	unread := Listed{ListItem: ListItem{Resource: *pvc, Namespace: "demo", Name: "www-web-0", Key: "/registry/persistentvolumeclaims/demo/www-web-0",
		ModRevision: 5, Unread: "Encrypted (secretbox/key1): no key", Encryption: "secretbox/key1"}}
	www1 := claim(t, "persistentvolumeclaims__demo__www-web-1__bound.bin")
	bound := Listed{ListItem: ListItem{Resource: *pvc, Namespace: "demo", Name: "www-web-1", ModRevision: 6,
		Summary: &codec.Summary{CreationTimestamp: now.Add(-time.Hour)}, Encryption: "identity"}, Claim: www1}
	for _, tc := range []struct {
		name  string
		table *ListTable
		rows  []Listed
		want  [][]string
	}{
		{"every resource, every namespace, --terminating", NewListTable(Scope{}, false, false, true, false, now), []Listed{pod},
			[][]string{{"NAMESPACE", "NAME", "KIND", "STATUS", "FINALIZERS", "AGE"}, {"demo", "web-0", "Pod", "Terminating 60m", "f/a,f/b", "2d"}}},
		{"pods of one namespace, wide, keys", NewListTable(Scope{Resource: pods, Namespace: "demo"}, true, true, false, true, now), []Listed{pod},
			[][]string{{"NAME", "STATUS", "FINALIZERS", "AGE", "REVISION", "CREATED", "VERSION", "LEASE", "ENCRYPTION", "UID", "KEY"},
				{"web-0", "Terminating 60m", "f/a,f/b", "2d", "12", "3", "4", "ff", "identity", "u-1", "/registry/pods/demo/web-0"}}},
		{"claims, -A", NewListTable(Scope{Resource: pvc}, false, false, false, false, now), []Listed{unread},
			[][]string{{"NAMESPACE", "NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "AGE"},
				{"demo", "www-web-0", "Encrypted (secretbox/key1): no key", "-", "-", "-", "-", "-"}}},
		{"volumes, wide, etcd", NewListTable(Scope{Resource: pv}, true, true, false, false, now), nil,
			[][]string{{"NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "AGE", "VOLUMEMODE", "FINALIZERS", "REVISION", "ENCRYPTION"}}},
	} {
		got := [][]string{tc.table.Columns()}
		for _, r := range tc.rows {
			got = append(got, tc.table.Row(r))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}

	// MOUNTED BY reads each namespace's pods once; a namespace that cannot
	// be read is warned about and says "?".
	wide := NewListTable(Scope{Resource: pvc, Namespace: "demo"}, true, false, false, false, now)
	var loads []string
	var warned []error
	wide.Mounts = func(ns string) (*Mounts, error) {
		loads = append(loads, ns)
		if ns == "broken" {
			return nil, errors.New("read the pods of namespace broken: no")
		}
		m := &Mounts{Namespace: ns, byClaim: map[string][]string{}}
		m.AddPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "www",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "www-web-1"}}}}}})
		return m, nil
	}
	wide.Warn = func(err error) { warned = append(warned, err) }
	other := bound
	other.Name = "other"
	elsewhere := bound
	elsewhere.Namespace = "broken"
	var mounted []string
	for _, r := range []Listed{bound, other, unread, elsewhere} {
		mounted = append(mounted, wide.Row(r)[8])
	}
	if diff := cmp.Diff([]string{"web-1", "-", "-", "?"}, mounted); diff != "" {
		t.Errorf("MOUNTED BY (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"demo", "broken"}, loads); diff != "" || len(warned) != 1 {
		t.Errorf("pods read for %q (want demo, broken), warnings %v", loads, warned)
	}

	// Sorted claims come in any namespace order: with KeepMounts each
	// namespace's pods are read once.
	loads, warned = nil, nil
	wide.mounted, wide.KeepMounts = nil, true
	for _, r := range []Listed{bound, elsewhere, other, elsewhere, bound} {
		wide.Row(r)
	}
	if diff := cmp.Diff([]string{"demo", "broken"}, loads); diff != "" {
		t.Errorf("KeepMounts: pods read for %q, want demo and broken once", loads)
	}
}
