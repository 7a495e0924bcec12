package codec

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/api/equality"
)

// TestDecodeProtoIsSerializers checks that decodeProto gives what the
// apiserver's protobuf serializer gives, the same object or the same
// error, on every corpus value and on envelopes it must leave to the
// serializer: a field twice, an unknown field, a wrong wire type, no
// kind, a kind the scheme does not hold, an object cut short.
func TestDecodeProtoIsSerializers(t *testing.T) {
	values := corpusValues(t)
	pod := readFile(t, "../fixtures/corpus/plain/pods__demo__web-0.bin")
	_, kind, raw, err := scanEnvelope(pod)
	if err != nil {
		t.Fatal(err)
	}
	field := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	typeMeta := func(av, k string) []byte { return field(1, append(field(1, []byte(av)), field(2, []byte(k))...)) }
	envelope := func(parts ...[]byte) []byte { return append(bytes.Clone(ProtobufMagic), bytes.Join(parts, nil)...) }
	crafted := map[string][]byte{
		"plain":            envelope(typeMeta("v1", kind), field(2, raw)),
		"typeMeta twice":   envelope(typeMeta("v1", "ConfigMap"), typeMeta("v1", kind), field(2, raw)),
		"raw twice":        envelope(typeMeta("v1", kind), field(2, raw[:10]), field(2, raw)),
		"unknown field":    envelope(typeMeta("v1", kind), field(2, raw), field(9, []byte("x"))),
		"varint field":     envelope(typeMeta("v1", kind), field(2, raw), protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1)),
		"encoding":         envelope(typeMeta("v1", kind), field(2, raw), field(3, []byte("gzip")), field(4, []byte("application/x"))),
		"no kind":          envelope(typeMeta("v1", ""), field(2, raw)),
		"no apiVersion":    envelope(typeMeta("", kind), field(2, raw)),
		"unknown kind":     envelope(typeMeta("v1", "Gadget"), field(2, raw)),
		"object cut short": envelope(typeMeta("v1", kind), field(2, raw[:len(raw)-3])),
		"no object":        envelope(typeMeta("v1", kind)),
		"empty object":     envelope(typeMeta("v1", kind), field(2, nil)),
		"magic only":       envelope(),
		"envelope cut":     envelope(typeMeta("v1", kind), field(2, raw))[:40],
	}
	for name, v := range crafted {
		values[name] = v
	}
	fast := 0
	for name, v := range values {
		want, _, werr := protoSerializer.Decode(v, nil, nil)
		got, gerr := decodeProto(v)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Errorf("%s: decodeProto error %v, the serializer's %v", name, gerr, werr)
			continue
		}
		if werr == nil && !equality.Semantic.DeepEqual(want, got) {
			t.Errorf("%s: decodeProto's object differs from the serializer's", name)
		}
		if _, ok := decodePlainProto(v); ok {
			fast++
			if werr != nil {
				t.Errorf("%s: read in place, but the serializer fails: %v", name, werr)
			}
		}
	}
	if fast < 10 {
		t.Errorf("only %d values read in place", fast)
	}
}
