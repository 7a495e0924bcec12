package codec

import (
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// RedactedSecret is a core Secret as RedactSecret leaves its content,
// ready to be encoded to JSON: the values of data and stringData, and the
// last-applied annotation, replaced by "<redacted: N bytes>".
type RedactedSecret struct {
	*corev1.Secret
	// Data and StringData hide the Secret's own fields (encoding/json
	// takes the shallower field).
	Data       map[string]string `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
}

// RedactTypedSecret returns s with its secret values redacted as
// RedactSecret redacts the content decoded from it: encoding the result
// to JSON and decoding that into a map gives RedactSecret's map. s's
// annotations are replaced by a copy; s is otherwise left as it is. ok is
// false for a value the map form would show differently (a nil data
// value, encoded null; a string that is not valid UTF-8, whose size JSON
// changes), which the caller then redacts the long way. It covers the
// fields secretFields (RedactSecret) names; a test keeps the two in step.
func RedactTypedSecret(s *corev1.Secret) (r RedactedSecret, ok bool) {
	r.Secret = s
	if len(s.Data) > 0 {
		r.Data = make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			if v == nil {
				return RedactedSecret{}, false
			}
			// The size of the base64 text decoded.
			r.Data[k] = marker(secretSize{n: len(v)}, "")
		}
	}
	if len(s.StringData) > 0 {
		r.StringData = make(map[string]string, len(s.StringData))
		for k, v := range s.StringData {
			if !utf8.ValidString(v) {
				// The map form holds it as JSON wrote it, each bad
				// byte as U+FFFD: another size.
				return RedactedSecret{}, false
			}
			r.StringData[k] = marker(secretSize{n: len(v)}, "")
		}
	}
	if v, has := s.Annotations[LastAppliedAnnotation]; has {
		if !utf8.ValidString(v) {
			return RedactedSecret{}, false
		}
		a := make(map[string]string, len(s.Annotations))
		for k, av := range s.Annotations {
			a[k] = av
		}
		a[LastAppliedAnnotation] = marker(secretSize{n: len(v)}, "")
		s.Annotations = a
	}
	return r, true
}
