package codec

import (
	encjson "encoding/json"
	"errors"
	"io"
	"strings"
)

// Why a stored value cannot be decoded, as Problem names it.
const (
	ProblemEmpty       = "empty value"
	ProblemTruncated   = "truncated protobuf"
	ProblemProtobuf    = "malformed protobuf"
	ProblemJSONSyntax  = "JSON syntax error"
	ProblemJSONTrunc   = "truncated JSON"
	ProblemJSONObject  = "JSON that is not a Kubernetes object"
	ProblemNotObject   = "not a Kubernetes object"
	ProblemUnsupported = "unsupported storage format"
	ProblemEncrypted   = "encrypted at rest"
	ProblemUnknown     = "undecodable"
)

// Problem names why value (a stored value, decrypted when it was encrypted
// at rest) could not be decoded, err being what the decoder said: a
// truncated protobuf (the envelope or a field ends before its length
// says: a write cut short), a malformed protobuf (bytes that parse as no
// message: a bit flip, another program's bytes), JSON that is cut short or
// has a syntax error, JSON without apiVersion and kind, bytes of no format
// the apiserver writes, a format this build does not read (CBOR). The
// protobuf and JSON cases are told apart by parsing value again, so that
// the answer does not depend on the decoder's words.
func Problem(value []byte, err error) string {
	switch {
	case len(value) == 0 || errors.Is(err, ErrEmpty):
		return ProblemEmpty
	case errors.Is(err, ErrEncrypted):
		return ProblemEncrypted
	case errors.Is(err, ErrUnsupported):
		return ProblemUnsupported
	}
	switch Detect(value) {
	case FormatProtobuf:
		if _, perr := ParseUnknown(value); errors.Is(perr, io.ErrUnexpectedEOF) {
			return ProblemTruncated
		}
		return ProblemProtobuf
	case FormatJSON:
		var v any
		jerr := encjson.Unmarshal(value, &v)
		var se *encjson.SyntaxError
		switch {
		case jerr == nil:
			return ProblemJSONObject
		case errors.As(jerr, &se) && se.Offset >= int64(len(trimJSONSpace(value))) && strings.HasPrefix(se.Error(), "unexpected end"):
			return ProblemJSONTrunc
		default:
			return ProblemJSONSyntax
		}
	case FormatEncrypted:
		return ProblemEncrypted
	}
	if errors.Is(err, ErrNotObject) {
		return ProblemNotObject
	}
	return ProblemUnknown
}

// trimJSONSpace is b without trailing JSON white space.
func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case ' ', '\t', '\r', '\n':
			b = b[:len(b)-1]
			continue
		}
		break
	}
	return b
}
