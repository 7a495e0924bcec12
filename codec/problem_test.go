package codec

import (
	"errors"
	"os"
	"testing"
)

func TestProblem(t *testing.T) {
	pb, err := os.ReadFile("../fixtures/corpus/plain/configmaps__demo__web-config.bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		value []byte
		want  string
	}{
		{"empty", nil, ProblemEmpty},
		{"protobuf cut short", pb[:len(pb)-1], ProblemTruncated},
		{"protobuf cut in its envelope", pb[:6], ProblemTruncated},
		{"protobuf with a bad tag", append(append([]byte(nil), ProtobufMagic...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ProblemProtobuf},
		{"JSON cut short", []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"`), ProblemJSONTrunc},
		{"JSON cut short, trailing newline", []byte("{\"kind\":\"Pod\",\n"), ProblemJSONTrunc},
		{"JSON with a syntax error", []byte(`{"kind":"Pod",}`), ProblemJSONSyntax},
		{"JSON with bytes after it", []byte(`{"kind":"Pod"}x`), ProblemJSONSyntax},
		{"JSON without kind", []byte(`{"metadata":{}}`), ProblemJSONObject},
		{"CBOR", append(append([]byte(nil), CBORMagic...), 0xa0), ProblemUnsupported},
		{"encrypted", []byte("k8s:enc:aescbc:v1:key1:xyz"), ProblemEncrypted},
		{"other bytes", []byte("hunter2"), ProblemNotObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Summarize(tc.value)
			if err == nil && tc.want != ProblemJSONObject {
				t.Fatalf("Summarize accepted %q", tc.value)
			}
			if got := Problem(tc.value, err); got != tc.want {
				t.Fatalf("Problem = %q, want %q (err %v)", got, tc.want, err)
			}
		})
	}
	// The parser's error stays reachable through a malformed value's.
	_, err = Summarize(pb[:len(pb)-1])
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("%v does not match ErrMalformed", err)
	}
}
