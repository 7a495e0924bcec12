package codec

import (
	"bytes"
	encjson "encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Summary is the part of an object that listing needs, read without
// decoding the rest: for protobuf, only the envelope's typeMeta and the
// few ObjectMeta fields below are parsed, at the wire level.
type Summary struct {
	Format            Format
	APIVersion, Kind  string
	Name, Namespace   string
	UID               string
	CreationTimestamp time.Time
	// DeletionTimestamp is zero unless the object is being deleted.
	DeletionTimestamp          time.Time
	DeletionGracePeriodSeconds *int64
	Finalizers                 []string
	OwnerReferences            int
}

// Terminating reports whether the object carries a deletionTimestamp.
func (s *Summary) Terminating() bool { return !s.DeletionTimestamp.IsZero() }

// Summarize reads a stored value's Summary (plaintext: an encrypted value
// yields an *EncryptedError). For a Secret's value, use SummarizeSecret.
func Summarize(value []byte) (*Summary, error) {
	return summarize(value, false)
}

// SummarizeSecret is Summarize for a value that is, or may be, a Secret's:
// its errors never quote the value's bytes (see DecodeSecret).
func SummarizeSecret(value []byte) (*Summary, error) {
	return summarize(value, true)
}

func summarize(value []byte, redact bool) (*Summary, error) {
	switch Detect(value) {
	case FormatProtobuf:
		apiVersion, kind, raw, err := scanEnvelope(value)
		if err != nil {
			// The full parser gives the precise error.
			if _, perr := ParseUnknown(value); perr != nil {
				return nil, fmt.Errorf("summarize: %w", perr)
			}
			return nil, fmt.Errorf("summarize: %w", err)
		}
		// An object without metadata has empty metadata, as a typed
		// decode sees it.
		meta, _ := firstBytesField(raw, 1)
		s := &Summary{Format: FormatProtobuf, APIVersion: apiVersion, Kind: kind}
		if err := s.readWireMeta(meta); err != nil {
			return nil, malformed("summarize %s: %v", kind, err)
		}
		return s, nil
	case FormatJSON:
		return summarizeJSON(value, redact)
	default:
		// Base64-wrapped, or not an object: decode says which.
		obj, err := decode(value, redact)
		if err != nil {
			return nil, err
		}
		return summaryOf(obj.Meta, obj.GVK, FormatUnknown), nil
	}
}

func (s *Summary) readWireMeta(b []byte) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
			switch num {
			case 1:
				s.Name = string(v)
			case 3:
				s.Namespace = string(v)
			case 5:
				s.UID = string(v)
			case 8:
				t, err := wireTime(v)
				if err != nil {
					return err
				}
				s.CreationTimestamp = t
			case metaDeletionTimestamp:
				t, err := wireTime(v)
				if err != nil {
					return err
				}
				s.DeletionTimestamp = t
			case metaFinalizers:
				s.Finalizers = append(s.Finalizers, string(v))
			case metaOwnerReferences:
				s.OwnerReferences++
			}
		case typ == protowire.VarintType && num == metaDeletionGracePeriodSeconds:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
			g := int64(v)
			s.DeletionGracePeriodSeconds = &g
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
		}
	}
	return nil
}

// wireTime decodes a metav1.Time message (1: seconds, 2: nanos).
func wireTime(b []byte) (time.Time, error) {
	var sec, nsec int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return time.Time{}, protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.VarintType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return time.Time{}, protowire.ParseError(m)
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeVarint(b)
		if m < 0 {
			return time.Time{}, protowire.ParseError(m)
		}
		b = b[m:]
		switch num {
		case 1:
			sec = int64(v)
		case 2:
			nsec = int64(int32(v))
		}
	}
	return time.Unix(sec, nsec).UTC(), nil
}

type jsonSummary struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name                       string               `json:"name"`
		Namespace                  string               `json:"namespace"`
		UID                        string               `json:"uid"`
		CreationTimestamp          *time.Time           `json:"creationTimestamp"`
		DeletionTimestamp          *time.Time           `json:"deletionTimestamp"`
		DeletionGracePeriodSeconds *int64               `json:"deletionGracePeriodSeconds"`
		Finalizers                 []string             `json:"finalizers"`
		OwnerReferences            []encjson.RawMessage `json:"ownerReferences"`
	} `json:"metadata"`
}

func summarizeJSON(value []byte, redact bool) (*Summary, error) {
	var j jsonSummary
	if err := encjson.Unmarshal(bytes.TrimRight(value, "\r\n"), &j); err != nil {
		return nil, malformed("summarize: JSON: %s", detail(err, redact))
	}
	if j.APIVersion == "" || j.Kind == "" {
		return nil, fmt.Errorf("summarize: JSON without apiVersion and kind: %w", ErrNotObject)
	}
	s := &Summary{Format: FormatJSON, APIVersion: j.APIVersion, Kind: j.Kind, Name: j.Metadata.Name,
		Namespace: j.Metadata.Namespace, UID: j.Metadata.UID, Finalizers: j.Metadata.Finalizers,
		DeletionGracePeriodSeconds: j.Metadata.DeletionGracePeriodSeconds, OwnerReferences: len(j.Metadata.OwnerReferences)}
	if j.Metadata.CreationTimestamp != nil {
		s.CreationTimestamp = j.Metadata.CreationTimestamp.UTC()
	}
	if j.Metadata.DeletionTimestamp != nil {
		s.DeletionTimestamp = j.Metadata.DeletionTimestamp.UTC()
	}
	return s, nil
}

// scanEnvelope reads a protobuf envelope's apiVersion, kind and object
// bytes without allocating (listing reads millions of them). Anything it
// does not accept, ParseUnknown explains.
func scanEnvelope(value []byte) (apiVersion, kind string, raw []byte, err error) {
	b := value[len(ProtobufMagic):]
	var typeMeta, encoding []byte
	var sawRaw bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", "", nil, malformed("bad field tag")
		}
		b = b[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 || num <= 4 {
				return "", "", nil, malformed("envelope field %d has wire type %d", num, typ)
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return "", "", nil, malformed("envelope field %d: bad length", num)
		}
		b = b[m:]
		switch num {
		case 1:
			typeMeta = v
		case 2:
			raw, sawRaw = v, true
		case 3:
			encoding = v // the last one counts, as in ParseUnknown
		}
	}
	if len(encoding) > 0 {
		return "", "", nil, fmt.Errorf("content encoding %q: %w", encoding, ErrUnsupported)
	}
	av, _ := firstBytesField(typeMeta, 1)
	k, _ := firstBytesField(typeMeta, 2)
	if len(av) == 0 || len(k) == 0 || !sawRaw {
		return "", "", nil, malformed("no apiVersion/kind or object bytes")
	}
	return string(av), string(k), raw, nil
}

// firstBytesField returns the value of the first length-delimited field
// num of a message, without allocating.
func firstBytesField(b []byte, num protowire.Number) ([]byte, bool) {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, false
		}
		b = b[l:]
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, false
			}
			if n == num {
				return v, true
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(n, typ, b)
		if m < 0 {
			return nil, false
		}
		b = b[m:]
	}
	return nil, false
}
