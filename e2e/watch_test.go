package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestWatchNamesTheManagers writes a ConfigMap through the apiserver as
// two field managers would (a create by one, an update by another, a
// patch by the first), then deletes it: watch, replaying those revisions
// from etcd, and history name the manager of each change from the
// managedFields the apiserver kept, and nothing for the deletion.
func TestWatchNamesTheManagers(t *testing.T) {
	c := sharedCluster(t)
	const ns, name = "watch-e2e", "fought-over"
	c.EnsureNamespace(t, ns)
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"mode": "a"}},
		metav1.CreateOptions{FieldManager: "writer-a"})
	if err != nil {
		t.Fatal(err)
	}
	first := cm.ResourceVersion
	cm.Data["replicas"] = "3"
	if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "writer-b"}); err != nil {
		t.Fatal(err)
	}
	// managedFields times have a resolution of one second: a manager's
	// second change within the second it last changed leaves its entry as
	// it was, and watch then names no manager.
	time.Sleep(1100 * time.Millisecond)
	if _, err = cms.Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"mode":"b"}}`), metav1.PatchOptions{FieldManager: "writer-a"}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Etcd.Get(ctx, "/registry/configmaps/"+ns+"/"+name)
	if err != nil {
		t.Fatal(err)
	}
	last := resp.Header.Revision

	r := c.mustEtcdpvc(t, "watch", "cm", name, "-n", ns, "--rev", first, "--until", strconv.FormatInt(last, 10), "-o", "json")
	type row struct {
		Type    string `json:"type"`
		Change  string `json:"change"`
		Manager *struct {
			Manager string `json:"manager"`
		} `json:"manager"`
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var w row
		if err := json.Unmarshal([]byte(line), &w); err != nil {
			t.Fatalf("watch line %q: %v", line, err)
		}
		m := "-"
		if w.Manager != nil {
			m = w.Manager.Manager
		}
		got = append(got, w.Type+" "+m)
	}
	want := []string{"ADDED writer-a", "MODIFIED writer-b", "MODIFIED writer-a", "DELETED -"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("watch: %v, want %v\n%s", got, want, r)
	}

	h := c.mustEtcdpvc(t, "history", "cm", name, "-n", ns, "-o", "json")
	for _, m := range []string{`"manager": "writer-a"`, `"manager": "writer-b"`} {
		if !strings.Contains(h.stdout, m) {
			t.Errorf("history does not name %s:\n%s", m, h)
		}
	}
}
