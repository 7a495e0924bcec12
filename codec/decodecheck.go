package codec

import (
	"encoding"
	encjson "encoding/json"
	"reflect"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// convertsToJSON reports whether typed surely converts to the JSON form
// fillFromTyped builds, without building it. false means only that the
// conversion itself must say, not that it fails.
//
// The encoding fails only where a Marshaler does, and the decoding into
// a map only on what bytes a Marshaler copies unchecked can hold
// (managedFields' fieldsV1): a number beyond float64, a nesting near the
// decoder's limit. When typed's type holds no Marshaler but fieldsV1,
// int-or-string and the ones that never fail (times, quantities), and no
// float or interface, only those two are checked (checkJSON); else
// typed is encoded as fillFromTyped does and its encoding checked.
func convertsToJSON(typed runtime.Object) bool {
	if v := reflect.ValueOf(typed); riskOf(v.Type()) != riskDoubt {
		return checkJSON(v)
	}
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

// Write checks b, the whole encoding, with validNumbers; a second
// Write makes the check fail.
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

// jsonRisk is what a type may hold that its conversion to JSON refuses.
type jsonRisk uint8

const (
	// riskNone is a type that always converts.
	riskNone jsonRisk = iota
	// riskCheck is a type that holds fieldsV1 or int-or-string values,
	// which checkJSON checks.
	riskCheck
	// riskDoubt is a type that holds what checkJSON does not check.
	riskDoubt
)

// typePlan is what checkJSON needs of a type: its jsonRisk, and for a
// struct the fields to check.
type typePlan struct {
	risk   jsonRisk
	fields []int
}

var (
	fieldsV1Type    = reflect.TypeFor[metav1.FieldsV1]()
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
	// neverFail are Marshalers that never fail and write valid JSON.
	neverFail = map[reflect.Type]bool{reflect.TypeFor[metav1.Time](): true, reflect.TypeFor[metav1.MicroTime](): true,
		reflect.TypeFor[resource.Quantity](): true}
	jsonMarshaler = reflect.TypeFor[encjson.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	// jsonPlans holds each type's *typePlan once known.
	jsonPlans sync.Map
)

// riskOf is t's jsonRisk.
func riskOf(t reflect.Type) jsonRisk { return planOf(t).risk }

// planOf is t's typePlan.
func planOf(t reflect.Type) *typePlan {
	if p, ok := jsonPlans.Load(t); ok {
		return p.(*typePlan)
	}
	// A type that holds itself is doubted while it is looked at.
	jsonPlans.Store(t, &typePlan{risk: riskDoubt})
	p := lookAt(t)
	jsonPlans.Store(t, p)
	return p
}

// lookAt finds t's typePlan from its parts.
func lookAt(t reflect.Type) *typePlan {
	switch {
	case t.Kind() == reflect.Pointer:
		// A pointer has its element's methods: it is what it points to.
		return &typePlan{risk: riskOf(t.Elem())}
	case neverFail[t]:
		return &typePlan{risk: riskNone}
	case t == fieldsV1Type || t == intOrStringType:
		return &typePlan{risk: riskCheck}
	case t.Implements(jsonMarshaler) || t.Implements(textMarshaler),
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler):
		return &typePlan{risk: riskDoubt}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &typePlan{risk: riskNone}
	case reflect.Slice, reflect.Array:
		return &typePlan{risk: riskOf(t.Elem())}
	case reflect.Map:
		if riskOf(t.Key()) != riskNone {
			return &typePlan{risk: riskDoubt}
		}
		return &typePlan{risk: riskOf(t.Elem())}
	case reflect.Struct:
		p := &typePlan{}
		for i := range t.NumField() {
			f := t.Field(i)
			if r := riskOf(f.Type); (f.IsExported() || f.Anonymous) && r != riskNone {
				p.risk = max(p.risk, r)
				p.fields = append(p.fields, i)
			}
		}
		return p
	}
	return &typePlan{risk: riskDoubt} // floats, interfaces, and what JSON does not encode
}

// checkJSON reports whether v, of a type not doubted (riskOf), converts
// to JSON: its fieldsV1 values are JSON that decodes into a map, its
// int-or-string values an int or a string.
func checkJSON(v reflect.Value) bool {
	t := v.Type()
	p := planOf(t)
	switch {
	case p.risk == riskNone:
		return true
	case p.risk == riskDoubt || !v.CanAddr() && t.Kind() != reflect.Pointer:
		return false
	case t == fieldsV1Type:
		b, err := v.Addr().Interface().(*metav1.FieldsV1).MarshalJSON()
		return err == nil && encjson.Valid(b) && validNumbers(b)
	case t == intOrStringType:
		ty := v.Addr().Interface().(*intstr.IntOrString).Type
		return ty == intstr.Int || ty == intstr.String
	}
	switch t.Kind() {
	case reflect.Pointer:
		return v.IsNil() || checkJSON(v.Elem())
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if !checkJSON(v.Index(i)) {
				return false
			}
		}
	case reflect.Map:
		// Map values are not addressable: checkJSON doubts them.
		for it := v.MapRange(); it.Next(); {
			if !checkJSON(it.Value()) {
				return false
			}
		}
	case reflect.Struct:
		for _, i := range p.fields {
			if !checkJSON(v.Field(i)) {
				return false
			}
		}
	}
	return true
}
