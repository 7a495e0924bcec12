package inspect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

const corpusDir = "../fixtures/corpus"

func corpus(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ref(t *testing.T, args []string, ns string) resource.Ref {
	t.Helper()
	r, err := resource.Resolver{}.ParseArgs("/registry", args, ns, "")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHistory reads histories from a real etcd: a Secret whose password
// changed (redacted unless asked), a key that never existed, and, after a
// compaction, a key whose start was compacted and one compacted away.
func TestHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	s, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	enc, err := encryption.Load(ctx, filepath.Join(corpusDir, "encryption", "encryption-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	cdc := kubevalue.Codec{Enc: enc}
	put := func(key string, value []byte) {
		t.Helper()
		if _, err := cli.Put(ctx, key, string(value)); err != nil {
			t.Fatal(err)
		}
	}

	secret := ref(t, []string{"secret", "web-secret"}, "demo")
	put(secret.Key, corpus(t, "plain/secrets__demo__web-secret.bin"))
	put(secret.Key, corpus(t, "encrypted/secrets__demo__web-secret__aescbc.bin"))
	cur, err := cdc.Load(ctx, s, secret.Key, 0)
	if err != nil {
		t.Fatal(err)
	}
	changed, err := surgery.Patch{Type: surgery.PatchMerge, Patch: []byte(`{"data":{"password":"bmV3"}}`)}.Transform(cur)
	if err != nil {
		t.Fatal(err)
	}
	put(secret.Key, changed) // in the clear: the identity provider still reads it

	pvc := ref(t, []string{"pvc", "www-web-0"}, "demo")
	put(pvc.Key, corpus(t, "plain/persistentvolumeclaims__demo__www-web-0__pending.bin"))
	put(pvc.Key, corpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin"))
	cm := ref(t, []string{"cm", "web-config"}, "demo")
	put(cm.Key, corpus(t, "plain/configmaps__demo__web-config.bin"))
	if _, err := cli.Delete(ctx, cm.Key); err != nil {
		t.Fatal(err)
	}
	never := ref(t, []string{"secret", "never"}, "demo")

	changes := func(rep *HistoryReport) []string {
		var out []string
		for _, r := range rep.Rows {
			out = append(out, r.Change)
		}
		return out
	}
	check := func(name string, r resource.Ref, show bool, want []string, wantStart string) {
		t.Run(name, func(t *testing.T) {
			rep, err := History(ctx, s, r, HistoryOptions{Codec: cdc, ShowSecrets: show})
			if err != nil {
				t.Fatal(err)
			}
			if got := changes(rep); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !strings.Contains(rep.CompactedStart, wantStart) || (wantStart == "") != (rep.CompactedStart == "") {
				t.Errorf("compacted start %q, want %q", rep.CompactedStart, wantStart)
			}
		})
	}
	check("Secret redacted", secret, false, []string{"created", "content unchanged, now stored encrypted with aescbc key \"key1\"", "data.password changed (12 bytes→3 bytes)"}, "")
	check("Secret shown", secret, true, []string{"created", "content unchanged, now stored encrypted with aescbc key \"key1\"", "data.password czNjcjN0LXBsYWlu→bmV3"}, "")
	check("deleted", cm, false, []string{"created", "deleted"}, "")

	noHistory := func(name string, r resource.Ref, want, wantHint string) {
		t.Run(name, func(t *testing.T) {
			_, err := History(ctx, s, r, HistoryOptions{Codec: cdc})
			var nh *NoHistoryError
			if !errors.As(err, &nh) || !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("err = %v, want a *NoHistoryError matching store.ErrNotFound", err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
			if !strings.Contains(nh.Hint(), wantHint) || (wantHint == "") != (nh.Hint() == "") {
				t.Errorf("hint %q, want %q", nh.Hint(), wantHint)
			}
		})
	}
	t.Run("never existed", func(t *testing.T) {
		_, err := History(ctx, s, never, HistoryOptions{Codec: cdc})
		var nf *kubevalue.NotFoundError
		if !errors.As(err, &nf) || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("err = %v, want a *kubevalue.NotFoundError matching store.ErrNotFound", err)
		}
		if want := "secret never not found in namespace demo"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	})

	resp, err := cli.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	put(pvc.Key, corpus(t, "plain/persistentvolumeclaims__demo__www-web-0__pending.bin"))

	check("compacted start", pvc, false, []string{"first revision held", "-deletionGracePeriodSeconds, -deletionTimestamp, -status.phase"},
		"history before revision 6 was compacted (compaction revision 8); the first revision held is version 2 of the object created at revision 5")
	check("Secret after compaction", secret, false, []string{"first revision held"}, "the first revision held is version 3")
	noHistory("compacted away", cm, "history of configmap web-config in namespace demo: no revision in revision 9, the range the store holds; it was compacted at revision 8, so it may have existed before",
		"taken before revision 8")
	noHistory("never existed, compacted", never, "compacted at revision 8", "taken before revision 8")
}

func TestCompactedStart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   HistoryRow
		compact int64
		want    string
	}{
		{"created", HistoryRow{Revision: 5, Version: 1, CreateRevision: 5}, 9, ""},
		{"created, never compacted", HistoryRow{Revision: 5, Version: 1, CreateRevision: 5}, 0, ""},
		{"later version", HistoryRow{Revision: 7, Version: 3, CreateRevision: 5}, 9,
			"history before revision 7 was compacted (compaction revision 9); the first revision held is version 3 of the object created at revision 5"},
		{"deletion first", HistoryRow{Revision: 12, Deleted: true}, 9,
			"history before revision 10 was compacted (compaction revision 9); the first event held is the deletion at revision 12: the revisions before it are gone"},
		{"deletion first, never compacted", HistoryRow{Revision: 12, Deleted: true}, 0, "the first event held is the deletion at revision 12: the revisions before it are not held"},
		{"later version, never compacted", HistoryRow{Revision: 7, Version: 3, CreateRevision: 5}, 0,
			"the first revision held is version 3 of the object created at revision 5: the versions before it are not held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := compactedStart(tc.first, tc.compact); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
