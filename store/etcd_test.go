package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// etcdHangGuard bounds calls that must not hang; it is far above every
// configured timeout and only catches hangs (no timing assertions).
const etcdHangGuard = 60 * time.Second

// etcdConfigFor returns a configuration for c (TLS files included).
func etcdConfigFor(c *etcdtest.Cluster) EtcdConfig {
	cfg := EtcdConfig{Endpoints: c.Endpoints()}
	cfg.CACert, cfg.Cert, cfg.Key = c.TLSFiles()
	return cfg
}

// etcdOpen opens cfg and closes it when t ends.
func etcdOpen(t testing.TB, cfg EtcdConfig) *Etcd {
	t.Helper()
	e, err := OpenEtcd(context.Background(), cfg)
	if err != nil {
		t.Fatalf("OpenEtcd: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// etcdStart starts a single-member cluster and opens it.
func etcdStart(t testing.TB, opts etcdtest.Options) (*etcdtest.Cluster, *Etcd) {
	t.Helper()
	c := etcdtest.Start(t, opts)
	return c, etcdOpen(t, etcdConfigFor(c))
}

// etcdCreate writes key, which must not exist, and returns its revision.
func etcdCreate(t testing.TB, e *Etcd, key string, value []byte) int64 {
	t.Helper()
	rev, err := e.CompareAndSwap(context.Background(), key, 0, value, 0)
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	return rev
}

// etcdListKeys lists prefix and returns the keys.
func etcdListKeys(t testing.TB, e *Etcd, prefix string, opts ListOptions) ([]string, int64) {
	t.Helper()
	var keys []string
	rev, err := e.List(context.Background(), prefix, opts, func(kv *KeyValue) error {
		keys = append(keys, kv.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys, rev
}

// etcdClosedPort returns a 127.0.0.1 address nothing listens on.
func etcdHostPort(endpoint string) string {
	return strings.TrimPrefix(strings.TrimPrefix(endpoint, "https://"), "http://")
}

func TestEtcdConnect(t *testing.T) {
	t.Parallel()
	tlsCluster := etcdtest.Start(t, etcdtest.Options{TLS: true})
	plainCluster := etcdtest.Start(t, etcdtest.Options{})
	ca, cert, key := tlsCluster.TLSFiles()
	otherCA, otherCert, otherKey := etcdtest.UntrustedTLSFiles(t)
	tlsEP := tlsCluster.Endpoints()[0]
	plainEP := plainCluster.Endpoints()[0]
	closed := etcdClosedPort(t)
	// A server that is neither etcd nor TLS (a wrong port).
	web := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(web.Close)
	webAddr := strings.TrimPrefix(web.URL, "http://")

	ok := []struct {
		name string
		cfg  EtcdConfig
	}{
		{"https endpoint", EtcdConfig{Endpoints: []string{tlsEP}, CACert: ca, Cert: cert, Key: key}},
		{"no scheme with certs", EtcdConfig{Endpoints: []string{etcdHostPort(tlsEP)}, CACert: ca, Cert: cert, Key: key}},
		{"skip verify", EtcdConfig{Endpoints: []string{tlsEP}, Cert: cert, Key: key, InsecureSkipTLSVerify: true}},
		{"serializable", EtcdConfig{Endpoints: []string{tlsEP}, CACert: ca, Cert: cert, Key: key, Consistency: Serializable}},
		{"plaintext", EtcdConfig{Endpoints: []string{plainEP}}},
		{"plaintext no scheme", EtcdConfig{Endpoints: []string{etcdHostPort(plainEP)}}},
		{"one dead endpoint of two", EtcdConfig{Endpoints: []string{closed, plainEP}}},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := etcdOpen(t, tt.cfg)
			ctx := context.Background()
			if _, err := e.CompareAndSwap(ctx, "/connect/"+tt.name, 0, []byte("x"), 0); err != nil {
				t.Fatal(err)
			}
			kv, err := e.Get(ctx, "/connect/"+tt.name, 0)
			if err != nil {
				t.Fatal(err)
			}
			if string(kv.Value) != "x" {
				t.Errorf("value = %q", kv.Value)
			}
		})
	}

	fail := []struct {
		name     string
		cfg      EtcdConfig
		contains []string // in the error text
		is       error    // a TLS mismatch the error wraps
	}{
		{"closed port", EtcdConfig{Endpoints: []string{closed}},
			[]string{closed, "connection refused"}, nil},
		{"plaintext to TLS port", EtcdConfig{Endpoints: []string{etcdHostPort(tlsEP)}},
			[]string{etcdHostPort(tlsEP), "the server speaks TLS"}, ErrWantsTLS},
		{"http scheme to TLS port", EtcdConfig{Endpoints: []string{"http://" + etcdHostPort(tlsEP)}},
			[]string{etcdHostPort(tlsEP), "the server speaks TLS"}, ErrWantsTLS},
		{"TLS to plaintext port", EtcdConfig{Endpoints: []string{etcdHostPort(plainEP)}, CACert: ca, Cert: cert, Key: key},
			[]string{etcdHostPort(plainEP), "does not speak TLS"}, ErrNotTLS},
		{"https scheme to plaintext port", EtcdConfig{Endpoints: []string{"https://" + etcdHostPort(plainEP)}},
			[]string{etcdHostPort(plainEP), "does not speak TLS"}, ErrNotTLS},
		{"TLS to an HTTP/1 server", EtcdConfig{Endpoints: []string{"https://" + webAddr}},
			[]string{webAddr, "does not speak TLS (it answered bytes that are no TLS record)"}, ErrNotTLS},
		{"two endpoints, one plaintext spoken TLS to", EtcdConfig{Endpoints: []string{closed, "https://" + etcdHostPort(plainEP)}},
			[]string{closed + ": connect: connection refused", "does not speak TLS"}, ErrNotTLS},
		{"wrong CA", EtcdConfig{Endpoints: []string{tlsEP}, CACert: otherCA, Cert: cert, Key: key},
			[]string{tlsEP, "x509: certificate signed by unknown authority"}, nil},
		{"untrusted client certificate", EtcdConfig{Endpoints: []string{tlsEP}, CACert: ca, Cert: otherCert, Key: otherKey},
			[]string{tlsEP, "tls: unknown certificate authority"}, nil},
		{"no client certificate", EtcdConfig{Endpoints: []string{tlsEP}, CACert: ca},
			[]string{tlsEP, "certificate required"}, nil},
		{"all endpoints dead", EtcdConfig{Endpoints: []string{closed, "http://" + closed}},
			[]string{closed + ": connect: connection refused", "http://" + closed + ": connect: connection refused"}, nil},
	}
	for _, tt := range fail {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			cfg.DialTimeout = 500 * time.Millisecond
			type result struct {
				e   *Etcd
				err error
			}
			done := make(chan result, 1)
			go func() {
				e, err := OpenEtcd(context.Background(), cfg)
				done <- result{e, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(etcdHangGuard):
				t.Fatal("OpenEtcd hangs")
			}
			if r.err == nil {
				r.e.Close()
				t.Fatal("OpenEtcd succeeded")
			}
			err := r.err
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("error does not wrap ErrUnavailable: %v", err)
			}
			var ce *ConnectError
			if !errors.As(err, &ce) {
				t.Fatalf("error is not a *ConnectError: %v", err)
			}
			if diff := cmp.Diff(cfg.Endpoints, ce.Endpoints); diff != "" {
				t.Errorf("ConnectError.Endpoints (-want +got):\n%s", diff)
			}
			if ce.TLS != cfg.TLSEnabled() {
				t.Errorf("ConnectError.TLS = %v", ce.TLS)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			for _, s := range tt.contains {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not contain %q", msg, s)
				}
			}
			for _, mismatch := range []error{ErrNotTLS, ErrWantsTLS} {
				if got := errors.Is(err, mismatch); got != (mismatch == tt.is) {
					t.Errorf("errors.Is(%q, %v) = %v", msg, mismatch, got)
				}
			}
		})
	}

	t.Run("bad config", func(t *testing.T) {
		t.Parallel()
		for _, cfg := range []EtcdConfig{
			{Endpoints: []string{plainEP}, Consistency: "x"},
			{Endpoints: []string{tlsEP}, Cert: cert},
			{Endpoints: []string{tlsEP}, CACert: filepath.Join(t.TempDir(), "missing.crt")},
			{Endpoints: []string{plainEP}, User: "root"},
		} {
			e, err := OpenEtcd(context.Background(), cfg)
			if err == nil {
				e.Close()
				t.Errorf("OpenEtcd(%+v) succeeded", cfg)
				continue
			}
			if errors.Is(err, ErrUnavailable) {
				t.Errorf("configuration error wraps ErrUnavailable: %v", err)
			}
		}
	})
}

func TestEtcdAuth(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	ctx := context.Background()
	if _, err := cli.UserAdd(ctx, "root", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}

	cfg := etcdConfigFor(c)
	cfg.User, cfg.Password = "root", "s3cret"
	e := etcdOpen(t, cfg)
	etcdCreate(t, e, "/registry/authed", []byte("x"))

	// A user who may read only /registry/ connects all the same.
	root := e.Client()
	for _, step := range []func() error{
		func() error { _, err := root.RoleAdd(ctx, "registry-reader"); return err },
		func() error {
			_, err := root.RoleGrantPermission(ctx, "registry-reader", "/registry/", clientv3.GetPrefixRangeEnd("/registry/"), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := root.UserAdd(ctx, "reader", "r3ad"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "reader", "registry-reader"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	cfg.User, cfg.Password = "reader", "r3ad"
	reader := etcdOpen(t, cfg)
	if kv, err := reader.Get(ctx, "/registry/authed", 0); err != nil || string(kv.Value) != "x" {
		t.Errorf("reader Get = %+v, %v", kv, err)
	}

	for name, cfg := range map[string]EtcdConfig{
		"wrong password": {Endpoints: c.Endpoints(), User: "root", Password: "wrong"},
		"no credentials": {Endpoints: c.Endpoints()},
	} {
		e, err := OpenEtcd(ctx, cfg)
		if err == nil {
			e.Close()
			t.Errorf("%s: OpenEtcd succeeded", name)
			continue
		}
		t.Logf("%s: %v", name, err)
		if errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: an auth failure wraps ErrUnavailable: %v", name, err)
		}
		if !strings.Contains(err.Error(), c.Endpoints()[0]) {
			t.Errorf("%s: error does not name the endpoint: %v", name, err)
		}
	}
}

func TestEtcdTLSEnabled(t *testing.T) {
	tests := []struct {
		cfg  EtcdConfig
		want bool
	}{
		{EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}}, false},
		{EtcdConfig{Endpoints: []string{"http://127.0.0.1:2379"}}, false},
		{EtcdConfig{Endpoints: []string{"http://a:2379", "https://b:2379"}}, true},
		{EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}, CACert: "ca.crt"}, true},
		{EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}, Cert: "c", Key: "k"}, true},
		{EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}, InsecureSkipTLSVerify: true}, true},
	}
	for _, tt := range tests {
		if got := tt.cfg.TLSEnabled(); got != tt.want {
			t.Errorf("%+v.TLSEnabled() = %v, want %v", tt.cfg, got, tt.want)
		}
	}
}

