package codec

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestBadInput feeds every kind of bad value to Decode and EditMeta: each
// must give a clean error wrapping the right sentinel, never a panic.
func TestBadInput(t *testing.T) {
	pvc := readFile(t, "../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	badVarint := append(append([]byte{}, ProtobufMagic...), 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)
	pastEnd := append(append([]byte{}, ProtobufMagic...), 0x0a, 0x7f, 0x0a)
	wrongType := append(append([]byte{}, ProtobufMagic...), protowire.AppendTag(nil, 1, protowire.VarintType)...)
	wrongType = append(wrongType, 5)
	for _, tc := range []struct {
		name  string
		value []byte
		want  error
	}{
		{"empty", nil, ErrEmpty},
		{"magic alone", ProtobufMagic, ErrMalformed},
		{"truncated envelope", pvc[:len(pvc)/2], ErrMalformed},
		{"bad varint", badVarint, ErrMalformed},
		{"length past end", pastEnd, ErrMalformed},
		{"wrong wire type", wrongType, ErrMalformed},
		{"garbage json", []byte(`{"apiVersion": "v1", "kind": `), ErrMalformed},
		{"json not an object", []byte(`{"a":1}`), ErrNotObject},
		{"cbor", []byte{0xd9, 0xd9, 0xf7, 0xa1, 0x61, 0x61, 0x01}, ErrUnsupported},
		{"encrypted without config", []byte("k8s:enc:aescbc:v1:key1:\x00\x01\x02"), ErrEncrypted},
		{"compact_rev_key", []byte{0, 0, 0, 0, 0, 0, 0, 42}, ErrNotObject},
		{"text", []byte("hello world"), ErrNotObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.value)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode error = %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			if _, err := EditMeta(tc.value, MetaEdit{ClearDeletion: true}); err == nil {
				t.Error("EditMeta accepted bad input")
			}
		})
	}
}

// TestNoEtcdOrCLIImports keeps the codec free of etcd and the CLI.
func TestNoEtcdOrCLIImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test=false", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "go.etcd.io/") || strings.HasPrefix(dep, "github.com/urfave/cli") {
			t.Errorf("codec depends on %s", dep)
		}
	}
}

// TestDecodeSecretQuotesNothing: an undecodable Secret's value is
// described by what it is not and its size, never by its bytes, whether
// it is text, JSON a decoder chokes on (a number where a string goes) or
// a protobuf it cannot read; Decode of the same bytes still quotes their
// start, for other kinds.
func TestDecodeSecretQuotesNothing(t *testing.T) {
	const secret = "hunter2-PLAINTEXT"
	typedSecret := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"demo"},"data":{"password":1234567` + "\n"
	for _, tc := range []struct {
		name  string
		value string
		leak  string // what must not be in a DecodeSecret error
		want  error
	}{
		{"text", secret + "-password-xyz", secret[:7], ErrNotObject},
		{"eight bytes", "hunter22", "hunter22", ErrNotObject},
		{"broken JSON", `{"apiVersion":"v1","kind":"Secret","data":{"password":"` + secret + `"`, secret, ErrMalformed},
		{"a number where a string goes", typedSecret[:len(typedSecret)-1] + `}}`, "1234567", ErrMalformed},
		{"metadata of the wrong type", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":1234567}}`, "1234567", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSecret([]byte(tc.value))
			if !errors.Is(err, tc.want) {
				t.Fatalf("DecodeSecret: %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.leak) {
				t.Errorf("DecodeSecret error quotes the value: %v", err)
			}
			if _, err := SummarizeSecret([]byte(tc.value)); err != nil && strings.Contains(err.Error(), tc.leak) {
				t.Errorf("SummarizeSecret error quotes the value: %v", err)
			}
		})
	}
	if _, err := Decode([]byte(secret + "-x")); err == nil || !strings.Contains(err.Error(), `starts "hunter2-PLAINTEX"`) {
		t.Errorf("Decode of a value that is no Secret's: %v, want its start quoted", err)
	}
	for _, tc := range []struct {
		key   string
		show  bool
		quote bool
	}{
		{"/registry/secrets/demo/s", false, false},
		{"/registry/secrets/demo/s", true, true},
		{"/registry/configmaps/demo/s", false, true},
	} {
		_, err := DecodeAt(tc.key, []byte(secret+"-x"), tc.show)
		if got := err != nil && strings.Contains(err.Error(), secret[:7]); got != tc.quote {
			t.Errorf("DecodeAt(%s, show %v): %v, want the start quoted: %v", tc.key, tc.show, err, tc.quote)
		}
	}
	for key, want := range map[string]bool{
		"/registry/secrets/demo/s":          true,
		"/custom/prefix/secrets/demo/s":     true,
		"/registry/configmaps/demo/secrets": false,
		"/registry/configmaps/demo/s":       false,
	} {
		if got := IsSecretKey(key); got != want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", key, got, want)
		}
	}
}
