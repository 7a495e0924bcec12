package flows

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestGet: what get reads, for each form of request, against a real etcd.
func TestGet(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	const key = "/registry/configmaps/demo/web-config"
	value := corpus(t, "configmaps__demo__web-config")
	c.Put(t, key, value)
	resp, err := c.Client(t).Put(context.Background(), key, string(value))
	if err != nil {
		t.Fatal(err)
	}
	latest := resp.Header.Revision
	ctx := context.Background()
	s, err := Open(ctx, session.Options{Endpoints: c.Endpoints(), Prefix: "/registry"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rv := func(g Got) string {
		md, _ := g.Content["metadata"].(map[string]any)
		v, _ := md["resourceVersion"].(string)
		return v
	}
	for _, tc := range []struct {
		name     string
		r        GetRequest
		stored   bool   // Stored holds the value
		rv       int64  // the resourceVersion of Content
		err      error  // errors.Is
		option   bool   // an *OptionError
		notFound string // the not-found message names this
	}{
		{name: "latest", r: GetRequest{Key: key}, rv: latest},
		{name: "revision", r: GetRequest{Key: key, Rev: latest - 1}, rv: latest - 1},
		{name: "raw", r: GetRequest{Key: key, Raw: true}, stored: true},
		{name: "raw at a revision", r: GetRequest{Key: key, Rev: latest - 1, Raw: true}, stored: true},
		{name: "not found", r: GetRequest{Key: "/registry/configmaps/demo/none"}, err: store.ErrNotFound, notFound: "configmap none not found in namespace demo"},
		{name: "raw not found", r: GetRequest{Key: "/registry/configmaps/demo/none", Raw: true}, err: store.ErrNotFound, notFound: "configmap none not found in namespace demo"},
		{name: "index without a log", r: GetRequest{Key: key, Index: 3}, option: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			term := &terminal{}
			got, err := s.Get(ctx, term, tc.r)
			switch {
			case tc.option:
				var oe *session.OptionError
				if !errors.As(err, &oe) || !strings.Contains(err.Error(), "give --wal") {
					t.Fatalf("error %v, want an *OptionError asking for --wal", err)
				}
				return
			case tc.err != nil:
				var nf *kubevalue.NotFoundError
				if !errors.Is(err, tc.err) || !errors.As(err, &nf) || !strings.Contains(nf.Error(), tc.notFound) {
					t.Fatalf("error %v, want %v naming %q", err, tc.err, tc.notFound)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if tc.stored {
				if !bytes.Equal(got.Stored, value) || got.Content != nil {
					t.Errorf("got %d stored bytes and content %v, want the stored value only", len(got.Stored), got.Content != nil)
				}
				return
			}
			if got.Stored != nil || got.Content["kind"] != "ConfigMap" {
				t.Fatalf("got stored %q, content %v; want a ConfigMap", got.Stored, got.Content)
			}
			if want := strconv.FormatInt(tc.rv, 10); rv(got) != want {
				t.Errorf("resourceVersion %q, want %q", rv(got), want)
			}
			if term.notes != "" {
				t.Errorf("notes %q, want none", term.notes)
			}
		})
	}
}

// progressLog records what a dump tells its progress.
type progressLog struct {
	started, done bool
	total, n      int64
}

func (p *progressLog) Start(total int64)          { p.started, p.total = true, total }
func (p *progressLog) Update(n, _ int64, _ int64) { p.n = n }
func (p *progressLog) Done()                      { p.done = true }

// TestDump: the records a dump writes and what it says about the rest,
// from a db file and a live etcd.
func TestDump(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	cm := "/registry/configmaps/demo/web-config"
	c.Put(t, cm, corpus(t, "configmaps__demo__web-config"))
	c.Put(t, "/registry/namespaces/demo", corpus(t, "namespaces__-__demo"))
	c.Put(t, "/registry/configmaps/demo/broken", []byte("k8s\x00not protobuf"))
	if _, err := c.Client(t).Delete(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	c.Put(t, cm, corpus(t, "configmaps__demo__web-config"))
	ctx := context.Background()
	live, err := Open(ctx, session.Options{Endpoints: c.Endpoints(), Prefix: "/registry"})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	for _, tc := range []struct {
		name    string
		r       DumpRequest
		records int // lines written
		option  string
	}{
		{name: "all revisions live", r: DumpRequest{AllRevisions: true, PageSize: 10}, option: "--all-revisions needs --db or --wal"},
		{name: "unknown resource", r: DumpRequest{Resource: "nosuchthings", PageSize: 10}, option: "nosuchthings"},
		{name: "namespaces", r: DumpRequest{Resource: "ns", AllNamespaces: true, PageSize: 10}, records: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := live.Dump(ctx, &out, tc.r)
			if tc.option != "" {
				var oe *session.OptionError
				if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.option) || out.Len() != 0 {
					t.Fatalf("error %v, output %q; want an *OptionError naming %q and no output", err, out.String(), tc.option)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(out.String(), "\n"); n != tc.records {
				t.Errorf("%d records, want %d:\n%s", n, tc.records, out.String())
			}
		})
	}
	live.Close()
	c.Stop()

	db := filepath.Join(c.DataDir(0), "member", "snap", "db")
	s, err := Open(ctx, session.Options{DB: db, Prefix: "/registry"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name       string
		r          DumpRequest
		records    int
		incomplete bool
	}{
		// The broken value is written with its error, and the dump is incomplete.
		{name: "configmaps", r: DumpRequest{Resource: "cm", Namespace: "demo", PageSize: 10}, records: 2, incomplete: true},
		{name: "namespace", r: DumpRequest{Resource: "namespaces", AllNamespaces: true, PageSize: 10}, records: 1},
		// Every revision: the configmap's two writes and its deletion.
		{name: "every revision", r: DumpRequest{Resource: "configmaps", Namespace: "demo", AllRevisions: true, PageSize: 10}, records: 4, incomplete: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			p := &progressLog{}
			tc.r.Progress = p
			err := s.Dump(ctx, &out, tc.r)
			if got := errors.Is(err, ErrIncomplete); got != tc.incomplete || (err != nil && !got) {
				t.Fatalf("error %v, want incomplete %v", err, tc.incomplete)
			}
			if tc.incomplete && (!strings.Contains(err.Error(), "their records say why") || Hint(err) == "") {
				t.Errorf("incomplete: %v (hint %q), want it to say the records say why, with a hint", err, Hint(err))
			}
			if n := strings.Count(out.String(), "\n"); n != tc.records {
				t.Errorf("%d records, want %d:\n%s", n, tc.records, out.String())
			}
			if !p.started || !p.done || p.n != int64(tc.records) || (tc.r.AllRevisions != (p.total > 0)) {
				t.Errorf("progress %+v, want started, done, %d records, a total only for every revision", p, tc.records)
			}
		})
	}
	if err := s.Unsettled("", true, true); err != nil {
		t.Errorf("Unsettled without a log: %v", err)
	}
}

// TestDecodeInput: the forms decode reads, the key the decryption is given,
// and the resourceVersion a mod revision sets.
func TestDecodeInput(t *testing.T) {
	value := corpus(t, "configmaps__demo__web-config")
	const key = "/registry/configmaps/demo/web-config"
	etcdctlJSON := fmt.Sprintf(`{"header":{"revision":42},"kvs":[{"key":%q,"value":%q,"mod_revision":42,"create_revision":7,"version":2}]}`,
		base64.StdEncoding.EncodeToString([]byte(key)), base64.StdEncoding.EncodeToString(value))
	refuse := errors.New("cannot decrypt")
	for _, tc := range []struct {
		name    string
		input   []byte
		key     string
		decrypt error
		wantKey string // the key decrypt is given
		rv      string // the resourceVersion of the content
		err     error
	}{
		{name: "raw bytes", input: value},
		{name: "etcdctl's value output", input: append(append([]byte{}, value...), '\n')},
		{name: "etcdctl -w json", input: []byte(etcdctlJSON), wantKey: key, rv: "42"},
		{name: "a key given wins", input: []byte(etcdctlJSON), key: "/registry/configmaps/other/x", wantKey: "/registry/configmaps/other/x", rv: "42"},
		{name: "not decrypted", input: value, decrypt: refuse, err: refuse},
		{name: "empty", input: nil, err: codec.ErrEmpty},
		{name: "not an object", input: []byte("k8s\x00not protobuf"), err: codec.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotKey string
			term := &terminal{}
			content, err := DecodeInput(term, bytes.NewReader(tc.input), tc.key, func(key string, v []byte) ([]byte, error) {
				gotKey = key
				return v, tc.decrypt
			})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if gotKey != tc.wantKey {
				t.Errorf("decrypted under %q, want %q", gotKey, tc.wantKey)
			}
			md, _ := content["metadata"].(map[string]any)
			if rv, _ := md["resourceVersion"].(string); content["kind"] != "ConfigMap" || rv != tc.rv {
				t.Errorf("kind %v, resourceVersion %q; want a ConfigMap with %q", content["kind"], rv, tc.rv)
			}
			if term.notes != "" {
				t.Errorf("notes %q, want none", term.notes)
			}
		})
	}
}
