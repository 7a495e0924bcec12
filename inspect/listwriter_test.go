package inspect

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
)

func TestListWriter(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b := openCorpusSnapshot(t, filepath.Join(corpusDir, "etcd-snapshot.db"))
	pvc, err := resource.Lookup("pvc")
	if err != nil {
		t.Fatal(err)
	}
	pods, err := resource.Lookup("pods")
	if err != nil {
		t.Fatal(err)
	}
	claims := Scope{Resource: &pvc, Namespace: "demo"}

	// A claims table reads the volumes, and with -o wide the pods of each
	// namespace; another table reads nothing.
	wide := NewListTable(claims, true, false, false, false, now)
	unread, err := wide.LoadJoins(ctx, b, nil, "/registry", 0)
	if err != nil || unread != 0 || wide.Volumes == nil || wide.Mounts == nil {
		t.Fatalf("LoadJoins, wide: unread %d, volumes %v, mounts set %v, %v", unread, wide.Volumes != nil, wide.Mounts != nil, err)
	}
	narrow := NewListTable(claims, false, false, false, false, now)
	if _, err := narrow.LoadJoins(ctx, b, nil, "/registry", 0); err != nil || narrow.Volumes == nil || narrow.Mounts != nil {
		t.Fatalf("LoadJoins: volumes %v, mounts set %v, %v", narrow.Volumes != nil, narrow.Mounts != nil, err)
	}
	podTable := NewListTable(Scope{Resource: &pods, Namespace: "demo"}, true, false, false, false, now)
	if _, err := podTable.LoadJoins(ctx, b, nil, "/registry", 0); err != nil || podTable.Volumes != nil || podTable.Mounts != nil {
		t.Fatalf("LoadJoins of pods read something: %v", err)
	}

	listed := Listed{ListItem: ListItem{Resource: pvc, Namespace: "demo", Name: "www-web-1", Key: "/registry/persistentvolumeclaims/demo/www-web-1", ModRevision: 6,
		Summary: &codec.Summary{CreationTimestamp: now.Add(-time.Hour)}}, Claim: claim(t, "persistentvolumeclaims__demo__www-web-1__bound.bin")}
	for _, tc := range []struct {
		format string
		rows   []Listed
		check  func(string) bool
	}{
		{"table", []Listed{listed}, func(s string) bool {
			return strings.HasPrefix(s, "NAME ") && strings.Contains(s, "\nwww-web-1 ") && strings.Contains(s, " pv-www-web-1 ")
		}},
		{"table", nil, func(s string) bool { return s == "" }},
		{"json", []Listed{listed}, func(s string) bool {
			var l struct {
				Kind  string `json:"kind"`
				Items []any  `json:"items"`
			}
			return json.Unmarshal([]byte(s), &l) == nil && l.Kind == "List" && len(l.Items) == 1
		}},
		{"yaml", nil, func(s string) bool { return strings.Contains(s, "kind: List") }},
	} {
		var out strings.Builder
		w := NewListWriter(&out, ListFormat{Kind: tc.format}, narrow)
		if w.IsTable() != (tc.format == "table") {
			t.Errorf("%s: IsTable %v", tc.format, w.IsTable())
		}
		for _, r := range tc.rows {
			if err := w.Row(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if !tc.check(out.String()) {
			t.Errorf("%s of %d rows:\n%s", tc.format, len(tc.rows), out.String())
		}
	}
}
