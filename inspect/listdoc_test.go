package inspect

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestListDocument: a List of no item, one or two, in JSON and YAML, of a
// read at one revision or spanning two (readFromRevision, readToRevision
// after the items).
func TestListDocument(t *testing.T) {
	a := ListObject{APIVersion: "v1", Kind: "Pod", Metadata: ListMeta{Name: "a", Namespace: "demo"}}
	b := ListObject{APIVersion: "v1", Kind: "Pod", Metadata: ListMeta{Name: "b", Namespace: "demo"}}
	for _, asJSON := range []bool{true, false} {
		for i, items := range [][]ListObject{nil, {a}, {a, b}, nil, {a}, {a, b}} {
			spans := i >= 3
			var out strings.Builder
			d := NewListDocument(&out, asJSON)
			if spans {
				d.Spans(7, 42)
			}
			for _, it := range items {
				if err := d.Add(it); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			var list struct {
				APIVersion, Kind string
				Items            []ListObject
				ReadFrom         int64 `json:"readFromRevision"`
				ReadTo           int64 `json:"readToRevision"`
			}
			var err error
			if asJSON {
				err = json.Unmarshal([]byte(out.String()), &list)
			} else {
				err = yaml.Unmarshal([]byte(out.String()), &list)
			}
			if spans != (list.ReadFrom == 7 && list.ReadTo == 42) || !spans && list.ReadFrom+list.ReadTo != 0 {
				t.Errorf("json %v, %d items, spans %v: revisions %d–%d from:\n%s", asJSON, len(items), spans, list.ReadFrom, list.ReadTo, out.String())
			}
			if err != nil || list.Kind != "List" || list.APIVersion != "v1" || len(list.Items) != len(items) {
				t.Errorf("json %v, %d items: %v, %+v from:\n%s", asJSON, len(items), err, list, out.String())
				continue
			}
			for i, it := range list.Items {
				if it.Metadata.Name != items[i].Metadata.Name {
					t.Errorf("json %v: item %d is %q, want %q", asJSON, i, it.Metadata.Name, items[i].Metadata.Name)
				}
			}
		}
	}
}
