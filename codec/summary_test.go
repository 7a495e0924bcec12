package codec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSummarizeMatchesDecode checks the wire-level summary against a full
// decode for every corpus value.
func TestSummarizeMatchesDecode(t *testing.T) {
	for _, bin := range corpusFiles(t) {
		t.Run(corpusName(bin), func(t *testing.T) {
			v := readFile(t, bin)
			s, err := Summarize(v)
			if err != nil {
				t.Fatal(err)
			}
			obj, err := Decode(v)
			if err != nil {
				t.Fatal(err)
			}
			m := obj.Meta
			want := &Summary{Format: obj.Format, APIVersion: obj.GVK.GroupVersion().String(), Kind: obj.GVK.Kind,
				Name: m.Name, Namespace: m.Namespace, UID: string(m.UID), CreationTimestamp: m.CreationTimestamp.UTC(),
				DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds, Finalizers: m.Finalizers, OwnerReferences: len(m.OwnerReferences)}
			if m.DeletionTimestamp != nil {
				want.DeletionTimestamp = m.DeletionTimestamp.UTC()
			}
			if diff := cmp.Diff(want, s); diff != "" {
				t.Fatalf("(-decode +summary):\n%s", diff)
			}
		})
	}
}

// BenchmarkSummarize measures the listing path on the Terminating PVC.
func BenchmarkSummarize(b *testing.B) {
	value := readFile(b, "../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Summarize(value); err != nil {
			b.Fatal(err)
		}
	}
}
