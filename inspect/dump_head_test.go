package inspect

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestRecordHead checks appendRecordHead writes what encoding/json writes
// for a record without its object, or declines.
func TestRecordHead(t *testing.T) {
	recs := []DumpRecord{
		{Key: "/registry/pods/demo/web-0", ModRevision: 12, CreateRevision: 3, Version: 4, Lease: 0},
		{Key: "/registry/leases/kube-system/x", ModRevision: 1 << 62, CreateRevision: -1, Version: 0, Lease: 7587, Deleted: true,
			Resource: "leases.coordination.k8s.io", Namespace: "kube-system", Name: "x"},
		{Key: "/registry/secrets/demo/s", Encrypted: `aescbc key "key1"`, Error: "read secret s in namespace demo: <encrypted> & \"stale\"\n\t\x01 \u2028 é"},
		{Key: ""},
	}
	for i, rec := range recs {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
		got, ok := appendRecordHead(nil, &rec)
		if !ok || !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("#%d:\n got %s\nwant %s", i, got, buf.Bytes())
		}
	}
	for _, rec := range []DumpRecord{{Key: "/registry/\xff"}, {Key: "k", Error: "bad \xfe byte"}} {
		if got, ok := appendRecordHead(nil, &rec); ok {
			t.Errorf("%q not declined: %s", rec.Key, got)
		}
	}
}
