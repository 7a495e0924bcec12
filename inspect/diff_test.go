package inspect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// diffConfig is the corpus' EncryptionConfiguration with a new key first
// for secrets (aesgcm key2): what a rotation to a new key writes with.
const diffConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aesgcm:
      keys:
      - {name: key2, secret: c2l4dGVlbi1ieXRlLWtleS1mb3ItdGVzdGluZyEhISE=}
  - aescbc:
      keys:
      - {name: key1, secret: JwZyTNKn26qbebTfacnDRp5J4Ymoc6RQtQS2YnHUDmM=}
  - identity: {}
- resources: [configmaps]
  providers:
  - aesgcm:
      keys:
      - {name: key1, secret: rbB6LjrZub5gRV01ELWZ6mI0N+OtcBXH6utF7xqgmk4=}
  - identity: {}
- resources: [persistentvolumeclaims]
  providers:
  - secretbox:
      keys:
      - {name: key1, secret: MaSFlCta5RBW5jBy4CSB+Bti2xuNab48pwtmvKZOvq8=}
  - identity: {}
`

// metaConfigMap is a ConfigMap stored as JSON whose managedFields entry
// was written at time at.
func metaConfigMap(at string) []byte {
	return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"touched","namespace":"demo","uid":"0b5c7d6e-0000-4000-8000-000000000001","creationTimestamp":"2024-01-01T00:00:00Z",` +
		`"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"` + at + `","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}]},"data":{"a":"b"}}`)
}

