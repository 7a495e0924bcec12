package verify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestSameClusterCannotTell checks that an apiserver that answers, in
// front of an etcd that holds no namespace kube-system to compare with
// (the demo's etcd), is not taken for the apiserver of that etcd:
// nothing is verified, and --verify=always refuses. The apiserver here
// answers only /version.
func TestSameClusterCannotTell(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{})
	st, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, CommandTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer api.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster: {server: " + api.URL + "}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: other\n  context: {cluster: other, user: u}\ncurrent-context: other\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{Auto, Always} {
		var notes []string
		v := New(ctx, Options{Mode: mode, Kubeconfig: Kubeconfig{Paths: []string{kc}}, Reader: st, Codec: &kubevalue.Codec{},
			Note: func(s string) { notes = append(notes, s) }})
		reach, why := v.Reach()
		if reach == Reachable {
			t.Fatalf("%v: the apiserver is taken for the etcd's with no kube-system to compare", mode)
		}
		if !strings.Contains(why, "cannot be told: etcd holds no namespace kube-system") {
			t.Errorf("%v: why = %q", mode, why)
		}
		if got := Decide(mode, reach, Accepted); (mode == Auto) != (got == WriteUnverified) {
			t.Errorf("%v: Decide = %v", mode, got)
		}
		if s := v.Summary(); !strings.HasPrefix(s, "verification: nothing verified: whether apiserver") {
			t.Errorf("%v: Summary = %q", mode, s)
		}
	}
}
