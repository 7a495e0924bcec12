package codec

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// previousEncoding is what the short way wrote before SortedEncoder: the
// object encoded by encoding/json, then rewritten sorted by CanonicalJSON.
func previousEncoding(v any) ([]byte, bool) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, false
	}
	var c CanonicalJSON
	out, ok := c.Rewrite(buf.Bytes())
	return bytes.Clone(out), ok
}

// filler fills values of any type at random, with the strings, numbers
// and shapes that matter to an encoder: escapes, HTML characters,
// U+2028, non-ASCII, empty and nil maps and slices, zero values.
type filler struct {
	r     *rand.Rand
	depth int
}

var fillStrings = []string{"", "a", "web-0", "<b> & </b>", "say \"hi\"\\", "line\nbreak\ttab\r\b\f", "\x01\x1f\x7f", "\u2028\u2029", "日本語 ✓ 😀", "é", "k:{\"type\":\"Ready\"}", "f:metadata"}

func (f *filler) fill(v reflect.Value) {
	switch v.Interface().(type) {
	case metav1.Time:
		if f.r.IntN(3) > 0 {
			v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(f.r.Int64N(4e9), 0).UTC())))
		}
		return
	case metav1.MicroTime:
		if f.r.IntN(3) > 0 {
			v.Set(reflect.ValueOf(metav1.NewMicroTime(time.Unix(f.r.Int64N(4e9), f.r.Int64N(1e9)).UTC())))
		}
		return
	case resource.Quantity:
		v.Set(reflect.ValueOf(resource.MustParse([]string{"0", "1", "10Gi", "500m", "1.5", "2e3"}[f.r.IntN(6)])))
		return
	case intstr.IntOrString:
		if f.r.IntN(2) == 0 {
			v.Set(reflect.ValueOf(intstr.FromInt32(f.r.Int32N(100) - 50)))
		} else {
			v.Set(reflect.ValueOf(intstr.FromString(fillStrings[f.r.IntN(len(fillStrings))])))
		}
		return
	case metav1.FieldsV1:
		raw := []string{`{"f:spec":{"f:b":{},"f:a":{".":{}}},"f:metadata":{}}`, `{}`, `{"k:{\"type\":\"B\"}":{},"k:{\"type\":\"A\"}":{"\u003c":1}}`}[f.r.IntN(3)]
		v.Set(reflect.ValueOf(metav1.FieldsV1{Raw: []byte(raw)}))
		return
	case runtime.RawExtension:
		if f.r.IntN(2) == 0 {
			v.Set(reflect.ValueOf(runtime.RawExtension{Raw: []byte(`{"z":1,"a":[1.5,2,{"y":null,"b":"<"}]}`)}))
		}
		return
	}
	f.depth++
	defer func() { f.depth-- }()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := []int64{0, 1, -1, 42, 1<<31 - 1, -1 << 31}[f.r.IntN(6)]
		if v.OverflowInt(n) {
			n = 0
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := []uint64{0, 1, 255}[f.r.IntN(3)]
		if v.OverflowUint(n) {
			n = 0
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, 1, 1.5, -0.25, 1e21}[f.r.IntN(5)])
	case reflect.String:
		v.SetString(fillStrings[f.r.IntN(len(fillStrings))])
	case reflect.Pointer:
		if f.depth > 12 || f.r.IntN(3) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem())
		v.Set(p)
	case reflect.Slice:
		switch n := f.r.IntN(4); {
		case n == 0 || f.depth > 12:
		case n == 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := range n - 1 {
				f.fill(s.Index(i))
			}
			v.Set(s)
		}
	case reflect.Map:
		switch n := f.r.IntN(4); {
		case n == 0 || f.depth > 12:
		default:
			m := reflect.MakeMap(v.Type())
			for range n - 1 {
				k := reflect.New(v.Type().Key()).Elem()
				f.fill(k)
				e := reflect.New(v.Type().Elem()).Elem()
				f.fill(e)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	}
}

// TestSortedEncoder checks, for every kind of Scheme filled at
// random many times, that SortedEncoder writes byte for byte what
// encoding/json and CanonicalJSON wrote before, or declines; and that it
// declines none of the kinds the apiserver stores as protobuf in the
// corpora.
func TestSortedEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var kinds []string
	types := map[string]reflect.Type{}
	for gvk, typ := range Scheme.AllKnownTypes() {
		k := gvk.String()
		kinds = append(kinds, k)
		types[k] = typ
	}
	sort.Strings(kinds)
	declined := map[string]bool{}
	compared := 0
	for _, k := range kinds {
		typ := types[k]
		for i := range 30 {
			obj := reflect.New(typ)
			f := filler{r: r}
			f.fill(obj.Elem())
			want, wok := previousEncoding(obj.Interface())
			var e SortedEncoder
			if !e.Encode(obj.Interface()) {
				declined[typ.String()] = true
				continue
			}
			if !wok {
				t.Errorf("%s #%d: SortedEncoder wrote what the previous path declines:\n%s", k, i, e.out)
				continue
			}
			compared++
			if !bytes.Equal(e.out, want) {
				t.Fatalf("%s #%d differs:\n got %s\nwant %s", k, i, e.out, want)
			}
		}
	}
	var d []string
	for typ := range declined {
		d = append(d, typ)
	}
	sort.Strings(d)
	t.Logf("%d objects compared; types declined: %s", compared, strings.Join(d, ", "))
	for _, stored := range []string{"v1.ConfigMap", "v1.Secret", "v1.Pod", "v1.PersistentVolumeClaim", "v1.PersistentVolume", "v1.Service", "v1.ServiceAccount", "v1.Namespace", "v1.Event", "v1.ClusterRole", "v1.Deployment", "v1.StatefulSet", "v1.Lease", "v1.Endpoints", "v1.Node"} {
		for typ := range declined {
			if strings.HasSuffix(typ, stored) {
				t.Errorf("SortedEncoder declines %s", typ)
			}
		}
	}
	if compared < 1000 {
		t.Errorf("only %d objects compared", compared)
	}
}

