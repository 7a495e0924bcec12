package codec

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// decodeProto decodes a protobuf value of a kind the scheme holds into
// its Go type, as protoSerializer.Decode does, with the same result and
// the same errors. A plain envelope (typeMeta and object bytes, at most
// a contentEncoding and contentType, each once) is read in place, its
// object bytes not copied first; any other value, and any value whose
// object does not decode, goes through protoSerializer.Decode, which
// says why.
func decodeProto(value []byte) (runtime.Object, error) {
	if obj, ok := decodePlainProto(value); ok {
		return obj, nil
	}
	obj, _, err := protoSerializer.Decode(value, nil, nil)
	return obj, err
}

// decodePlainProto is decodeProto's reading in place; ok is false when
// it leaves the value to protoSerializer.Decode.
func decodePlainProto(value []byte) (runtime.Object, bool) {
	if !bytes.HasPrefix(value, ProtobufMagic) {
		return nil, false
	}
	fields, ok := onceFields(value[len(ProtobufMagic):], 4)
	if !ok || fields[1] == nil || fields[2] == nil {
		return nil, false
	}
	meta, ok := onceFields(fields[1], 2)
	if !ok || len(meta[1]) == 0 || len(meta[2]) == 0 {
		return nil, false
	}
	gvk := schema.FromAPIVersionAndKind(string(meta[1]), string(meta[2]))
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, false
	}
	obj, err := Scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	u, ok := obj.(interface {
		Reset()
		Unmarshal([]byte) error
	})
	if !ok {
		return nil, false
	}
	u.Reset()
	// The generated Unmarshal copies what it keeps: obj holds nothing
	// of value.
	if err := u.Unmarshal(fields[2]); err != nil {
		return nil, false
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, true
}

// onceFields returns the length-delimited fields 1 to max of message b
// (index: field number; nil: absent); ok is false when b is not such a
// message with each field at most once and no other.
func onceFields(b []byte, max protowire.Number) (fields [5][]byte, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < 1 || num > max {
			return fields, false
		}
		b = b[n:]
		v, m := protowire.ConsumeBytes(b)
		if m < 0 || fields[num] != nil {
			return fields, false
		}
		if v == nil {
			v = []byte{}
		}
		fields[num] = v
		b = b[m:]
	}
	return fields, true
}