func TestEtcdThreeMembers(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, etcdtest.Options{Members: 3, TLS: true})
	ctx := context.Background()
	all := etcdOpen(t, etcdConfigFor(c))
	rev1 := etcdCreate(t, all, "/registry/configmaps/ns/a", []byte("one"))

	// Every member serves the write, linearizable and serializable.
	for i := range 3 {
		for _, consistency := range []string{Linearizable, Serializable} {
			t.Run(fmt.Sprintf("member %d %s", i, consistency), func(t *testing.T) {
				cfg := etcdConfigFor(c)
				cfg.Endpoints = []string{c.ClientURL(i)}
				cfg.Consistency = consistency
				e := etcdOpen(t, cfg)
				var kv *KeyValue
				var err error
				for range 100 { // a serializable read may lag the write briefly
					if kv, err = e.Get(ctx, "/registry/configmaps/ns/a", 0); err == nil || consistency == Linearizable {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				if err != nil {
					t.Fatal(err)
				}
				if string(kv.Value) != "one" || kv.ModRevision != rev1 {
					t.Errorf("Get = %+v, want value one at revision %d", kv, rev1)
				}
				members, err := e.MemberList(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(members) != 3 {
					t.Errorf("MemberList = %+v", members)
				}
			})
		}
	}

	st := all.Status(ctx)
	leaders := 0
	for _, s := range st {
		if s.Err != nil {
			t.Errorf("Status %s: %v", s.Endpoint, s.Err)
		}
		if s.IsLeader() {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("Status reports %d leaders: %+v", leaders, st)
	}

	// Writes go on after the leader stops.
	c.StopMember(c.LeaderIndex(t))
	rev2, err := all.CompareAndSwap(ctx, "/registry/configmaps/ns/a", rev1, []byte("two"), 0)
	if err != nil {
		t.Fatalf("CompareAndSwap after leader stop: %v", err)
	}
	kv, err := all.Get(ctx, "/registry/configmaps/ns/a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(kv.Value) != "two" || kv.ModRevision != rev2 || kv.Version != 2 {
		t.Errorf("Get after leader stop = %+v", kv)
	}
}

func TestEtcdGet(t *testing.T) {
	t.Parallel()
	_, e := etcdStart(t, etcdtest.Options{})
	ctx := context.Background()
	rev1 := etcdCreate(t, e, "/k", []byte("v1"))
	rev2, err := e.CompareAndSwap(ctx, "/k", rev1, []byte("v2"), 0)
	if err != nil {
		t.Fatal(err)
	}
	empty := etcdCreate(t, e, "/empty", nil)

	tests := []struct {
		name    string
		key     string
		rev     int64
		want    *KeyValue
		wantErr error
	}{
		{"latest", "/k", 0, &KeyValue{Key: "/k", Value: []byte("v2"), CreateRevision: rev1, ModRevision: rev2, Version: 2}, nil},
		{"past revision", "/k", rev1, &KeyValue{Key: "/k", Value: []byte("v1"), CreateRevision: rev1, ModRevision: rev1, Version: 1}, nil},
		{"empty value", "/empty", 0, &KeyValue{Key: "/empty", Value: []byte{}, CreateRevision: empty, ModRevision: empty, Version: 1}, nil},
		{"missing", "/missing", 0, nil, ErrNotFound},
		{"before creation", "/k", rev1 - 1, nil, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Get(ctx, tt.key, tt.rev)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Get error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Get (-want +got):\n%s", diff)
			}
		})
	}

	if _, err := e.Client().Compact(ctx, rev2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(ctx, "/k", rev1); !errors.Is(err, ErrCompacted) {
		t.Errorf("Get at compacted revision: %v, want ErrCompacted", err)
	}
	if _, err := e.List(ctx, "/", ListOptions{Revision: rev1}, func(*KeyValue) error { return nil }); !errors.Is(err, ErrCompacted) {
		t.Errorf("List at compacted revision: %v, want ErrCompacted", err)
	}
	info, err := e.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.CompactRevision != rev2 || info.Revision != empty || !strings.Contains(info.Description, e.Endpoints()[0]) {
		t.Errorf("Info = %+v, want compact revision %d, revision %d", info, rev2, empty)
	}
}

func TestEtcdInfoNoCompaction(t *testing.T) {
	t.Parallel()
	_, e := etcdStart(t, etcdtest.Options{})
	rev := etcdCreate(t, e, "/a", []byte("a"))
	info, err := e.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Revision != rev || info.CompactRevision != 0 {
		t.Errorf("Info = %+v, want revision %d, no compaction", info, rev)
	}
}

// TestEtcdListPaging pages through more keys than a page holds, with both
// ways of reading a page: RangeStream (etcd ≥ 3.7) and the unary Range an
// older etcd gets.
func TestEtcdListPaging(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name  string
		unary bool
	}{{"stream", false}, {"unary-range", true}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			testListPaging(t, mode.unary)
		})
	}
}

