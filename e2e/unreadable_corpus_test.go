package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
)

// corpusEncryptionConfig encrypts secrets with aescbc and lists no identity
// provider for them: a Secret stored in the clear is one the apiserver
// cannot read. Every other resource is stored in the clear.
const corpusEncryptionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: mu431ywsQGiaO2+8R+7+s6rm1lJufEqhapSCFQg/gl0=
`

// corpusCase is one crafted value: where it is written, the resource whose
// LIST reads it, and the etcdpvc name of that resource.
type corpusCase struct {
	name  string
	key   string
	value []byte
	gvr   schema.GroupVersionResource
	res   string // etcdpvc's RESOURCE
	// object is the name the LIST shows when it reads the value ("": the
	// value names none the LIST would show).
	object string
}

// TestUnreadableMatchesAPIServer checks the unreadable-value
// classification against kube-apiserver: each crafted value is written
// into etcd under the real apiserver (with an EncryptionConfiguration that
// lists no identity provider for secrets), the apiserver is asked whether
// the LIST of the value's resource in its namespace succeeds, and
// etcdpvc's verdict, with no apiserver to ask (ls' exit status and STATUS,
// delete --all-unreadable --dry-run), must be the same. Each value is
// removed before the next is written, and the LIST must succeed again.
func TestUnreadableMatchesAPIServer(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "encryption-config.yaml")
	if err := os.WriteFile(cfg, []byte(corpusEncryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "unreadable-corpus", ClusterOptions{EncryptionConfig: cfg})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	const ns = "corpus"
	c.EnsureNamespace(t, ns)
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Create(ctx, widgetsCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create customresourcedefinition widgets.e2e.example.com: %v", err)
	}
	eventually(t, "the widgets resource is served", func() error {
		_, err := dyn.Resource(widgetsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err
	})

	// A ConfigMap as the apiserver stores it, the base of most values.
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "base"},
		Data: map[string]string{"settings.yaml": "replicas: 3\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := c.etcdGet(t, "/registry/configmaps/"+ns+"/base").Value
	if storedPrefix(base) != protobufPrefix {
		t.Fatalf("the ConfigMap is stored as %s, want protobuf", storedPrefix(base))
	}
	renamed := func(name string) []byte {
		var cm corev1.ConfigMap
		mustDecode(t, base, &cm)
		cm.Name, cm.UID = name, types.UID("0f6b5c53-6d3c-4a5e-9d57-"+fmt.Sprintf("%012x", len(name)))
		return protobufValue(t, &cm)
	}
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "clear", Namespace: ns, UID: "6a0c6f7e-35a8-4c8f-8d1e-3b7f2f0f0c01"},
		Data:       map[string][]byte{"password": []byte("s3cr3t-corpus")}}
	cborCM, err := runtime.Encode(cbor.NewSerializer(scheme.Scheme, scheme.Scheme), &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cbor", Namespace: ns, UID: "5b1f7c1e-0d8f-4a52-9a43-8f0e1d2c3b4a"}})
	if err != nil {
		t.Fatal(err)
	}

	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	sas := schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	key := func(res, name string) string { return "/registry/" + res + "/" + ns + "/" + name }
	kc := c.writeKubeconfig(t)
	cases := []corpusCase{
		{"truncated", key("configmaps", "truncated"), base[:len(base)-9], cms, "configmaps", ""},
		{"wrong wire type in the body", key("configmaps", "body"), wireTypeAt(t, renamed("body"), 2), cms, "configmaps", "body"},
		{"wrong wire type in the metadata", key("configmaps", "meta"), wireTypeAt(t, renamed("meta"), 1, 1), cms, "configmaps", ""},
		{"base64-wrapped", key("configmaps", "b64"), []byte(base64.StdEncoding.EncodeToString(renamed("b64"))), cms, "configmaps", "b64"},
		{"JSON without kind", key("configmaps", "nokind"), []byte(`{"apiVersion":"v1","metadata":{"name":"nokind","namespace":"` + ns + `","uid":"9c3e2f1a-8b7d-4c6e-a5f4-0d1c2b3a4f5e"},"data":{"a":"1"}}`), cms, "configmaps", "nokind"},
		{"another kind under a built-in key", key("serviceaccounts", "mixed"), renamed("mixed"), sas, "serviceaccounts", "mixed"},
		{"another kind under a custom resource's key", "/registry/e2e.example.com/widgets/" + ns + "/mixed", append(mustJSON(secret), '\n'), widgetsGVR, "widgets.e2e.example.com", "clear"},
		{"a key naming no object", key("configmaps", ""), renamed("nameless"), cms, "configmaps", "nameless"},
		{"a key naming no object, a copy of another object", key("configmaps", ""), base, cms, "configmaps", ""},
		{"a key naming no object, an undecodable value", key("configmaps", ""), base[:len(base)/2], cms, "configmaps", ""},
		{"a key with an extra segment", key("configmaps", "a/b"), renamed("extra"), cms, "configmaps", "extra"},
		{"a plaintext value under a config without identity", key("secrets", "clear"), protobufValue(t, secret), secrets, "secrets", "clear"},
		{"an unknown encryption key name", key("secrets", "lost"), append([]byte("k8s:enc:aescbc:v1:key0:"), bytes.Repeat([]byte{7}, 48)...), secrets, "secrets", ""},
		{"a CBOR value", key("configmaps", "cbor"), cborCM, cms, "configmaps", "cbor"},
		{"a readable ConfigMap", key("configmaps", "fine"), renamed("fine"), cms, "configmaps", "fine"},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			if _, err := c.Etcd.Put(ctx, tc.key, string(tc.value)); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if _, err := c.Etcd.Delete(ctx, tc.key); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the LIST succeeds again once the value is gone", func() error {
					_, err := dyn.Resource(tc.gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
					return err
				})
			}()
			served, why := listVerdict(ctx, t, dyn, tc, ns)
			t.Logf("kube-apiserver: LIST succeeds: %v (%s)", served, why)

			args := []string{"--encryption-config", cfg}
			r := c.etcdpvc(t, append(args, "ls", tc.res, "-n", ns)...)
			switch {
			case served && r.code != 0:
				t.Errorf("the apiserver lists %s, etcdpvc ls says it cannot be read:\n%s", tc.res, r)
			case !served && r.code != 10:
				t.Errorf("the apiserver's LIST fails (%s), etcdpvc ls exits %d, want 10:\n%s", why, r.code, r)
			}
			r = c.etcdpvc(t, append(args, "delete", "--all-unreadable", tc.res, "-n", ns, "--dry-run", "--backup-dir", t.TempDir())...)
			planned := strings.Contains(r.stdout, "dry run: delete ")
			switch {
			case served && (planned || r.code != 0):
				t.Errorf("the apiserver lists %s, etcdpvc delete --all-unreadable would delete or did not judge:\n%s", tc.res, r)
			case !served && !planned && !(tc.name == "a CBOR value" && r.code == 10):
				// CBOR: read by an apiserver with the CBORServingAndStorage
				// gate only, which cannot be told offline: not judged.
				t.Errorf("the apiserver's LIST fails (%s), etcdpvc delete --all-unreadable does not delete it:\n%s", why, r)
			}
			if tc.name == "a CBOR value" {
				// Not judged offline; with the apiserver asked first
				// (--verify=always), its answer decides.
				r = c.etcdpvc(t, append(args, "--kubeconfig", kc, "--verify=always", "delete", "--all-unreadable", tc.res, "-n", ns, "--dry-run", "--backup-dir", t.TempDir())...)
				if planned := strings.Contains(r.stdout, "dry run: delete "); planned == served || (!served && r.code != 0) {
					t.Errorf("with the apiserver asked (its LIST succeeds: %v), etcdpvc delete --all-unreadable --verify=always:\n%s", served, r)
				}
			}
		})
	}

	// A key that names no object is deleted by its key through the one
	// write path, checked with the apiserver (--verify=always): before,
	// that it cannot read an undecodable value (its LIST fails), after,
	// that the LIST succeeds.
	for _, v := range []struct {
		name  string
		value []byte
	}{{"undecodable", base[:len(base)/2]}, {"decodable", renamed("nameless")}} {
		t.Run("delete_a_key_naming_no_object,_"+v.name, func(t *testing.T) {
			k := key("configmaps", "")
			if _, err := c.Etcd.Put(ctx, k, string(v.value)); err != nil {
				t.Fatal(err)
			}
			defer c.Etcd.Delete(ctx, k)
			object := ""
			if v.name == "decodable" {
				object = "nameless"
			}
			served, why := listVerdict(ctx, t, dyn, corpusCase{gvr: cms, object: object}, ns)
			t.Logf("kube-apiserver: LIST succeeds: %v (%s)", served, why)
			r := c.etcdpvc(t, "--kubeconfig", kc, "--verify=always", "--encryption-config", cfg, "delete", "--etcd-key", k, "--yes", "--backup-dir", t.TempDir())
			if r.code != 0 || !strings.Contains(r.stdout, "verified: the list of configmaps in namespace "+ns+" succeeds") {
				t.Errorf("want exit status 0 and the list verified:\n%s", r)
			}
			if got, err := c.Etcd.Get(ctx, k); err != nil || len(got.Kvs) != 0 {
				t.Errorf("the key is still there: %v", err)
			}
		})
	}
}

// listVerdict asks the apiserver whether the LIST of tc's resource in ns
// succeeds with tc's value in etcd: it fails, or it succeeds showing
// tc.object (the value was read), within 30s (the watch cache follows
// etcd closely but not at once). A LIST that succeeds without the object
// after that long is taken as served, said so in why.
func listVerdict(ctx context.Context, t *testing.T, dyn dynamic.Interface, tc corpusCase, ns string) (served bool, why string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := dyn.Resource(tc.gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		// Across namespaces, and from etcd rather than the watch cache
		// (a continued page is read from etcd).
		if _, err := dyn.Resource(tc.gvr).List(ctx, metav1.ListOptions{}); err != nil {
			return false, "across namespaces: " + err.Error()
		}
		if p, err := dyn.Resource(tc.gvr).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return false, "paged: " + err.Error()
		} else if p.GetContinue() != "" {
			if _, err := dyn.Resource(tc.gvr).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 100, Continue: p.GetContinue()}); err != nil {
				return false, "continued: " + err.Error()
			}
		}
		for _, it := range l.Items {
			if tc.object != "" && it.GetName() == tc.object {
				return true, "it shows " + tc.object
			}
		}
		if time.Now().After(deadline) {
			return true, "it succeeds for 30s"
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// protobufValue is obj as the apiserver stores it: protobuf, in the
// clear.
func protobufValue(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), gvks[0].GroupVersion())
	b, err := runtime.Encode(enc, obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustDecode decodes a stored protobuf value into obj.
func mustDecode(t *testing.T, value []byte, obj runtime.Object) {
	t.Helper()
	if _, _, err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Decode(value, nil, obj); err != nil {
		t.Fatal(err)
	}
}

// wireTypeAt is value, a protobuf stored value, with the wire type of one
// field's tag changed to varint, every length kept: the object's first
// field path[0], or within it (a message) field path[1].
func wireTypeAt(t *testing.T, value []byte, path ...protowire.Number) []byte {
	t.Helper()
	out := append([]byte{}, value...)
	// The envelope (after the 4-byte magic): field 2 is the object.
	raw, at := fieldOf(t, out[4:], 2)
	at += 4
	msg := raw
	for i, num := range path {
		off := tagOf(t, msg, num)
		if i == len(path)-1 {
			out[at+off] &^= 7
			return out
		}
		var sub int
		msg, sub = fieldOf(t, msg, num)
		at += sub
	}
	return out
}

// fieldOf returns the first length-delimited field num of msg and where
// its value starts in msg.
func fieldOf(t *testing.T, msg []byte, num protowire.Number) ([]byte, int) {
	t.Helper()
	for b, base := msg, 0; len(b) > 0; {
		n, typ, l := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(n, typ, b[max(l, 0):])
		if l < 0 || m < 0 {
			break
		}
		if n == num && typ == protowire.BytesType {
			v, vl := protowire.ConsumeBytes(b[l:])
			return v, base + l + vl - len(v)
		}
		b, base = b[l+m:], base+l+m
	}
	t.Fatalf("no field %d", num)
	return nil, 0
}

// tagOf returns where the first tag of field num starts in msg.
func tagOf(t *testing.T, msg []byte, num protowire.Number) int {
	t.Helper()
	for b, base := msg, 0; len(b) > 0; {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			break
		}
		if n == num {
			return base
		}
		m := protowire.ConsumeFieldValue(n, typ, b[l:])
		if m < 0 {
			break
		}
		b, base = b[l+m:], base+l+m
	}
	t.Fatalf("no field %d", num)
	return 0
}
