package inspect

import (
	"encoding/json"
	"testing"
)

// object builds content with the given managedFields entries (manager,
// operation, subresource, time, fields).
func managedObject(t *testing.T, entries ...[5]string) map[string]any {
	t.Helper()
	var mf []any
	for _, e := range entries {
		var fields any
		if err := json.Unmarshal([]byte(e[4]), &fields); err != nil {
			t.Fatal(err)
		}
		m := map[string]any{"manager": e[0], "operation": e[1], "time": e[3], "fieldsV1": fields, "fieldsType": "FieldsV1", "apiVersion": "v1"}
		if e[2] != "" {
			m["subresource"] = e[2]
		}
		mf = append(mf, m)
	}
	return map[string]any{"metadata": map[string]any{"name": "x", "managedFields": mf}}
}

func TestChangeWriter(t *testing.T) {
	kubectl := [5]string{"kubectl-client-side-apply", "Update", "", "2026-12-01T10:00:00Z", `{"f:data":{"f:a":{}}}`}
	kubectl2 := [5]string{"kubectl-client-side-apply", "Update", "", "2026-12-01T10:05:00Z", `{"f:data":{"f:a":{},"f:b":{}}}`}
	kcm := [5]string{"kube-controller-manager", "Update", "", "2026-12-01T10:01:00Z", `{"f:metadata":{"f:labels":{}}}`}
	kubelet := [5]string{"kubelet", "Update", "status", "2026-12-01T10:02:00Z", `{"f:status":{}}`}
	for _, tc := range []struct {
		name      string
		prev, cur map[string]any
		want      string
	}{
		{"a creation: its one entry", nil, managedObject(t, kubectl), "kubectl-client-side-apply"},
		{"a new entry", managedObject(t, kubectl), managedObject(t, kubectl, kcm), "kube-controller-manager"},
		{"a changed entry", managedObject(t, kubectl, kcm), managedObject(t, kubectl2, kcm), "kubectl-client-side-apply"},
		{"a subresource", managedObject(t, kubectl), managedObject(t, kubectl, kubelet), "kubelet (status)"},
		{"of two new entries the newest", managedObject(t), managedObject(t, kcm, kubelet), "kubelet (status)"},
		{"fields taken from another entry, its time kept: not the writer", managedObject(t, kubectl, kcm),
			managedObject(t, [5]string{kubectl[0], kubectl[1], "", kubectl[3], `{}`}, kcm), ""},
		{"two entries with the newest time: not known", managedObject(t),
			managedObject(t, kcm, [5]string{"other", "Update", "", kcm[3], `{}`}), ""},
		{"no entry changed", managedObject(t, kubectl), managedObject(t, kubectl), ""},
		{"no managedFields", map[string]any{}, map[string]any{"metadata": map[string]any{}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if w := changeWriter(tc.prev, tc.cur); w != nil {
				got = w.String()
				if w.Time == nil {
					t.Errorf("no time")
				}
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := (FieldManager{Manager: "kubectl", Operation: "Apply"}).String(); got != "kubectl (apply)" {
		t.Errorf("apply: %q", got)
	}
}
