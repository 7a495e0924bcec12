package codec

import (
	"bytes"
	encjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"sort"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// jnode is a JSON value that keeps its members' order and its literals'
// exact text, so that an edit re-emits everything it did not change as it
// was stored.
type jnode struct {
	kind  byte // '{', '[' or 0 for a literal
	keys  []string
	rawKs [][]byte // the keys' literal text
	vals  []*jnode
	lit   []byte
}

// readOptions accept what encoding/json's decoder accepts: duplicated
// names, and invalid UTF-8 read as U+FFFD.
var readOptions = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// parseJNode parses one JSON document with jsontext's tokenizer, keeping
// each name's and each literal's text as it stands in b.
func parseJNode(b []byte) (*jnode, error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(b), readOptions)
	n, err := jnodeValue(dec, b)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("after the JSON value: %w", err)
	}
	return n, nil
}

func jnodeValue(dec *jsontext.Decoder, b []byte) (*jnode, error) {
	kind := dec.PeekKind()
	if kind != '{' && kind != '[' {
		lit, err := jnodeText(dec, b)
		return &jnode{lit: lit}, err
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	n := &jnode{kind: byte(kind)}
	for dec.PeekKind() != kind+2 { // '}' follows '{' by two, ']' '[' too
		if kind == '{' {
			raw, err := jnodeText(dec, b)
			if err != nil {
				return nil, err
			}
			// Invalid UTF-8 in a name reads as U+FFFD, as encoding/json
			// reads it.
			k, _ := jsontext.AppendUnquote(nil, raw)
			n.keys, n.rawKs = append(n.keys, string(k)), append(n.rawKs, raw)
		}
		v, err := jnodeValue(dec, b)
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, v)
	}
	_, err := dec.ReadToken()
	return n, err
}

// jnodeText reads a string or a literal and returns its text in b.
func jnodeText(dec *jsontext.Decoder, b []byte) ([]byte, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	end := int(dec.InputOffset())
	return b[end-len(v) : end], nil
}

// write emits n compactly.
func (n *jnode) write(buf *bytes.Buffer) {
	switch n.kind {
	case '{':
		buf.WriteByte('{')
		for i := range n.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(n.rawKs[i])
			buf.WriteByte(':')
			n.vals[i].write(buf)
		}
		buf.WriteByte('}')
	case '[':
		buf.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				buf.WriteByte(',')
			}
			v.write(buf)
		}
		buf.WriteByte(']')
	default:
		buf.Write(n.lit)
	}
}

func (n *jnode) index(k string) int {
	for i, key := range n.keys {
		if key == k {
			return i
		}
	}
	return -1
}

func (n *jnode) get(k string) *jnode {
	if i := n.index(k); i >= 0 {
		return n.vals[i]
	}
	return nil
}

func (n *jnode) del(k string) bool {
	i := n.index(k)
	if i < 0 {
		return false
	}
	n.keys = append(n.keys[:i:i], n.keys[i+1:]...)
	n.rawKs = append(n.rawKs[:i:i], n.rawKs[i+1:]...)
	n.vals = append(n.vals[:i:i], n.vals[i+1:]...)
	return true
}

// objectMetaOrder is the order of ObjectMeta's JSON members as Go's
// encoder writes the typed struct.
var objectMetaOrder = []string{"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
	"generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
	"annotations", "ownerReferences", "finalizers", "managedFields"}

// set puts v under k, in place when k exists, otherwise where the existing
// order says it belongs: sorted when the keys are sorted (the unstructured
// encoder's order), else after the last key that precedes it in order.
func (n *jnode) set(k string, v *jnode, order []string) {
	if i := n.index(k); i >= 0 {
		n.vals[i] = v
		return
	}
	rk, _ := encjson.Marshal(k)
	pos := len(n.keys)
	if sort.StringsAreSorted(n.keys) {
		pos = sort.SearchStrings(n.keys, k)
	} else if order != nil {
		rank := func(s string) int {
			for i, o := range order {
				if o == s {
					return i
				}
			}
			return len(order)
		}
		r := rank(k)
		pos = 0
		for i, key := range n.keys {
			if rank(key) <= r {
				pos = i + 1
			}
		}
	}
	n.keys = append(n.keys[:pos], append([]string{k}, n.keys[pos:]...)...)
	n.rawKs = append(n.rawKs[:pos], append([][]byte{rk}, n.rawKs[pos:]...)...)
	n.vals = append(n.vals[:pos], append([]*jnode{v}, n.vals[pos:]...)...)
}

