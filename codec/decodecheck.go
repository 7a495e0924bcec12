package codec

import (
	encjson "encoding/json"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
)

// convertsToJSON reports whether typed surely converts to the JSON form
// fillFromTyped builds, without building it: it encodes typed, as
// fillFromTyped does, and checks in the encoding what the decoding into
// a map could refuse, which only bytes a Marshaler copies unchecked can
// hold (managedFields' fieldsV1): a number beyond float64, a nesting
// near the decoder's limit. false means only that the conversion itself
// must say, not that it fails.
func convertsToJSON(typed runtime.Object) bool {
	var c jsonCheck
	if err := encjson.NewEncoder(&c).Encode(typed); err != nil {
		return false
	}
	return c.ok
}

// jsonCheck is a writer that checks the valid JSON written to it (one
// Write: json.Encoder writes a value at once) for what convertsToJSON
// doubts.
type jsonCheck struct {
	ok, written bool
}

// maxDepth is a nesting below the JSON decoder's limit (10000) with a
// margin: deeper documents are left to the decoder.
const maxDepth = 9000

func (c *jsonCheck) Write(b []byte) (int, error) {
	c.ok = !c.written && validNumbers(b)
	c.written = true
	return len(b), nil
}

// validNumbers reports whether every number of b, valid JSON, decodes
// into a float64 or an int64, and b nests no deeper than maxDepth.
func validNumbers(b []byte) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '{' || c == '[':
			if depth++; depth > maxDepth {
				return false
			}
		case c == '}' || c == ']':
			depth--
		case c == '-' || c >= '0' && c <= '9':
			j, digits := i, true
			for ; j < len(b) && isNumberByte(b[j]); j++ {
				digits = digits && (b[j] >= '0' && b[j] <= '9' || b[j] == '-')
			}
			// Up to 18 digits always fit an int64.
			if !digits || j-i > 18 {
				if _, err := strconv.ParseFloat(string(b[i:j]), 64); err != nil {
					return false
				}
			}
			i = j - 1
		}
	}
	return true
}

// isNumberByte reports whether c may be part of a JSON number.
func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
