package inspect

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestListDocument(t *testing.T) {
	a := ListObject{APIVersion: "v1", Kind: "Pod", Metadata: ListMeta{Name: "a", Namespace: "demo"}}
	b := ListObject{APIVersion: "v1", Kind: "Pod", Metadata: ListMeta{Name: "b", Namespace: "demo"}}
	for _, asJSON := range []bool{true, false} {
		for _, items := range [][]ListObject{nil, {a}, {a, b}} {
			var out strings.Builder
			d := NewListDocument(&out, asJSON)
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
			}
			var err error
			if asJSON {
				err = json.Unmarshal([]byte(out.String()), &list)
			} else {
				err = yaml.Unmarshal([]byte(out.String()), &list)
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
