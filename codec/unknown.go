package codec

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Unknown is a parsed protobuf envelope (runtime.Unknown) that keeps the
// original bytes, so that a rewrite of Raw leaves every other byte as it was.
type Unknown struct {
	APIVersion      string
	Kind            string
	Raw             []byte
	ContentEncoding string
	ContentType     string

	// fields holds the envelope's fields in their stored order: every field
	// is kept verbatim except field 2 (raw), which is re-emitted from Raw.
	fields []wireField
}

// wireField is one field of a protobuf message, kept verbatim.
type wireField struct {
	num  protowire.Number
	typ  protowire.Type
	data []byte // the whole field: tag, length and payload
	val  []byte // for bytes fields: the payload
}

// parseFields splits a message into its fields without interpreting them.
func parseFields(b []byte) ([]wireField, error) {
	var out []wireField
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("bad field tag at offset %d: %w", len(b), protowire.ParseError(n))
		}
		if num > protowire.MaxValidNumber || num < protowire.MinValidNumber {
			return nil, fmt.Errorf("invalid field number %d", num)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
		}
		f := wireField{num: num, typ: typ, data: b[:n+m]}
		if typ == protowire.BytesType {
			v, k := protowire.ConsumeBytes(b[n:])
			if k < 0 {
				return nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(k))
			}
			f.val = v
		}
		out = append(out, f)
		b = b[n+m:]
	}
	return out, nil
}

// ParseUnknown parses a protobuf-encoded stored value ("k8s\x00" +
// runtime.Unknown). The returned Unknown aliases value.
func ParseUnknown(value []byte) (*Unknown, error) {
	if !bytes.HasPrefix(value, ProtobufMagic) {
		return nil, fmt.Errorf("protobuf envelope: %w", ErrNotObject)
	}
	body := value[len(ProtobufMagic):]
	if len(body) == 0 {
		return nil, malformed("protobuf envelope: magic without a message")
	}
	fields, err := parseFields(body)
	if err != nil {
		return nil, malformed("protobuf envelope: %v", err)
	}
	e := &Unknown{fields: fields}
	var sawType, sawRaw bool
	for _, f := range fields {
		switch f.num {
		case 1:
			if f.typ != protowire.BytesType {
				return nil, malformed("protobuf envelope: typeMeta has wire type %d", f.typ)
			}
			tm, err := parseFields(f.val)
			if err != nil {
				return nil, malformed("protobuf envelope: typeMeta: %v", err)
			}
			for _, t := range tm {
				if t.typ != protowire.BytesType {
					return nil, malformed("protobuf envelope: typeMeta field %d has wire type %d", t.num, t.typ)
				}
				switch t.num {
				case 1:
					e.APIVersion = string(t.val)
				case 2:
					e.Kind = string(t.val)
				}
			}
			sawType = true
		case 2:
			if f.typ != protowire.BytesType {
				return nil, malformed("protobuf envelope: raw has wire type %d", f.typ)
			}
			e.Raw = f.val
			sawRaw = true
		case 3, 4:
			if f.typ != protowire.BytesType {
				return nil, malformed("protobuf envelope: field %d has wire type %d", f.num, f.typ)
			}
			if f.num == 3 {
				e.ContentEncoding = string(f.val)
			} else {
				e.ContentType = string(f.val)
			}
		}
	}
	if !sawType || e.Kind == "" || e.APIVersion == "" {
		return nil, malformed("protobuf envelope: no apiVersion/kind")
	}
	if !sawRaw {
		return nil, malformed("protobuf envelope: no object bytes")
	}
	if e.ContentEncoding != "" {
		return nil, fmt.Errorf("protobuf envelope: content encoding %q: %w", e.ContentEncoding, ErrUnsupported)
	}
	return e, nil
}

// WithRaw returns the stored value with the object bytes replaced by raw.
// Every other byte of the envelope is kept as stored.
func (e *Unknown) WithRaw(raw []byte) []byte {
	out := make([]byte, 0, len(ProtobufMagic)+len(raw)+64)
	out = append(out, ProtobufMagic...)
	for _, f := range e.fields {
		if f.num == 2 {
			out = protowire.AppendTag(out, 2, protowire.BytesType)
			out = protowire.AppendBytes(out, raw)
			continue
		}
		out = append(out, f.data...)
	}
	return out
}

// metadataField returns the bytes of field 1 (metadata) of an object message
// and whether it was present.
func metadataField(raw []byte) ([]byte, bool, error) {
	fields, err := parseFields(raw)
	if err != nil {
		return nil, false, err
	}
	for _, f := range fields {
		if f.num == 1 {
			if f.typ != protowire.BytesType {
				return nil, false, fmt.Errorf("metadata has wire type %d", f.typ)
			}
			return f.val, true, nil
		}
	}
	return nil, false, nil
}

// replaceMetadata returns raw with field 1 replaced by meta (or inserted
// first when absent). Every other field stays as stored.
func replaceMetadata(raw, meta []byte) ([]byte, error) {
	fields, err := parseFields(raw)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(raw)+len(meta))
	done := false
	emit := func() {
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, meta)
		done = true
	}
	for _, f := range fields {
		if f.num == 1 {
			if !done {
				emit()
			}
			continue
		}
		if !done && f.num > 1 {
			emit()
		}
		out = append(out, f.data...)
	}
	if !done {
		emit()
	}
	return out, nil
}