// TestDiff compares two revisions of a real etcd holding each kind of
// change: added, deleted, modified (a claim's size, a Secret's password
// that must not print), metadata only, a re-encryption with a new key,
// and a value that cannot be decrypted.
func TestDiff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	s, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfgPath := filepath.Join(t.TempDir(), "enc.yaml")
	if err := os.WriteFile(cfgPath, []byte(diffConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.Load(ctx, cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	pl := kubevalue.Codec{Enc: enc}
	put := func(key string, value []byte) {
		t.Helper()
		if _, err := cli.Put(ctx, key, string(value)); err != nil {
			t.Fatal(err)
		}
	}
	patch := func(key, p string) []byte {
		t.Helper()
		cur, err := pl.Load(ctx, s, key, 0)
		if err != nil {
			t.Fatal(err)
		}
		out, err := surgery.Patch{Type: surgery.PatchMerge, Patch: []byte(p)}.Transform(cur)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	const (
		cmKey      = "/registry/configmaps/demo/web-config"
		touchedKey = "/registry/configmaps/demo/touched"
		newCMKey   = "/registry/configmaps/demo/web-config-enc"
		podKey     = "/registry/pods/demo/web-0"
		pvcKey     = "/registry/persistentvolumeclaims/demo/www-web-1"
		brokenKey  = "/registry/persistentvolumeclaims/demo/www-web-2"
		secretKey  = "/registry/secrets/demo/web-secret"
		rotatedKey = "/registry/secrets/demo/web-secret-enc"
		sameKey    = "/registry/services/demo/api"
	)
	put(cmKey, corpus(t, "plain/configmaps__demo__web-config.bin"))
	put(touchedKey, metaConfigMap("2024-01-01T00:00:00Z"))
	put(podKey, corpus(t, "plain/pods__demo__web-0.bin"))
	put(pvcKey, corpus(t, "plain/persistentvolumeclaims__demo__www-web-1__bound.bin"))
	put(brokenKey, corpus(t, "encrypted/persistentvolumeclaims__demo__www-web-2__pending__secretbox.bin"))
	put(secretKey, corpus(t, "plain/secrets__demo__web-secret.bin"))
	put(rotatedKey, corpus(t, "encrypted/secrets__demo__web-secret-enc__aescbc.bin"))
	put(sameKey, corpus(t, "plain/services__demo__api.bin"))
	resp, err := cli.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	revA := resp.Header.Revision

	put(cmKey, patch(cmKey, `{"metadata":{"labels":{"audit":"yes"}}}`))
	put(touchedKey, metaConfigMap("2025-06-01T12:00:00Z"))
	put(newCMKey, corpus(t, "encrypted/configmaps__demo__web-config-enc__aesgcm.bin"))
	if _, err := cli.Delete(ctx, podKey); err != nil {
		t.Fatal(err)
	}
	put(pvcKey, patch(pvcKey, `{"spec":{"resources":{"requests":{"storage":"20Gi"}}}}`))
	put(brokenKey, []byte("k8s:enc:secretbox:v1:lostkey:0123456789abcdef0123456789abcdef"))
	put(secretKey, patch(secretKey, `{"data":{"password":"c2VjcmV0LXZhbHVlLXh5eg=="}}`))
	cur, err := pl.Load(ctx, s, rotatedKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := pl.Seal(ctx, schema.GroupResource{Resource: "secrets"}, rotatedKey, cur.Plain)
	if err != nil {
		t.Fatal(err)
	}
	put(rotatedKey, sealed)

	run := func(o DiffOptions) (map[string]DiffRecord, *DiffSummary) {
		t.Helper()
		o.StorePrefix, o.ListPrefix = "/registry", "/registry/"
		got := map[string]DiffRecord{}
		var order []string
		sum, err := Diff(ctx, DiffSide{Reader: s, Rev: revA, Codec: pl}, DiffSide{Reader: s, Codec: pl}, o, func(r DiffRecord) error {
			got[r.Key] = r
			order = append(order, r.Key)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(order); i++ {
			if order[i-1] >= order[i] {
				t.Errorf("records not in key order: %q before %q", order[i-1], order[i])
			}
		}
		return got, sum
	}

	got, sum := run(DiffOptions{WithDiff: true})
	tests := []struct {
		key, change string
		summary     []string // substrings
		metaOnly    bool
		reEnc       bool
		unreadable  bool
	}{
		{key: cmKey, change: DiffModified, summary: []string{"+labels.audit"}},
		{key: touchedKey, change: DiffModified, summary: []string{"metadata only"}, metaOnly: true},
		{key: newCMKey, change: DiffAdded},
		{key: podKey, change: DiffDeleted},
		{key: pvcKey, change: DiffModified, summary: []string{"spec.resources.requests.storage 5Gi→20Gi"}},
		{key: brokenKey, change: DiffModified, summary: []string{"cannot compare", "B: "}, unreadable: true},
		{key: secretKey, change: DiffModified, summary: []string{"data.password changed ("}},
		{key: rotatedKey, change: DiffModified, summary: []string{`re-encrypted, content unchanged (aescbc key "key1" → aesgcm key "key2")`}, reEnc: true},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			r, ok := got[tc.key]
			if !ok {
				t.Fatalf("no record for %s; got %v", tc.key, got)
			}
			if r.Change != tc.change || r.MetadataOnly != tc.metaOnly || r.ReEncrypted != tc.reEnc || (r.Unreadable != "") != tc.unreadable {
				t.Errorf("record %+v, want change %s metadataOnly %v reEncrypted %v unreadable %v", r, tc.change, tc.metaOnly, tc.reEnc, tc.unreadable)
			}
			for _, sub := range tc.summary {
				if !strings.Contains(r.Summary, sub) {
					t.Errorf("summary %q does not contain %q", r.Summary, sub)
				}
			}
			if tc.change == DiffDeleted && (r.RevA == 0 || r.RevB != 0) || tc.change == DiffAdded && (r.RevA != 0 || r.RevB == 0) {
				t.Errorf("revisions %d, %d for %s", r.RevA, r.RevB, tc.change)
			}
			if !tc.unreadable && !tc.reEnc && r.Diff == "" {
				t.Errorf("no unified diff")
			}
		})
	}
	if _, ok := got[sameKey]; ok {
		t.Errorf("an unchanged object is reported: %+v", got[sameKey])
	}
	if len(got) != len(tests) {
		t.Errorf("%d records, want %d: %v", len(got), len(tests), got)
	}
	// The new password, in any form, prints nowhere.
	for _, r := range got {
		for _, v := range []string{"secret-value-xyz", "c2VjcmV0LXZhbHVlLXh5eg=="} {
			if strings.Contains(r.Summary+r.Diff, v) {
				t.Errorf("%s: a Secret value is printed: %s\n%s", r.Key, r.Summary, r.Diff)
			}
		}
	}
	if sum.Unreadable != 1 || sum.Differ != len(tests) || sum.RevA != revA {
		t.Errorf("summary %+v", sum)
	}

	// Shown when asked; metadata-only changes hidden when asked.
	got, sum = run(DiffOptions{ShowSecrets: true, IgnoreMetadataOnly: true})
	if r := got[secretKey]; !strings.Contains(r.Summary, "c2VjcmV0LXZhbHVlLXh5eg==") {
		t.Errorf("--show-secrets: summary %q", r.Summary)
	}
	if _, ok := got[touchedKey]; ok || sum.Hidden != 1 || sum.Differ != len(tests)-1 {
		t.Errorf("metadata only not hidden: %v, %+v", got[touchedKey], sum)
	}

	// A state against itself: nothing differs, nothing is decoded.
	sum, err = Diff(ctx, DiffSide{Reader: s, Codec: kubevalue.Codec{}}, DiffSide{Reader: s, Codec: kubevalue.Codec{}},
		DiffOptions{StorePrefix: "/registry", ListPrefix: "/registry/"}, func(r DiffRecord) error {
			t.Errorf("same state: record %+v", r)
			return nil
		})
	if err != nil || sum.Differ != 0 || sum.Unreadable != 0 || sum.Compared != 8 {
		t.Errorf("same state: %+v, %v", sum, err)
	}
}

// TestDiffTrust: what Diff must not claim. A side that cannot be listed (a
// compacted revision) ends the comparison before any record, instead of
// every key of the other side reported ADDED or DELETED; a protobuf value
// that changed only in a field this build does not know is changed "in
// fields this build does not decode", never "content unchanged" nor
// metadata only (so never left out), and of a kind this build does not
// know, a change beyond its metadata is told; OtherNamespaces counts the
// keys of a scope outside its namespace.
func TestDiffTrust(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	s, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(key string, value []byte) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, key, string(value))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	const cmKey = "/registry/configmaps/demo/web-config"
	cm := corpus(t, "plain/configmaps__demo__web-config.bin")
	revA := put(cmKey, cm)
	put("/registry/pods/demo/web-0", corpus(t, "plain/pods__demo__web-0.bin"))
	env, err := codec.ParseUnknown(cm)
	if err != nil {
		t.Fatal(err)
	}
	raw := protowire.AppendBytes(protowire.AppendTag(append([]byte{}, env.Raw...), 99, protowire.BytesType), []byte("new"))
	put(cmKey, env.WithRaw(raw))

	o := DiffOptions{StorePrefix: "/registry", ListPrefix: "/registry/", IgnoreMetadataOnly: true}
	var got []DiffRecord
	sum, err := Diff(ctx, DiffSide{Reader: s, Rev: revA}, DiffSide{Reader: s}, o, func(r DiffRecord) error {
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var cmRec *DiffRecord
	for i := range got {
		if got[i].Key == cmKey {
			cmRec = &got[i]
		}
	}
	if cmRec == nil || cmRec.Summary != "changed in fields this build does not decode" || cmRec.MetadataOnly || cmRec.ReEncrypted {
		t.Errorf("a new unknown field: record %+v, want MODIFIED \"changed in fields this build does not decode\"", cmRec)
	}
	if sum.Differ != 2 || sum.Hidden != 0 {
		t.Errorf("summary %+v, want 2 differ (the ConfigMap, the pod added), none hidden", sum)
	}

	cms, err := resource.Lookup("configmaps")
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []struct {
		res  *resource.Resource
		ns   string
		want int
	}{
		{nil, "default", 2}, {nil, "demo", 0}, {&cms, "default", 1},
	} {
		n, err := OtherNamespaces(ctx, s, "/registry", ns.res, ns.ns, 0)
		if err != nil || n != ns.want {
			t.Errorf("OtherNamespaces(%v, %s) = %d, %v, want %d", ns.res, ns.ns, n, err, ns.want)
		}
	}

	// A kind this build does not know, whose label and spec change: its
	// spec is not decoded, but its change is told.
	const gadgetKey = "/registry/example.com/gadgets/demo/g"
	gadget := func(spec string, labels ...string) []byte {
		meta := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "g")
		meta = protowire.AppendString(protowire.AppendTag(meta, 3, protowire.BytesType), "demo")
		for i := 0; i+1 < len(labels); i += 2 {
			entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), labels[i])
			entry = protowire.AppendString(protowire.AppendTag(entry, 2, protowire.BytesType), labels[i+1])
			meta = protowire.AppendBytes(protowire.AppendTag(meta, 11, protowire.BytesType), entry)
		}
		raw := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), meta)
		raw = protowire.AppendString(protowire.AppendTag(raw, 2, protowire.BytesType), spec)
		tm := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "example.com/v1")
		tm = protowire.AppendString(protowire.AppendTag(tm, 2, protowire.BytesType), "Gadget")
		v := protowire.AppendBytes(protowire.AppendTag(append([]byte{}, codec.ProtobufMagic...), 1, protowire.BytesType), tm)
		return protowire.AppendBytes(protowire.AppendTag(v, 2, protowire.BytesType), raw)
	}
	if _, err := cli.Put(ctx, gadgetKey, string(gadget("spec-a"))); err != nil {
		t.Fatal(err)
	}
	gadgetRevA := put(gadgetKey+"-same-meta", gadget("spec-a"))
	put(gadgetKey, gadget("spec-b", "team", "ops"))
	put(gadgetKey+"-same-meta", gadget("spec-b"))
	wantGadget := map[string]string{
		gadgetKey:                "+labels.team; changed in fields this build does not decode too",
		gadgetKey + "-same-meta": "changed in fields this build does not decode",
	}
	for key, want := range wantGadget {
		sum, err := Diff(ctx, DiffSide{Reader: s, Rev: gadgetRevA}, DiffSide{Reader: s},
			DiffOptions{StorePrefix: "/registry", ListPrefix: "/registry/example.com/gadgets/demo/", Match: func(k string) bool { return k == key }}, func(r DiffRecord) error {
				if r.Summary != want {
					t.Errorf("%s: summary %q, want %q", key, r.Summary, want)
				}
				return nil
			})
		if err != nil || sum.Differ != 1 {
			t.Errorf("%s: %+v, %v; want 1 differ", key, sum, err)
		}
	}

	if _, err := cli.Compact(ctx, sum.RevB); err != nil {
		t.Fatal(err)
	}
	for _, sides := range [][2]DiffSide{{{Reader: s, Rev: revA}, {Reader: s}}, {{Reader: s}, {Reader: s, Rev: revA}}} {
		_, err := Diff(ctx, sides[0], sides[1], o, func(r DiffRecord) error {
			t.Errorf("a compacted side: record %+v before the error", r)
			return nil
		})
		if !errors.Is(err, store.ErrCompacted) {
			t.Errorf("a compacted side: error %v, want store.ErrCompacted", err)
		}
	}
}