// newJNode builds a node from a Go value the way encoding/json encodes it.
func newJNode(v any) (*jnode, error) {
	b, err := encjson.Marshal(v)
	if err != nil {
		return nil, err
	}
	return parseJNode(b)
}

// parseStoredJSON parses a stored JSON value, returning the document and
// what follows it (the apiserver's trailing newline).
func parseStoredJSON(value []byte) (*jnode, []byte, error) {
	doc := bytes.TrimRight(value, "\r\n")
	if !encjson.Valid(doc) {
		return nil, nil, malformed("invalid JSON: %v", jsonError(doc))
	}
	n, err := parseJNode(doc)
	if err != nil {
		return nil, nil, malformed("JSON: %v", err)
	}
	if n.kind != '{' {
		return nil, nil, fmt.Errorf("JSON value is not an object: %w", ErrNotObject)
	}
	return n, value[len(doc):], nil
}

func emitStoredJSON(n *jnode, trailer []byte) []byte {
	var buf bytes.Buffer
	n.write(&buf)
	if len(trailer) == 0 {
		trailer = []byte("\n")
	}
	buf.Write(trailer)
	return buf.Bytes()
}

func editMetaJSON(value []byte, edit MetaEdit) ([]byte, error) {
	doc, trailer, err := parseStoredJSON(value)
	if err != nil {
		return nil, fmt.Errorf("edit metadata: %w", err)
	}
	meta := doc.get("metadata")
	if meta == nil || meta.kind != '{' {
		return nil, fmt.Errorf("edit metadata: no metadata object: %w", ErrNotObject)
	}
	changed := false
	if edit.ClearDeletion {
		changed = meta.del("deletionTimestamp") || changed
		changed = meta.del("deletionGracePeriodSeconds") || changed
	}
	// Finalizers.
	if fins := meta.get("finalizers"); fins != nil || len(edit.AddFinalizers) > 0 {
		var list []string
		if fins != nil {
			if err := encjson.Unmarshal(nodeBytes(fins), &list); err != nil {
				return nil, malformed("edit metadata: finalizers: %v", err)
			}
		}
		rm := set(edit.RemoveFinalizers)
		var keep []string
		have := map[string]bool{}
		for _, f := range list {
			if edit.RemoveAllFinalizers || rm[f] {
				continue
			}
			keep = append(keep, f)
			have[f] = true
		}
		for _, f := range edit.AddFinalizers {
			if !have[f] && !rm[f] && !edit.RemoveAllFinalizers {
				keep = append(keep, f)
				have[f] = true
			}
		}
		if !reflect.DeepEqual(keep, list) && !(len(keep) == 0 && len(list) == 0) {
			changed = true
			if len(keep) == 0 {
				meta.del("finalizers")
			} else {
				nv, _ := newJNode(keep)
				meta.set("finalizers", nv, objectMetaOrder)
			}
		}
	}
	for _, m := range []struct {
		name   string
		set    map[string]string
		remove []string
	}{{"labels", edit.SetLabels, edit.RemoveLabels}, {"annotations", edit.SetAnnotations, edit.RemoveAnnotations}} {
		if len(m.set) == 0 && len(m.remove) == 0 {
			continue
		}
		node := meta.get(m.name)
		if node == nil {
			node = &jnode{kind: '{'}
		}
		if node.kind != '{' {
			return nil, malformed("edit metadata: %s is not an object", m.name)
		}
		c := false
		for _, k := range m.remove {
			c = node.del(k) || c
		}
		keys := make([]string, 0, len(m.set))
		for k := range m.set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			nv, _ := newJNode(m.set[k])
			if old := node.get(k); old != nil && bytes.Equal(nodeBytes(old), nodeBytes(nv)) {
				continue
			}
			node.set(k, nv, nil)
			c = true
		}
		if c {
			changed = true
			if len(node.keys) == 0 {
				meta.del(m.name)
			} else {
				meta.set(m.name, node, objectMetaOrder)
			}
		}
	}
	if owners := meta.get("ownerReferences"); owners != nil && (edit.RemoveAllOwners || len(edit.RemoveOwnerUIDs) > 0) {
		rm := set(edit.RemoveOwnerUIDs)
		var keep []*jnode
		for _, o := range owners.vals {
			uid := ""
			if u := o.get("uid"); u != nil {
				_ = encjson.Unmarshal(u.lit, &uid)
			}
			if edit.RemoveAllOwners || rm[uid] {
				continue
			}
			keep = append(keep, o)
		}
		if len(keep) != len(owners.vals) {
			changed = true
			if len(keep) == 0 {
				meta.del("ownerReferences")
			} else {
				owners.vals = keep
			}
		}
	}
	if !changed {
		return value, nil
	}
	return emitStoredJSON(doc, trailer), nil
}

