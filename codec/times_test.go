package codec

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestReadTimes(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 41, 58, 0, time.UTC)
	renew := metav1.NewMicroTime(at.Add(1234 * time.Microsecond))
	meta := metav1.ObjectMeta{Name: "n", Namespace: "kube-node-lease", CreationTimestamp: metav1.NewTime(at.Add(-time.Hour)),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "a", Time: &metav1.Time{Time: at.Add(-time.Minute)}}, {Manager: "b", Time: &metav1.Time{Time: at}}}}
	holder := "node-1"
	lease := &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}, ObjectMeta: meta,
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renew}}
	event := &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}, ObjectMeta: meta,
		LastTimestamp: metav1.NewTime(at.Add(time.Second)), Source: corev1.EventSource{Component: "kubelet", Host: "node-2"},
		Series: &corev1.EventSeries{LastObservedTime: metav1.NewMicroTime(at.Add(2 * time.Second))}}
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta, Data: map[string][]byte{"k": []byte("v")}}
	for _, format := range []Format{FormatProtobuf, FormatJSON} {
		for _, c := range []struct {
			obj  runtime.Object
			want Times
		}{
			{lease, Times{Kind: "Lease", Created: at.Add(-time.Hour), Managed: at, Renew: renew.Time.UTC(), Holder: holder}},
			{event, Times{Kind: "Event", Created: at.Add(-time.Hour), Managed: at, Reported: at.Add(2 * time.Second), Reporter: "node-2"}},
			{secret, Times{Kind: "Secret", Created: at.Add(-time.Hour), Managed: at}},
		} {
			b, err := EncodeTyped(c.obj, format)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadTimes(b)
			if err != nil {
				t.Fatalf("%v %s: %v", format, c.want.Kind, err)
			}
			if format == FormatJSON {
				// JSON keeps microseconds of a MicroTime too.
				c.want.Renew = c.want.Renew.Truncate(time.Microsecond)
			}
			if got != c.want {
				t.Errorf("%v %s: %+v, want %+v", format, c.want.Kind, got, c.want)
			}
		}
	}
}
