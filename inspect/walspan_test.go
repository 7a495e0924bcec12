package inspect

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNewestTime(t *testing.T) {
	at := func(s string) metav1.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return metav1.NewTime(tm)
	}
	t1, t2, t3 := at("2026-11-30T20:00:00Z"), at("2026-11-30T21:00:00Z"), at("2026-11-30T22:00:00Z")
	tests := []struct {
		name string
		meta *metav1.ObjectMeta
		want time.Time
	}{
		{"none", nil, time.Time{}},
		{"created only", &metav1.ObjectMeta{CreationTimestamp: t1}, t1.Time},
		{"the newest managed field", &metav1.ObjectMeta{CreationTimestamp: t1,
			ManagedFields: []metav1.ManagedFieldsEntry{{Time: &t2}, {Time: nil}, {Time: &t1}}}, t2.Time},
		{"a deletion in the future is left out", &metav1.ObjectMeta{CreationTimestamp: t1, DeletionTimestamp: &t3,
			ManagedFields: []metav1.ManagedFieldsEntry{{Time: &t2}}}, t2.Time},
	}
	for _, tc := range tests {
		if got := newestTime(tc.meta); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	lines := map[string]WALSpan{
		"no write read from the log's ends carries a time (values encrypted by a KMS plugin or that cannot be decrypted are not read for it, nor objects without managed fields)": {},
		"object times: 2026-11-30T20:00:00Z (entry 7) is the only dated write read":                                                                                               {FirstIndex: 7, LastIndex: 7, First: t1.Time, Last: t1.Time},
		"object times: from about 2026-11-30T20:00:00Z (entry 7) to 2026-11-30T22:00:00Z (entry 90), 2h0m0s":                                                                      {FirstIndex: 7, LastIndex: 90, First: t1.Time, Last: t3.Time},
	}
	for want, span := range lines {
		if got := span.Line(); got != want {
			t.Errorf("line %q, want %q", got, want)
		}
	}
}