func testListPaging(t *testing.T, unary bool) {
	c, e := etcdStart(t, etcdtest.Options{})
	e.noStream.Store(unary)
	ctx := context.Background()
	const n = 1234
	const prefix = "/registry/configmaps/paging/"
	var want []string
	cli := e.Client()
	for i := 0; i < n; i += 100 {
		txn := cli.Txn(ctx)
		var ops []clientv3.Op
		for j := i; j < min(i+100, n); j++ {
			k := fmt.Sprintf("%sk%05d", prefix, j)
			want = append(want, k)
			ops = append(ops, clientv3.OpPut(k, strconv.Itoa(j)))
		}
		if _, err := txn.Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// Neighbours outside the range.
	c.Put(t, "/registry/configmaps/paging", []byte("no"))
	c.Put(t, "/registry/configmaps/paging0", []byte("no"))
	c.Put(t, "/registry/configmaps/pagingz/x", []byte("no"))
	before, err := e.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// While the list runs, every 100th key writes new keys that sort into
	// later pages and changes a later key; the pinned pages see none of it.
	var got []string
	var writes atomic.Int64
	rev, err := e.List(ctx, prefix, ListOptions{PageSize: 100}, func(kv *KeyValue) error {
		i := len(got)
		got = append(got, kv.Key)
		if want := strconv.Itoa(i); string(kv.Value) != want {
			return fmt.Errorf("%s = %q, want %q", kv.Key, kv.Value, want)
		}
		if kv.ModRevision > before.Revision {
			return fmt.Errorf("%s: mod revision %d after the list started", kv.Key, kv.ModRevision)
		}
		if i%100 == 0 { // through another client, between two pages
			c.Put(t, fmt.Sprintf("%sk%05da-new", prefix, min(i+150, n-1)), []byte("new"))
			c.Put(t, fmt.Sprintf("%sk%05d", prefix, min(i+250, n-1)), []byte("changed"))
			writes.Add(2)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rev != before.Revision {
		t.Errorf("List revision = %d, want %d", rev, before.Revision)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List keys (-want +got):\n%s", diff)
	}
	if writes.Load() == 0 {
		t.Fatal("no concurrent writes happened")
	}

	// A fresh list sees the new keys; one pinned to the old revision does
	// not; keys only leaves values out.
	now, _ := etcdListKeys(t, e, prefix, ListOptions{PageSize: 7})
	if len(now) <= n {
		t.Errorf("fresh List = %d keys, want more than %d", len(now), n)
	}
	var values int
	old, oldRev := etcdListKeys(t, e, prefix, ListOptions{Revision: before.Revision, PageSize: 1000})
	if oldRev != before.Revision {
		t.Errorf("List at revision %d returned revision %d", before.Revision, oldRev)
	}
	if diff := cmp.Diff(want, old); diff != "" {
		t.Errorf("List at old revision (-want +got):\n%s", diff)
	}
	var keys []string
	if _, err := e.List(ctx, prefix, ListOptions{Revision: before.Revision, KeysOnly: true}, func(kv *KeyValue) error {
		keys = append(keys, kv.Key)
		if kv.Value != nil {
			values++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, keys); diff != "" || values != 0 {
		t.Errorf("KeysOnly: %d values; keys (-want +got):\n%s", values, diff)
	}

	// fn's error stops the list and is returned.
	stop := errors.New("stop")
	calls := 0
	_, err = e.List(ctx, prefix, ListOptions{PageSize: 10}, func(*KeyValue) error {
		calls++
		if calls == 15 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 15 {
		t.Errorf("List with failing fn: %d calls, error %v", calls, err)
	}
}

func TestEtcdListPrefixes(t *testing.T) {
	t.Parallel()
	c, e := etcdStart(t, etcdtest.Options{TLS: true})
	for _, k := range []string{
		"/registry/pods/default/a",
		"/registry/pods/default/b",
		"/registry/pods/default-2/a",
		"/registry/pods/default",
		"/registry/pods/defaultx/a",
		"/registry/pods/kube-system/a",
		"/registry/podsx/default/a",
	} {
		c.Put(t, k, []byte(k))
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"/registry/pods/default/", []string{"/registry/pods/default/a", "/registry/pods/default/b"}},
		{"/registry/pods/default-2/", []string{"/registry/pods/default-2/a"}},
		{"/registry/pods/", []string{
			"/registry/pods/default", "/registry/pods/default-2/a", "/registry/pods/default/a",
			"/registry/pods/default/b", "/registry/pods/defaultx/a", "/registry/pods/kube-system/a",
		}},
		{"/registry/nodes/", nil},
		{"", []string{
			"/registry/pods/default", "/registry/pods/default-2/a", "/registry/pods/default/a",
			"/registry/pods/default/b", "/registry/pods/defaultx/a", "/registry/pods/kube-system/a",
			"/registry/podsx/default/a",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			for _, pageSize := range []int64{1, 2, 0} {
				got, _ := etcdListKeys(t, e, tt.prefix, ListOptions{PageSize: pageSize})
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("page size %d (-want +got):\n%s", pageSize, diff)
				}
			}
		})
	}
	for _, prefix := range []string{"/registry/pods/default", "/registry/pods/default-"} {
		called := false
		_, err := e.List(context.Background(), prefix, ListOptions{}, func(*KeyValue) error { called = true; return nil })
		if err == nil || called || !strings.Contains(err.Error(), `must end in "/"`) {
			t.Errorf("List(%q): called %v, error %v; want a rejection", prefix, called, err)
		}
	}
}

func TestEtcdCorpusValues(t *testing.T) {
	t.Parallel()
	_, e := etcdStart(t, etcdtest.Options{TLS: true})
	ctx := context.Background()
	files, err := filepath.Glob("../fixtures/corpus/plain/*.bin")
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus: %v, %d files", err, len(files))
	}
	want := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		key := "/registry/corpus/" + strings.TrimSuffix(filepath.Base(f), ".bin")
		want[key] = b
		etcdCreate(t, e, key, b)
	}
	for key, b := range want {
		kv, err := e.Get(ctx, key, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(kv.Value, b) {
			t.Errorf("Get %s: value differs (%d bytes, want %d)", key, len(kv.Value), len(b))
		}
	}
	got := map[string][]byte{}
	if _, err := e.List(ctx, "/registry/corpus/", ListOptions{PageSize: 3}, func(kv *KeyValue) error {
		got[kv.Key] = kv.Value
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List values (-want +got):\n%s", diff)
	}
}

func TestEtcdCompareAndSwap(t *testing.T) {
	t.Parallel()
	_, e := etcdStart(t, etcdtest.Options{})
	ctx := context.Background()

	rev1, err := e.CompareAndSwap(ctx, "/cas", 0, []byte("v1"), 0)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	rev2, err := e.CompareAndSwap(ctx, "/cas", rev1, []byte("v2"), 0)
	if err != nil {
		t.Fatalf("swap: %v", err)
	}
	if rev2 <= rev1 {
		t.Errorf("swap revision %d after %d", rev2, rev1)
	}
	current := &KeyValue{Key: "/cas", Value: []byte("v2"), CreateRevision: rev1, ModRevision: rev2, Version: 2}

	conflicts := []struct {
		name   string
		key    string
		expect int64
		want   *ConflictError
	}{
		{"stale revision", "/cas", rev1, &ConflictError{Key: "/cas", Expected: rev1, Current: rev2, CurrentValue: current}},
		{"create over existing key", "/cas", 0, &ConflictError{Key: "/cas", Expected: 0, Current: rev2, CurrentValue: current}},
		{"future revision", "/cas", rev2 + 100, &ConflictError{Key: "/cas", Expected: rev2 + 100, Current: rev2, CurrentValue: current}},
		{"missing key", "/gone", rev1, &ConflictError{Key: "/gone", Expected: rev1}},
	}
	for _, tt := range conflicts {
		t.Run(tt.name, func(t *testing.T) {
			rev, err := e.CompareAndSwap(ctx, tt.key, tt.expect, []byte("lost"), 0)
			if !errors.Is(err, ErrConflict) || rev != 0 {
				t.Fatalf("CompareAndSwap = %d, %v; want a conflict", rev, err)
			}
			var ce *ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("error is not a *ConflictError: %T", err)
			}
			if diff := cmp.Diff(tt.want, ce); diff != "" {
				t.Errorf("ConflictError (-want +got):\n%s", diff)
			}
		})
	}
	if kv, err := e.Get(ctx, "/cas", 0); err != nil || !bytes.Equal(kv.Value, []byte("v2")) {
		t.Errorf("after conflicts: %+v, %v; want v2 untouched", kv, err)
	}
	if _, err := e.Get(ctx, "/gone", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("conflicting CAS created /gone: %v", err)
	}
}

// TestEtcdCompareAndSwapTooLarge: a value etcd (1.5 MiB) or the client (2
// MiB) refuses by its size fails with ErrTooLarge, never as an unknown
// outcome, and is not written.
func TestEtcdCompareAndSwapTooLarge(t *testing.T) {
	t.Parallel()
	_, e := etcdStart(t, etcdtest.Options{})
	ctx := context.Background()
	for _, size := range []int{MaxRequestBytes, 2*1024*1024 + 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			_, err := e.CompareAndSwap(ctx, "/big", 0, bytes.Repeat([]byte("x"), size), 0)
			if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrUnavailable) {
				t.Fatalf("CompareAndSwap(%d bytes) = %v, want ErrTooLarge", size, err)
			}
			if _, err := e.Get(ctx, "/big", 0); !errors.Is(err, ErrNotFound) {
				t.Fatalf("after a refused write: %v", err)
			}
		})
	}
}

func TestEtcdCompareAndSwapLease(t *testing.T) {
	t.Parallel()
	_, e := etcdStart(t, etcdtest.Options{})
	ctx := context.Background()
	cli := e.Client()

	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	id := int64(lease.ID)
	rev1, err := e.CompareAndSwap(ctx, "/leased", 0, []byte("v1"), id)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := e.Get(ctx, "/leased", 0)
	if err != nil {
		t.Fatal(err)
	}
	if kv.Lease != id {
		t.Fatalf("lease after create = %x, want %x", kv.Lease, id)
	}
	// The edit keeps the lease it was given.
	rev2, err := e.CompareAndSwap(ctx, "/leased", rev1, []byte("v2"), kv.Lease)
	if err != nil {
		t.Fatal(err)
	}
	kv, err = e.Get(ctx, "/leased", 0)
	if err != nil {
		t.Fatal(err)
	}
	if kv.Lease != id || kv.ModRevision != rev2 {
		t.Fatalf("after CAS: %+v, want lease %x at %d", kv, id, rev2)
	}
	ttl, err := cli.TimeToLive(ctx, lease.ID, clientv3.WithAttachedKeys())
	if err != nil {
		t.Fatal(err)
	}
	if len(ttl.Keys) != 1 || string(ttl.Keys[0]) != "/leased" {
		t.Errorf("lease keys = %q, want [/leased]", ttl.Keys)
	}

	// Revoking the lease deletes the key; a CAS naming the revoked lease
	// fails loudly and writes nothing.
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(ctx, "/leased", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("after revoke: %v, want ErrNotFound", err)
	}
	_, err = e.CompareAndSwap(ctx, "/leased", 0, []byte("v3"), id)
	if !errors.Is(err, ErrLeaseNotFound) {
		t.Errorf("CAS with revoked lease: %v, want ErrLeaseNotFound", err)
	}
	if _, err := e.Get(ctx, "/leased", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("CAS with revoked lease wrote the key: %v", err)
	}

	// A lease that runs out deletes the key it was kept on.
	short, err := cli.Grant(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := e.CompareAndSwap(ctx, "/short", 0, []byte("v1"), int64(short.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CompareAndSwap(ctx, "/short", r1, []byte("v2"), int64(short.ID)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(etcdHangGuard)
	for {
		_, err := e.Get(ctx, "/short", 0)
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("key outlived its 1s lease")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestEtcdHistory(t *testing.T) {
	t.Parallel()
	c, e := etcdStart(t, etcdtest.Options{})
	ctx := context.Background()
	cli := e.Client()
	const key = "/registry/pods/default/web-0"

	r1 := etcdCreate(t, e, key, []byte("a"))
	c.Put(t, "/registry/pods/default/web-00", []byte("neighbour"))
	r2, err := e.CompareAndSwap(ctx, key, r1, []byte("b"), 0)
	if err != nil {
		t.Fatal(err)
	}
	del, err := cli.Delete(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	r3 := del.Header.Revision
	r4 := etcdCreate(t, e, key, []byte("c"))
	c.Put(t, "/other", []byte("later")) // the store moves past the key's last write
	info0, err := e.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}

	history := func(key string) ([]Event, HistoryInfo) {
		t.Helper()
		var evs []Event
		info, err := e.History(ctx, key, func(ev Event) error {
			evs = append(evs, ev)
			return nil
		})
		if err != nil {
			t.Fatalf("History(%s): %v", key, err)
		}
		return evs, info
	}

	all := []Event{
		{KV: KeyValue{Key: key, Value: []byte("a"), CreateRevision: r1, ModRevision: r1, Version: 1}},
		{KV: KeyValue{Key: key, Value: []byte("b"), CreateRevision: r1, ModRevision: r2, Version: 2}},
		{KV: KeyValue{Key: key, ModRevision: r3}, Deleted: true},
		{KV: KeyValue{Key: key, Value: []byte("c"), CreateRevision: r4, ModRevision: r4, Version: 1}},
	}
	evs, info := history(key)
	if diff := cmp.Diff(all, evs); diff != "" {
		t.Errorf("History (-want +got):\n%s", diff)
	}
	if want := (HistoryInfo{Revision: info0.Revision}); info != want {
		t.Errorf("HistoryInfo = %+v, want %+v", info, want)
	}

	if evs, info := history("/never"); len(evs) != 0 || info.Revision != info0.Revision {
		t.Errorf("History of a missing key = %+v, %+v", evs, info)
	}

	// Compacting at r2 keeps r2 (the key's state then) and everything after.
	if _, err := cli.Compact(ctx, r2); err != nil {
		t.Fatal(err)
	}
	evs, info = history(key)
	if diff := cmp.Diff(all[1:], evs); diff != "" {
		t.Errorf("History after compaction at %d (-want +got):\n%s", r2, diff)
	}
	if want := (HistoryInfo{CompactRevision: r2, Revision: info0.Revision}); info != want {
		t.Errorf("HistoryInfo = %+v, want %+v", info, want)
	}

	// Compacting between two writes keeps the older one: it is the key's
	// value at the compact revision.
	r5, err := e.CompareAndSwap(ctx, key, r4, []byte("d"), 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Put(t, "/other", []byte("later still"))
	c.Put(t, "/gone", []byte("x"))
	if _, err := cli.Delete(ctx, "/gone"); err != nil {
		t.Fatal(err)
	}
	r6, err := e.CompareAndSwap(ctx, key, r5, []byte("e"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, r5+1); err != nil {
		t.Fatal(err)
	}
	evs, info = history(key)
	want := []Event{
		{KV: KeyValue{Key: key, Value: []byte("d"), CreateRevision: r4, ModRevision: r5, Version: 2}},
		{KV: KeyValue{Key: key, Value: []byte("e"), CreateRevision: r4, ModRevision: r6, Version: 3}},
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("History after compaction at %d (-want +got):\n%s", r5+1, diff)
	}
	if want := (HistoryInfo{CompactRevision: r5 + 1, Revision: r6}); info != want {
		t.Errorf("HistoryInfo = %+v, want %+v", info, want)
	}

	// Compacting at the current revision leaves only the key's value.
	if _, err := cli.Compact(ctx, r6); err != nil {
		t.Fatal(err)
	}
	evs, info = history(key)
	if diff := cmp.Diff(want[1:], evs); diff != "" {
		t.Errorf("History after compaction at the current revision (-want +got):\n%s", diff)
	}
	if want := (HistoryInfo{CompactRevision: r6, Revision: r6}); info != want {
		t.Errorf("HistoryInfo = %+v, want %+v", info, want)
	}
	// A key written once long before the compaction keeps that revision;
	// one deleted before it has none left.
	if evs, _ := history("/registry/pods/default/web-00"); len(evs) != 1 || string(evs[0].KV.Value) != "neighbour" {
		t.Errorf("History of the neighbour = %+v, want its one revision", evs)
	}
	if evs, info := history("/gone"); len(evs) != 0 || info.CompactRevision != r6 {
		t.Errorf("History of a deleted key = %+v, %+v; want none", evs, info)
	}
}

func TestEtcdHistoryManyRevisions(t *testing.T) {
	t.Parallel()
	c, e := etcdStart(t, etcdtest.Options{})
	ctx := context.Background()
	// More revisions than the server sends per watch batch (1000), with
	// other keys' writes interleaved.
	const n = 1500
	rev := int64(0)
	for i := range n {
		var err error
		if rev, err = e.CompareAndSwap(ctx, "/hot", rev, []byte(strconv.Itoa(i)), 0); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			c.Put(t, "/noise", []byte(strconv.Itoa(i)))
		}
	}
	var got []int64
	info, err := e.History(ctx, "/hot", func(ev Event) error {
		if want := strconv.Itoa(len(got)); string(ev.KV.Value) != want || ev.KV.Version != int64(len(got)+1) {
			return fmt.Errorf("event %d: %+v", len(got), ev.KV)
		}
		got = append(got, ev.KV.ModRevision)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n || got[n-1] != rev || info.Revision != rev {
		t.Errorf("History: %d events, last at %d, info %+v; want %d, last at %d", len(got), got[len(got)-1], info, n, rev)
	}
}

// TestEtcdCompareAndSwapRace races a read-modify-CAS loop against a writer
// incrementing the same counter with its own CAS loop: every round either
// wins or reports a conflict, and no increment is lost.
func TestEtcdCompareAndSwapRace(t *testing.T) {
	t.Parallel()
	c, e := etcdStart(t, etcdtest.Options{})
	other := etcdOpen(t, etcdConfigFor(c))
	// No cancellation: a write cut short has an unknown outcome, which
	// would make the count ambiguous. The writer stops between rounds.
	ctx := context.Background()
	var stop atomic.Bool
	const key = "/counter"
	etcdCreate(t, e, key, []byte("0"))

	increment := func(s *Etcd) (won bool, err error) {
		kv, err := s.Get(ctx, key, 0)
		if err != nil {
			return false, err
		}
		n, err := strconv.Atoi(string(kv.Value))
		if err != nil {
			return false, err
		}
		_, err = s.CompareAndSwap(ctx, key, kv.ModRevision, []byte(strconv.Itoa(n+1)), 0)
		var ce *ConflictError
		switch {
		case err == nil:
			return true, nil
		case errors.As(err, &ce):
			if ce.Current <= kv.ModRevision || ce.CurrentValue == nil {
				return false, fmt.Errorf("conflict reports %+v after reading %d", ce, kv.ModRevision)
			}
			return false, nil
		}
		return false, err
	}

	var writerWins atomic.Int64
	writerErr := make(chan error, 1)
	go func() {
		for !stop.Load() {
			won, err := increment(other)
			if err != nil {
				writerErr <- err
				return
			}
			if won {
				writerWins.Add(1)
			}
		}
		writerErr <- nil
	}()

	const rounds = 1000
	var wins, conflicts int64
	for range rounds {
		won, err := increment(e)
		if err != nil {
			stop.Store(true)
			<-writerErr
			t.Fatal(err)
		}
		if won {
			wins++
		} else {
			conflicts++
		}
	}
	stop.Store(true)
	if err := <-writerErr; err != nil {
		t.Fatal(err)
	}
	kv, err := e.Get(context.Background(), key, 0)
	if err != nil {
		t.Fatal(err)
	}
	final, _ := strconv.Atoi(string(kv.Value))
	if wins+conflicts != rounds {
		t.Errorf("%d wins + %d conflicts != %d rounds", wins, conflicts, rounds)
	}
	if lost := wins + writerWins.Load() - int64(final); lost != 0 {
		t.Errorf("lost updates: %d (wins %d + writer %d, counter %d)", lost, wins, writerWins.Load(), final)
	}
	if int64(final) != kv.Version-1 {
		t.Errorf("counter %d after %d writes", final, kv.Version-1)
	}
	t.Logf("%d wins, %d conflicts, writer %d wins", wins, conflicts, writerWins.Load())
}

func TestEtcdTimeouts(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, etcdtest.Options{Members: 3})
	cfg := etcdConfigFor(c)
	cfg.Endpoints = []string{c.ClientURL(0)}
	cfg.CommandTimeout = 300 * time.Millisecond
	e := etcdOpen(t, cfg)
	etcdCreate(t, e, "/k", []byte("v"))

	// Member 0 alone has no quorum: linearizable calls fail with
	// ErrUnavailable, each bounded by CommandTimeout, instead of hanging.
	c.StopMember(1)
	c.StopMember(2)
	ctx, cancel := context.WithTimeout(context.Background(), etcdHangGuard)
	defer cancel()
	calls := map[string]func() error{
		"get": func() error { _, err := e.Get(ctx, "/k", 0); return err },
		"list": func() error {
			_, err := e.List(ctx, "/", ListOptions{}, func(*KeyValue) error { return nil })
			return err
		},
		"history": func() error {
			_, err := e.History(ctx, "/k", func(Event) error { return nil })
			return err
		},
		"cas": func() error { _, err := e.CompareAndSwap(ctx, "/k", 0, nil, 0); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s without quorum: %v, want ErrUnavailable", name, err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("calls hung")
	}

	// A serializable read still answers from the member's own store.
	cfg.Consistency = Serializable
	cfg.CommandTimeout = 0 // the default: a loaded test machine is slow
	s := etcdOpen(t, cfg)
	kv, err := s.Get(ctx, "/k", 0)
	if err != nil || string(kv.Value) != "v" {
		t.Errorf("serializable Get without quorum = %+v, %v", kv, err)
	}
	var evs []Event
	if _, err := s.History(ctx, "/k", func(ev Event) error { evs = append(evs, ev); return nil }); err != nil || len(evs) != 1 {
		t.Errorf("serializable History without quorum = %+v, %v", evs, err)
	}
}

// BenchmarkList lists ETCDPVC_BENCH_KEYS keys (default 20000) of corpus
// values from a real etcd, reporting objects/s.
func BenchmarkList(b *testing.B) {
	n := 20000
	if s := os.Getenv("ETCDPVC_BENCH_KEYS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			b.Fatalf("ETCDPVC_BENCH_KEYS=%q: want a positive number", s)
		}
	}
	files, err := filepath.Glob("../fixtures/corpus/plain/*.bin")
	if err != nil || len(files) == 0 {
		b.Fatalf("corpus: %v, %d files", err, len(files))
	}
	var values []string
	for _, f := range files {
		v, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		values = append(values, string(v))
	}
	_, e := etcdStart(b, etcdtest.Options{})
	ctx := context.Background()
	const prefix = "/registry/bench/"
	for i := 0; i < n; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(i+100, n); j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%sns-%d/obj-%07d", prefix, j%50, j), values[j%len(values)]))
		}
		if _, err := e.Client().Txn(ctx).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
	}
	// Both ways of reading a page, on the same data: RangeStream (etcd ≥
	// 3.7) and unary Range, which makes the server count the rest of the
	// range on every page.
	for _, mode := range []struct {
		name  string
		unary bool
	}{{"stream", false}, {"unary-range", true}} {
		b.Run(mode.name, func(b *testing.B) {
			e.noStream.Store(mode.unary)
			defer e.noStream.Store(false)
			var total int64
			for b.Loop() {
				count := 0
				if _, err := e.List(ctx, prefix, ListOptions{}, func(*KeyValue) error {
					count++
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				if count != n {
					b.Fatalf("listed %d keys, want %d", count, n)
				}
				total += int64(count)
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}