func nodeBytes(n *jnode) []byte {
	var buf bytes.Buffer
	n.write(&buf)
	return buf.Bytes()
}

// MergeJSONText returns the stored JSON value rewritten to hold content,
// with the smallest change: members whose value did not change keep their
// stored text and position, removed members go, and new members are placed
// where the document's order says. resourceVersion and selfLink are never
// stored.
//
// content is the decoded view of the object (numbers are int64 or float64,
// as k8s.io/apimachinery/pkg/util/json decodes them), which cannot tell 1.0
// from 1 nor hold integers beyond 2^63 exactly: a stored number whose
// decoded value content still holds keeps its stored literal (1.0, 1e3,
// 12345678901234567890), in arrays too, so that an edit never rewrites the
// numbers it did not change.
//
// text, when not nil, is the new document as JSON text, for example the
// stored document with a patch applied to its text. Numbers take their
// literal from it: a number content holds that text holds at the same place
// with the same decoded value is written as text has it, and compared with
// the stored literal exactly, so that a change of 12345678901234567890 to
// 12345678901234567891, equal once decoded, is still made.
func MergeJSONText(stored []byte, content map[string]any, text []byte) ([]byte, error) {
	doc, trailer, err := parseStoredJSON(stored)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	var hint *jnode
	if text != nil {
		if hint, err = parseJNode(bytes.TrimSpace(text)); err != nil {
			return nil, fmt.Errorf("merge: new document: %w", err)
		}
	}
	content = copyJSON(content)
	if md, ok := content["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		delete(md, "selfLink")
	}
	merged, err := mergeNode(doc, content, nil, hint)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return emitStoredJSON(merged, trailer), nil
}

// SameJSONText reports whether two JSON texts hold the same value, numbers
// compared exactly (1.0 and 1e0 equal 1; 12345678901234567890 does not
// equal 12345678901234567891, although both decode to the same float64),
// object members in any order, whitespace ignored. Invalid JSON is equal
// to nothing.
func SameJSONText(a, b []byte) bool {
	if !encjson.Valid(a) || !encjson.Valid(b) {
		return false
	}
	x, errX := parseJNode(bytes.TrimSpace(a))
	y, errY := parseJNode(bytes.TrimSpace(b))
	return errX == nil && errY == nil && sameJSON(x, y)
}

// isNumber reports whether n is a number literal.
func isNumber(n *jnode) bool {
	return n != nil && n.kind == 0 && len(n.lit) > 0 && (n.lit[0] == '-' || (n.lit[0] >= '0' && n.lit[0] <= '9'))
}

// sameDecoded reports whether two number literals decode to the same value
// the way k8s.io/apimachinery/pkg/util/json decodes numbers: integers that
// fit int64 exactly, other numbers as float64.
func sameDecoded(a, b []byte) bool {
	x, errX := strconv.ParseInt(string(a), 10, 64)
	y, errY := strconv.ParseInt(string(b), 10, 64)
	if errX == nil && errY == nil {
		return x == y
	}
	f, errF := strconv.ParseFloat(string(a), 64)
	g, errG := strconv.ParseFloat(string(b), 64)
	return errF == nil && errG == nil && f == g
}

