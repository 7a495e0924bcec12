package codec

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// YAML marshals v as sigs.k8s.io/yaml.Marshal does, through JSON, but
// prints a value holding a character YAML may not carry raw (DEL, a C1
// control such as U+009B) instead of failing: such characters are
// written as JSON escapes first, which the YAML emitter then quotes
// ("\x9B"), as it quotes ESC. sigs.k8s.io/yaml.Marshal refuses them
// ("control characters are not allowed"), which made an object holding
// one unprintable as YAML.
func YAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %w", err)
	}
	return yaml.JSONToYAML(escapeUnYAML(j))
}

// escapeUnYAML writes as \uXXXX escapes the characters of a JSON text
// that YAML's reader refuses raw (go-yaml's printable set). JSON's
// structure is ASCII, so they only occur inside strings, where the
// escape is the same string.
func escapeUnYAML(j []byte) []byte {
	var out []byte
	for i := 0; i < len(j); {
		r, n := utf8.DecodeRune(j[i:])
		if r == 0x7f || (r >= 0x80 && r <= 0x9f && r != 0x85) || r == 0xfffe || r == 0xffff {
			if out == nil {
				out = append(make([]byte, 0, len(j)+16), j[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, r)
		} else if out != nil {
			out = append(out, j[i:i+n]...)
		}
		i += n
	}
	if out == nil {
		return j
	}
	return out
}
