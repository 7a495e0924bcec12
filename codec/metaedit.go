package codec

import (
	"bytes"
	"fmt"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// MetaEdit is an edit of an object's metadata that EditMeta applies at the
// wire level (protobuf) or at the JSON level, without decoding the rest of
// the object, so that fields this build does not know are never lost.
type MetaEdit struct {
	// ClearDeletion removes deletionTimestamp and deletionGracePeriodSeconds.
	ClearDeletion bool
	// RemoveFinalizers removes these finalizers; RemoveAllFinalizers all.
	RemoveFinalizers    []string
	RemoveAllFinalizers bool
	// AddFinalizers appends finalizers not already present.
	AddFinalizers []string
	// SetLabels and SetAnnotations add or replace entries;
	// RemoveLabels and RemoveAnnotations delete keys.
	SetLabels         map[string]string
	RemoveLabels      []string
	SetAnnotations    map[string]string
	RemoveAnnotations []string
	// RemoveOwnerUIDs removes the ownerReferences with these uids;
	// RemoveAllOwners removes all of them.
	RemoveOwnerUIDs []string
	RemoveAllOwners bool
}

// ObjectMeta protobuf field numbers (k8s.io/apimachinery generated.proto).
const (
	metaDeletionTimestamp          = 9
	metaDeletionGracePeriodSeconds = 10
	metaLabels                     = 11
	metaAnnotations                = 12
	metaOwnerReferences            = 13
	metaFinalizers                 = 14
	ownerRefUID                    = 4
)

// EditMeta applies edit to a stored value (protobuf or JSON, plaintext) and
// returns the new stored value. For protobuf it rewrites only the metadata
// submessage and the lengths that enclose it; every other byte stays as
// stored. For JSON it changes only the edited members; key order, other
// members and their literal text stay as stored. An edit that changes
// nothing returns a value equal to the input.
func EditMeta(value []byte, edit MetaEdit) ([]byte, error) {
	switch Detect(value) {
	case FormatProtobuf:
		return editMetaProtobuf(value, edit)
	case FormatJSON:
		return editMetaJSON(value, edit)
	case FormatEncrypted:
		env, _ := ParseEncryptionHeader(value)
		return nil, &EncryptedError{Header: env}
	default:
		_, err := Decode(value)
		if err == nil {
			err = fmt.Errorf("%w", ErrUnsupported)
		}
		return nil, fmt.Errorf("edit metadata: %w", err)
	}
}

func editMetaProtobuf(value []byte, edit MetaEdit) ([]byte, error) {
	env, err := ParseUnknown(value)
	if err != nil {
		return nil, fmt.Errorf("edit metadata: %w", err)
	}
	meta, ok, err := metadataField(env.Raw)
	if err != nil {
		return nil, malformed("edit metadata: %v", err)
	}
	if !ok {
		return nil, malformed("edit metadata: %s has no metadata field", env.Kind)
	}
	newMeta, err := editMetaWire(meta, edit)
	if err != nil {
		return nil, fmt.Errorf("edit metadata of %s: %w", env.Kind, err)
	}
	if bytes.Equal(newMeta, meta) {
		return value, nil
	}
	raw, err := replaceMetadata(env.Raw, newMeta)
	if err != nil {
		return nil, malformed("edit metadata: %v", err)
	}
	return env.WithRaw(raw), nil
}

// mapEntry decodes a map<string,string> entry message (1: key, 2: value).
func mapEntry(b []byte) (key, val string, err error) {
	fs, err := parseFields(b)
	if err != nil {
		return "", "", err
	}
	for _, f := range fs {
		if f.typ != protowire.BytesType {
			return "", "", fmt.Errorf("map entry field %d has wire type %d", f.num, f.typ)
		}
		switch f.num {
		case 1:
			key = string(f.val)
		case 2:
			val = string(f.val)
		}
	}
	return key, val, nil
}

func appendMapEntry(out []byte, num protowire.Number, key, val string) []byte {
	var e []byte
	e = protowire.AppendTag(e, 1, protowire.BytesType)
	e = protowire.AppendString(e, key)
	e = protowire.AppendTag(e, 2, protowire.BytesType)
	e = protowire.AppendString(e, val)
	out = protowire.AppendTag(out, num, protowire.BytesType)
	return protowire.AppendBytes(out, e)
}

func appendString(out []byte, num protowire.Number, s string) []byte {
	out = protowire.AppendTag(out, num, protowire.BytesType)
	return protowire.AppendString(out, s)
}

// editMetaWire edits an ObjectMeta message. Fields are kept in their stored
// order; new entries go where the generated marshaller would put them:
// fields in number order and map entries sorted by key.
func editMetaWire(meta []byte, edit MetaEdit) ([]byte, error) {
	fields, err := parseFields(meta)
	if err != nil {
		return nil, malformed("%v", err)
	}
	removeFin := set(edit.RemoveFinalizers)
	removeLab := set(edit.RemoveLabels)
	removeAnn := set(edit.RemoveAnnotations)
	removeOwn := set(edit.RemoveOwnerUIDs)
	// Entries of each map still to add, sorted; existing keys are replaced
	// in place.
	pendingLab := pendingMap(edit.SetLabels)
	pendingAnn := pendingMap(edit.SetAnnotations)
	haveFin := map[string]bool{}
	var addFin []string

	for _, f := range fields {
		if f.num == metaFinalizers && f.typ == protowire.BytesType {
			haveFin[string(f.val)] = true
		}
	}
	for _, fin := range edit.AddFinalizers {
		if !haveFin[fin] && !removeFin[fin] && !edit.RemoveAllFinalizers {
			haveFin[fin] = true
			addFin = append(addFin, fin)
		}
	}

	out := make([]byte, 0, len(meta)+64)
	// flushBefore emits pending additions whose field number is below num.
	flushed := map[protowire.Number]bool{}
	flush := func(upTo protowire.Number) {
		if upTo > metaLabels && !flushed[metaLabels] {
			for _, kv := range pendingLab.rest() {
				out = appendMapEntry(out, metaLabels, kv[0], kv[1])
			}
			flushed[metaLabels] = true
		}
		if upTo > metaAnnotations && !flushed[metaAnnotations] {
			for _, kv := range pendingAnn.rest() {
				out = appendMapEntry(out, metaAnnotations, kv[0], kv[1])
			}
			flushed[metaAnnotations] = true
		}
		if upTo > metaFinalizers && !flushed[metaFinalizers] {
			for _, fin := range addFin {
				out = appendString(out, metaFinalizers, fin)
			}
			flushed[metaFinalizers] = true
		}
	}
	for i, f := range fields {
		// Pending additions of a field go after its last stored entry, or
		// before the first field numbered above it.
		if f.num > metaLabels || f.num > metaAnnotations || f.num > metaFinalizers {
			flush(f.num)
		}
		lastOf := func(n protowire.Number) bool {
			for _, g := range fields[i+1:] {
				if g.num == n {
					return false
				}
			}
			return true
		}
		switch f.num {
		case metaDeletionTimestamp, metaDeletionGracePeriodSeconds:
			if edit.ClearDeletion {
				continue
			}
		case metaLabels, metaAnnotations:
			if f.typ != protowire.BytesType {
				return nil, malformed("metadata field %d has wire type %d", f.num, f.typ)
			}
			k, v, err := mapEntry(f.val)
			if err != nil {
				return nil, malformed("metadata field %d: %v", f.num, err)
			}
			remove, pending := removeLab, &pendingLab
			if f.num == metaAnnotations {
				remove, pending = removeAnn, &pendingAnn
			}
			// Entries sorted below this key are emitted first.
			for _, kv := range pending.before(k) {
				out = appendMapEntry(out, f.num, kv[0], kv[1])
			}
			if remove[k] {
				pending.drop(k)
				continue
			}
			if nv, ok := pending.take(k); ok {
				if nv != v {
					out = appendMapEntry(out, f.num, k, nv)
					continue
				}
			}
			if lastOf(f.num) {
				out = append(out, f.data...)
				flush(f.num + 1)
				continue
			}
		case metaOwnerReferences:
			if edit.RemoveAllOwners {
				continue
			}
			if len(removeOwn) > 0 {
				uid, err := ownerUID(f)
				if err != nil {
					return nil, err
				}
				if removeOwn[uid] {
					continue
				}
			}
		case metaFinalizers:
			if f.typ != protowire.BytesType {
				return nil, malformed("metadata finalizer has wire type %d", f.typ)
			}
			if edit.RemoveAllFinalizers || removeFin[string(f.val)] {
				if lastOf(f.num) {
					flush(f.num + 1)
				}
				continue
			}
			if lastOf(f.num) {
				out = append(out, f.data...)
				flush(f.num + 1)
				continue
			}
		}
		out = append(out, f.data...)
	}
	flush(protowire.MaxValidNumber)
	return out, nil
}

func ownerUID(f wireField) (string, error) {
	if f.typ != protowire.BytesType {
		return "", malformed("ownerReference has wire type %d", f.typ)
	}
	fs, err := parseFields(f.val)
	if err != nil {
		return "", malformed("ownerReference: %v", err)
	}
	for _, g := range fs {
		if g.num == ownerRefUID {
			return string(g.val), nil
		}
	}
	return "", nil
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// sortedPending holds map entries still to be written, sorted by key.
type sortedPending struct{ kvs [][2]string }

func pendingMap(m map[string]string) sortedPending {
	p := sortedPending{}
	for k, v := range m {
		p.kvs = append(p.kvs, [2]string{k, v})
	}
	sort.Slice(p.kvs, func(i, j int) bool { return p.kvs[i][0] < p.kvs[j][0] })
	return p
}

// before removes and returns the pending entries whose key sorts below k.
func (p *sortedPending) before(k string) [][2]string {
	i := sort.Search(len(p.kvs), func(i int) bool { return p.kvs[i][0] >= k })
	out := p.kvs[:i:i]
	p.kvs = p.kvs[i:]
	return out
}

// take removes and returns the pending value for k.
func (p *sortedPending) take(k string) (string, bool) {
	for i, kv := range p.kvs {
		if kv[0] == k {
			p.kvs = append(p.kvs[:i:i], p.kvs[i+1:]...)
			return kv[1], true
		}
	}
	return "", false
}

func (p *sortedPending) drop(k string) { p.take(k) }

func (p *sortedPending) rest() [][2]string {
	out := p.kvs
	p.kvs = nil
	return out
}