// ptrMarshal has MarshalJSON on its pointer only: encoding/json calls it
// where the value is addressable, and encodes the struct elsewhere.
type ptrMarshal struct{ B, A int }

func (p *ptrMarshal) MarshalJSON() ([]byte, error) { return []byte(`{"z":1,"m":[3]}`), nil }

// badMarshal writes what encoding/json refuses.
type badMarshal string

func (b badMarshal) MarshalJSON() ([]byte, error) { return []byte(b), nil }

type embedded struct {
	X string `json:"x"`
	Y string `json:"y,omitempty"`
}

type embedded2 struct {
	X string `json:"x"`
	W string
}

type shapes struct {
	*embedded
	embedded2 `json:",inline"`
	Direct    embedded              `json:"direct"`
	P         ptrMarshal            `json:"p"`
	PM        map[string]ptrMarshal `json:"pm"`
	PS        []ptrMarshal          `json:"ps"`
	T         metav1.Time           `json:"t,omitzero"`
	TM        map[string]struct {
		T metav1.Time `json:"t,omitzero"`
	} `json:"tm"`
	Named  map[corev1ResourceName]int `json:"named,omitempty"`
	B      []byte                     `json:"b"`
	Skip   string                     `json:"-"`
	Dash   string                     `json:"-,"`
	NoTag  int
	Bad    int `json:"a\"b"`
	hidden int
}

type corev1ResourceName string

// TestSortedEncoderShapes covers encoding/json's rules the kinds of the
// scheme may not reach: embedded structs (a nil pointer one, a name
// annihilated between two at the same depth), MarshalJSON on the pointer
// (on a field, in a slice, in a map where it is not called), omitzero
// through a pointer IsZero on values that are not addressable, and the
// values and types declined.
func TestSortedEncoderShapes(t *testing.T) {
	zero := metav1.Time{}
	now := metav1.NewTime(time.Unix(1700000000, 0).UTC())
	values := []any{
		&shapes{},
		&shapes{embedded: &embedded{X: "e", Y: "y"}, embedded2: embedded2{X: "e2", W: "w"}, P: ptrMarshal{1, 2},
			PM: map[string]ptrMarshal{"b": {1, 2}, "a": {3, 4}}, PS: []ptrMarshal{{5, 6}}, T: now,
			TM: map[string]struct {
				T metav1.Time `json:"t,omitzero"`
			}{"x": {T: zero}, "y": {T: now}}, Named: map[corev1ResourceName]int{"z": 1, "cpu": 2}, B: []byte{0, 1, 2}, Skip: "s", Dash: "d", NoTag: 3, Bad: 4},
		shapes{P: ptrMarshal{7, 8}}, // not addressable at the top
		&struct {
			Secret RedactedSecret `json:"s"`
		}{Secret: redactedForTest()},
	}
	for i, v := range values {
		want, wok := previousEncoding(v)
		var e SortedEncoder
		if !e.Encode(v) {
			t.Errorf("#%d: declined", i)
			continue
		}
		if !wok || !bytes.Equal(e.out, want) {
			t.Errorf("#%d:\n got %s\nwant %s (%v)", i, e.out, want, wok)
		}
	}
	big := uint64(1 << 63)
	declined := []any{
		&struct{ F float64 }{1},
		&struct{ I any }{1},
		&struct {
			S int `json:"s,string"`
		}{1},
		&struct{ M map[int]string }{},
		&struct{ U uint64 }{big},
		&struct{ S string }{"\xff"},
		&struct{ B badMarshal }{`{"a":01}`},
		&struct{ B badMarshal }{`{"a":1,}`},
		&struct{ B badMarshal }{`[1] 2`},
		&struct{ B badMarshal }{``},
		// encoding/json writes an unexported embedded struct given a
		// JSON name.
		&withUnexportedEmbedded{innerStruct: innerStruct{A: 1}, B: 2},
		// Nested deeper than canonMaxDepth.
		deepList(canonMaxDepth + 1),
	}
	for i, v := range declined {
		var e SortedEncoder
		if e.Encode(v) {
			t.Errorf("declined #%d written: %.200s", i, e.out)
		}
	}
}

// redactedForTest is a Secret with data and stringData redacted, so that
// the encoders must take the redacted fields, not the Secret's own.
func redactedForTest() RedactedSecret {
	r, ok := RedactTypedSecret(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Data:       map[string][]byte{"password": []byte("hunter2")},
		StringData: map[string]string{"token": "abc"},
	})
	if !ok {
		panic("declined")
	}
	return r
}

type innerStruct struct{ A int }

type withUnexportedEmbedded struct {
	innerStruct `json:"inner"`
	B           int
}

// nested is a list nested in itself.
type nested struct {
	N *nested `json:"n,omitempty"`
}

// deepList is a nested value n levels deep.
func deepList(n int) *nested {
	v := &nested{}
	for range n {
		v = &nested{N: v}
	}
	return v
}
