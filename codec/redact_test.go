package codec_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
)

const corpus = "../fixtures/corpus"

// corpusObject decodes a corpus value, decrypting it with the corpus'
// EncryptionConfiguration when it is encrypted.
func corpusObject(t *testing.T, file, etcdKey string, gr schema.GroupResource) map[string]any {
	t.Helper()
	stored, err := os.ReadFile(corpus + "/" + file)
	if err != nil {
		t.Fatal(err)
	}
	plain := stored
	if codec.Detect(stored) == codec.FormatEncrypted {
		ctx := context.Background()
		enc, err := encryption.Load(ctx, corpus+"/encryption/encryption-config.yaml")
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		if plain, err = enc.Decrypt(ctx, gr, etcdKey, stored); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := codec.Decode(plain)
	if err != nil {
		t.Fatal(err)
	}
	return obj.Content
}

var secretsGR = schema.GroupResource{Resource: "secrets"}

func plainSecret(t *testing.T) map[string]any {
	return corpusObject(t, "plain/secrets__demo__web-secret.bin", "/registry/secrets/demo/web-secret", secretsGR)
}

func encryptedSecret(t *testing.T) map[string]any {
	return corpusObject(t, "encrypted/secrets__demo__web-secret-enc__aescbc.bin", "/registry/secrets/demo/web-secret-enc", secretsGR)
}

// applied returns the plain corpus Secret as `kubectl apply` leaves it:
// with the last-applied-configuration annotation holding its data, and a
// stringData member.
func applied(t *testing.T) map[string]any {
	s := plainSecret(t)
	md := s["metadata"].(map[string]any)
	md["annotations"] = map[string]any{
		codec.LastAppliedAnnotation: `{"apiVersion":"v1","data":{"password":"czNjcjN0LXBsYWlu","username":"YWRtaW4="},"kind":"Secret","metadata":{"name":"web-secret","namespace":"demo"}}`,
		"team":                      "ops",
	}
	s["stringData"] = map[string]any{"token": "s3cr3t-string"}
	return s
}

// secretTexts are the values of the corpus Secrets, in the clear and in
// base64, that redacted output must never hold.
var secretTexts = []string{
	"s3cr3t-plain", "czNjcjN0LXBsYWlu", "s3cr3t-encrypted", "czNjcjN0LWVuY3J5cHRlZA==", "YWRtaW4=", "s3cr3t-string",
	`"admin"`,
}

func mustNotLeak(t *testing.T, v any) {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secretTexts {
		if strings.Contains(string(b), s) {
			t.Errorf("redacted output holds %q:\n%s", s, b)
		}
	}
}

func TestRedactSecret(t *testing.T) {
	cm := corpusObject(t, "plain/configmaps__demo__web-config.bin", "/registry/configmaps/demo/web-config", schema.GroupResource{Resource: "configmaps"})
	for _, tc := range []struct {
		name    string
		in      map[string]any
		want    map[string]any // members of the result compared (nil: result is in)
		secret  bool
		wantAnn map[string]any
	}{
		{
			name:   "plain Secret",
			in:     plainSecret(t),
			secret: true,
			want: map[string]any{
				"data": map[string]any{"password": "<redacted: 12 bytes>", "username": "<redacted: 5 bytes>"},
			},
		},
		{
			name:   "encrypted Secret, decrypted",
			in:     encryptedSecret(t),
			secret: true,
			want: map[string]any{
				"data": map[string]any{"password": "<redacted: 16 bytes>", "username": "<redacted: 5 bytes>"},
			},
		},
		{
			name:   "applied Secret: stringData and last-applied annotation",
			in:     applied(t),
			secret: true,
			want: map[string]any{
				"data":       map[string]any{"password": "<redacted: 12 bytes>", "username": "<redacted: 5 bytes>"},
				"stringData": map[string]any{"token": "<redacted: 13 bytes>"},
			},
			wantAnn: map[string]any{codec.LastAppliedAnnotation: "<redacted: 148 bytes>", "team": "ops"},
		},
		{name: "ConfigMap", in: cm},
		{name: "Secret of another group", in: map[string]any{"apiVersion": "example.com/v1", "kind": "Secret", "data": map[string]any{"a": "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := json.Marshal(tc.in)
			if got := codec.IsSecret(tc.in); got != tc.secret {
				t.Errorf("IsSecret = %v, want %v", got, tc.secret)
			}
			got := codec.RedactSecret(tc.in)
			if after, _ := json.Marshal(tc.in); string(after) != string(before) {
				t.Errorf("RedactSecret modified its input")
			}
			if tc.want == nil {
				if diff := cmp.Diff(tc.in, got); diff != "" {
					t.Errorf("not a Secret, yet changed (-in +got):\n%s", diff)
				}
				return
			}
			for k, w := range tc.want {
				if diff := cmp.Diff(w, got[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
			if tc.wantAnn != nil {
				if diff := cmp.Diff(tc.wantAnn, got["metadata"].(map[string]any)["annotations"]); diff != "" {
					t.Errorf("annotations (-want +got):\n%s", diff)
				}
			}
			if got["metadata"].(map[string]any)["name"] == nil {
				t.Errorf("metadata lost: %v", got["metadata"])
			}
			mustNotLeak(t, got)
		})
	}
}

func TestRedactSecretPair(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	withData := func(data map[string]any) map[string]any {
		s := applied(t)
		s["data"] = data
		return s
	}
	before := withData(map[string]any{"password": b64("s3cr3t-plain"), "username": b64("admin"), "gone": b64("old")})
	after := withData(map[string]any{"password": b64("s3cr3t-PLAIN"), "username": b64("admin"), "new": b64("s3cr3t-encrypted")})
	after["metadata"].(map[string]any)["annotations"].(map[string]any)[codec.LastAppliedAnnotation] = "{}"
	rb, ra := codec.RedactSecretPair(before, after)
	if diff := cmp.Diff(map[string]any{"password": "<redacted: 12 bytes>", "username": "<redacted: 5 bytes>", "gone": "<redacted: 3 bytes>"}, rb["data"]); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
	// A value of the same size that changed is marked, so a diff shows it.
	if diff := cmp.Diff(map[string]any{"password": "<redacted: 12 bytes, changed>", "username": "<redacted: 5 bytes>", "new": "<redacted: 16 bytes>"}, ra["data"]); diff != "" {
		t.Errorf("after (-want +got):\n%s", diff)
	}
	if got := ra["metadata"].(map[string]any)["annotations"].(map[string]any)[codec.LastAppliedAnnotation]; got != "<redacted: 2 bytes, changed>" {
		t.Errorf("after's last-applied = %v", got)
	}
	mustNotLeak(t, rb)
	mustNotLeak(t, ra)
	// A create (no before) and a delete (no after).
	if _, ra := codec.RedactSecretPair(nil, after); ra["data"].(map[string]any)["password"] != "<redacted: 12 bytes>" {
		t.Errorf("create: %v", ra["data"])
	}
	if rb, ra := codec.RedactSecretPair(before, nil); ra != nil || rb["data"].(map[string]any)["password"] != "<redacted: 12 bytes>" {
		t.Errorf("delete: %v %v", rb["data"], ra)
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"a": "b"}}
	if rb, _ := codec.RedactSecretPair(cm, cm); rb["data"].(map[string]any)["a"] != "b" {
		t.Errorf("a ConfigMap was redacted")
	}
}

func TestChangesOfSecrets(t *testing.T) {
	plain, enc := plainSecret(t), encryptedSecret(t)
	enc["metadata"] = plain["metadata"] // the same object, its password changed
	withApplied := applied(t)
	for _, tc := range []struct {
		name          string
		before, after map[string]any
		show          bool
		want          string
	}{
		{"password changed", plain, enc, false, "data.password changed (12 bytes→16 bytes)"},
		{"password changed, shown", plain, enc, true, "data.password czNjcjN0LXBsYWlu→czNjcjN0LWVuY3J5cHRlZA=="},
		{"unchanged", plain, plainSecret(t), false, "no change"},
		{"applied", plain, withApplied, false, "+annotations.kubectl.kubernetes.io/last-applied-configuration (148 bytes), +annotations.team, +stringData.token (13 bytes)"},
		{"created", nil, withApplied, false, "+annotations.kubectl.kubernetes.io/last-applied-configuration (148 bytes), +annotations.team, +apiVersion, +creationTimestamp"},
		{"removed", withApplied, plain, false, "-annotations.kubectl.kubernetes.io/last-applied-configuration (148 bytes), -annotations.team, -stringData.token (13 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := codec.SummarizeChanges(codec.Changes(tc.before, tc.after, tc.show), 4)
			got = strings.SplitN(got, ", (+", 2)[0]
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if !tc.show {
				for _, s := range secretTexts {
					if strings.Contains(got, s) {
						t.Errorf("change label holds %q", s)
					}
				}
			}
		})
	}
}

func TestChangesComparesWholeValues(t *testing.T) {
	long := strings.Repeat("x", 50)
	a := map[string]any{"data": map[string]any{"k": long + "1"}}
	b := map[string]any{"data": map[string]any{"k": long + "2"}}
	if cs := codec.Changes(a, b, false); len(cs) != 1 || cs[0].Path != "data.k" {
		t.Errorf("values differing after 40 characters: %v", cs)
	}
}
