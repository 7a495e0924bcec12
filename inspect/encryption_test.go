package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
)

func TestSecretsInClear(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	s, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plain := corpus(t, "plain/secrets__demo__web-secret.bin")
	c.Put(t, "/registry/secrets/demo/web-secret-enc", corpus(t, "encrypted/secrets__demo__web-secret-enc__aescbc.bin"))
	c.Put(t, "/registry/configmaps/demo/web-config", corpus(t, "plain/configmaps__demo__web-config.bin"))

	for _, tc := range []struct {
		name string
		put  []string // plain Secrets added before the check
		max  int
		want ClearSecrets
	}{
		{"all encrypted", nil, 5, ClearSecrets{Total: 1}},
		{"one in the clear", []string{"/registry/secrets/demo/web-secret"}, 5, ClearSecrets{Total: 2, Clear: 1, Names: []string{"demo/web-secret"}}},
		{"names capped", []string{"/registry/secrets/a/s1", "/registry/secrets/b/s2"}, 2, ClearSecrets{Total: 4, Clear: 3, Names: []string{"a/s1", "b/s2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range tc.put {
				c.Put(t, k, plain)
			}
			got, err := SecretsInClear(ctx, s, "/registry", tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