// sameNumber reports whether two number literals are the same number,
// exactly (1.0, 1 and 1e0 are; 12345678901234567890 and
// 12345678901234567891 are not).
func sameNumber(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	// 2048 bits hold about 600 significant digits.
	x, _, errX := big.ParseFloat(string(a), 10, 2048, big.ToNearestEven)
	y, _, errY := big.ParseFloat(string(b), 10, 2048, big.ToNearestEven)
	return errX == nil && errY == nil && x.Cmp(y) == 0
}

// fillLiterals gives the number literals of n, a node built from the
// decoded view, their literal text: text's at the same place when it
// decodes to the same value, else old's at the same place when it does.
func fillLiterals(n, text, old *jnode) {
	switch n.kind {
	case '{':
		for i, k := range n.keys {
			var t, o *jnode
			if text != nil && text.kind == '{' {
				t = text.get(k)
			}
			if old != nil && old.kind == '{' {
				o = old.get(k)
			}
			fillLiterals(n.vals[i], t, o)
		}
	case '[':
		for i, v := range n.vals {
			var t, o *jnode
			if text != nil && text.kind == '[' && i < len(text.vals) {
				t = text.vals[i]
			}
			if old != nil && old.kind == '[' && i < len(old.vals) {
				o = old.vals[i]
			}
			fillLiterals(v, t, o)
		}
	default:
		if !isNumber(n) {
			return
		}
		switch {
		case isNumber(text) && sameDecoded(n.lit, text.lit):
			n.lit = text.lit
		case text == nil && isNumber(old) && sameDecoded(n.lit, old.lit):
			n.lit = old.lit
		}
	}
}

// sameJSON reports whether two nodes hold the same JSON value, numbers
// compared exactly (sameNumber), object members in any order.
func sameJSON(a, b *jnode) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case '{':
		if len(a.keys) != len(b.keys) {
			return false
		}
		for i, k := range a.keys {
			w := b.get(k)
			if w == nil || !sameJSON(a.vals[i], w) {
				return false
			}
		}
		return true
	case '[':
		if len(a.vals) != len(b.vals) {
			return false
		}
		for i := range a.vals {
			if !sameJSON(a.vals[i], b.vals[i]) {
				return false
			}
		}
		return true
	}
	if isNumber(a) && isNumber(b) {
		return sameNumber(a.lit, b.lit)
	}
	return jsonEqual(a.lit, b.lit)
}

func copyJSON(m map[string]any) map[string]any {
	b, _ := encjson.Marshal(m)
	var out map[string]any
	d := encjson.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	_ = d.Decode(&out)
	return out
}

// mergeNode rewrites old to hold v, keeping what did not change; text, when
// not nil, is the new value as text (see MergeJSONText).
func mergeNode(old *jnode, v any, order []string, text *jnode) (*jnode, error) {
	nv, err := newJNode(v)
	if err != nil {
		return nil, err
	}
	fillLiterals(nv, text, old)
	if old != nil && sameJSON(old, nv) {
		return old, nil
	}
	m, isMap := v.(map[string]any)
	if old == nil || old.kind != '{' || !isMap {
		return nv, nil
	}
	out := &jnode{kind: '{'}
	for i, k := range old.keys {
		sub, ok := m[k]
		if !ok {
			continue
		}
		var o []string
		if k == "metadata" {
			o = objectMetaOrder
		}
		var t *jnode
		if text != nil && text.kind == '{' {
			t = text.get(k)
		}
		merged, err := mergeNode(old.vals[i], sub, o, t)
		if err != nil {
			return nil, err
		}
		out.keys, out.rawKs, out.vals = append(out.keys, k), append(out.rawKs, old.rawKs[i]), append(out.vals, merged)
	}
	var added []string
	for k := range m {
		if old.index(k) < 0 {
			added = append(added, k)
		}
	}
	sort.Strings(added)
	for _, k := range added {
		n, err := newJNode(m[k])
		if err != nil {
			return nil, err
		}
		if text != nil && text.kind == '{' {
			fillLiterals(n, text.get(k), nil)
		}
		out.set(k, n, order)
	}
	return out, nil
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	da := encjson.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := encjson.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
