package codec

import (
	"bytes"
	"encoding/json"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// canonReference is what CanonicalJSON must reproduce: the JSON decoded into
// a map as Decode does and encoded again without HTML escaping.
func canonReference(t *testing.T, in []byte) []byte {
	t.Helper()
	var v any
	if err := utiljson.Unmarshal(in, &v); err != nil {
		t.Fatalf("reference decode %s: %v", in, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestCanonJSON(t *testing.T) {
	type inner struct {
		Z string  `json:"z"`
		A []any   `json:"a"`
		F float64 `json:"f"`
	}
	type outer struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
		In     inner             `json:"in"`
		Big    int64             `json:"big"`
		Neg    int64             `json:"neg"`
		F32    float32           `json:"f32"`
		Empty  map[string]string `json:"empty"`
		Nil    []string          `json:"nil"`
		Raw    json.RawMessage   `json:"raw"`
	}
	marshal := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	same := []struct {
		name string
		in   []byte
	}{
		{"struct order to sorted", marshal(outer{Name: "x", Labels: map[string]string{"b": "1", "a": "2"},
			In:  inner{Z: "z", A: []any{map[string]any{"y": 1, "x": []any{}}, nil, true, false, "s"}, F: 1.5},
			Big: 1<<63 - 1, Neg: -42, F32: 0.1, Empty: map[string]string{}, Raw: json.RawMessage(`{"k":{"q":1,"p":2.0}}`)})},
		{"html characters unescaped", marshal(map[string]string{"a": "<b> & </b>", "<": ">"})},
		{"escapes kept", marshal(map[string]string{"q": "say \"hi\"\\ \n\t\r\b\f \x01\x1f \u2028\u2029 \x7f"})},
		{"keys with quotes sorted by value", marshal(map[string]int{`k:{"type":"Ready"}`: 1, `k:{"type":"A"}`: 2, "f:x": 3, `k:{"a\\"}`: 4})},
		{"unicode", marshal(map[string]string{"é": "日本語 ✓", "e": "😀"})},
		{"floats", []byte(`{"a":1.0,"b":1e3,"c":-0,"d":0.000001,"e":1e21,"f":123456789012345678901234,"g":-0.0}`)},
		{"whitespace", []byte(" { \"b\" : [ 1 , 2 ] , \"a\" : { } } ")},
		{"top array", []byte(`[{"b":1,"a":2},[],"x"]`)},
	}
	for _, tc := range same {
		t.Run(tc.name, func(t *testing.T) {
			var c CanonicalJSON
			got, ok := c.Rewrite(tc.in)
			if !ok {
				t.Fatalf("rewrite(%s) declined", tc.in)
			}
			if want := canonReference(t, tc.in); !bytes.Equal(got, want) {
				t.Fatalf("rewrite(%s)\n got %s\nwant %s", tc.in, got, want)
			}
		})
	}
	// What it does not reproduce exactly it declines (the long way then
	// decides), never rewrites differently.
	declined := []string{
		`{"a":1,"a":2}`,         // duplicate: a map keeps the last
		`{"a":"\/"}`,            // escapes encoding/json does not write
		`{"a":"\u0041"}`,        //
		`{"a":"\u000a"}`,        // written \n by encoding/json
		`{"a":"\u00E9"}`,        // upper-case hex
		"{\"a\":\"\xff\"}",      // invalid UTF-8
		"{\"a\":\"\u2028\"}",    // written escaped
		`{"a":1e999}`,           // out of range
		`{"a":tru}`, `{"a":1,}`, // invalid
		`{"a":1} x`,
		// Numbers outside JSON's grammar.
		`{"a":01}`, `{"a":-01}`, `{"a":1.}`, `{"a":1.e5}`, `{"a":-}`, `{"a":1e}`, `{"a":1e+}`, `{"a":+1}`, `{"a":.5}`, `{"a":1-2}`, `[00]`, `[-0.0.0]`,
	}
	for _, in := range declined {
		var c CanonicalJSON
		if got, ok := c.Rewrite([]byte(in)); ok {
			t.Errorf("rewrite(%s) = %s, want declined", in, got)
		}
	}
	deep := bytes.Repeat([]byte("["), canonMaxDepth+1)
	var c CanonicalJSON
	if _, ok := c.Rewrite(append(deep, bytes.Repeat([]byte("]"), canonMaxDepth+1)...)); ok {
		t.Error("rewrite of a document nested deeper than canonMaxDepth not declined")
	}
}
