package codec

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// applyTyped applies edit to a typed ObjectMeta, the reference semantics
// EditMeta must match.
func applyTyped(m *metav1.ObjectMeta, e MetaEdit) {
	if e.ClearDeletion {
		m.DeletionTimestamp = nil
		m.DeletionGracePeriodSeconds = nil
	}
	var fins []string
	for _, f := range m.Finalizers {
		if !e.RemoveAllFinalizers && !set(e.RemoveFinalizers)[f] {
			fins = append(fins, f)
		}
	}
	for _, f := range e.AddFinalizers {
		if !contains(fins, f) && !e.RemoveAllFinalizers && !set(e.RemoveFinalizers)[f] {
			fins = append(fins, f)
		}
	}
	m.Finalizers = fins
	m.Labels = editMap(m.Labels, e.SetLabels, e.RemoveLabels)
	m.Annotations = editMap(m.Annotations, e.SetAnnotations, e.RemoveAnnotations)
	var owners []metav1.OwnerReference
	for _, o := range m.OwnerReferences {
		if !e.RemoveAllOwners && !set(e.RemoveOwnerUIDs)[string(o.UID)] {
			owners = append(owners, o)
		}
	}
	m.OwnerReferences = owners
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func editMap(m map[string]string, s map[string]string, rm []string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for _, k := range rm {
		delete(out, k)
	}
	for k, v := range s {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

var metaEdits = []struct {
	name string
	edit MetaEdit
}{
	{"clear-deletion", MetaEdit{ClearDeletion: true}},
	{"remove-finalizer", MetaEdit{RemoveFinalizers: []string{"kubernetes.io/pvc-protection", "e2e.example.com/cleanup"}}},
	{"remove-all-finalizers", MetaEdit{RemoveAllFinalizers: true}},
	{"add-finalizer", MetaEdit{AddFinalizers: []string{"example.com/hold"}}},
	{"add-labels", MetaEdit{SetLabels: map[string]string{"aaa": "1", "app": "nginx", "zzz": "2"}}},
	{"change-label", MetaEdit{SetLabels: map[string]string{"app": "changed"}}},
	{"remove-label", MetaEdit{RemoveLabels: []string{"app", "absent"}}},
	{"annotate", MetaEdit{SetAnnotations: map[string]string{"etcdpvc.io/note": "x", "a": "b"}}},
	{"remove-annotation", MetaEdit{RemoveAnnotations: []string{"deployment.kubernetes.io/revision"}}},
	{"remove-owners", MetaEdit{RemoveAllOwners: true}},
	{"everything", MetaEdit{ClearDeletion: true, RemoveAllFinalizers: true, SetLabels: map[string]string{"m": "n"},
		RemoveLabels: []string{"app"}, SetAnnotations: map[string]string{"z": "y"}, RemoveAllOwners: true}},
	{"noop", MetaEdit{}},
}

// TestEditMetaMatchesTypedEncode checks, for every corpus value and edit,
// that the wire-level edit produces exactly what the apiserver's own
// encoder produces for the same object with the same edit.
func TestEditMetaMatchesTypedEncode(t *testing.T) {
	for _, bin := range corpusFiles(t) {
		stored := readFile(t, bin)
		for _, tc := range metaEdits {
			t.Run(corpusName(bin)+"/"+tc.name, func(t *testing.T) {
				got, err := EditMeta(stored, tc.edit)
				if err != nil {
					t.Fatalf("EditMeta: %v", err)
				}
				obj, err := Decode(stored)
				if err != nil {
					t.Fatal(err)
				}
				applyTyped(obj.Meta, tc.edit)
				var want []byte
				if obj.Format == FormatJSON && obj.Typed == nil {
					after, err := Decode(got)
					if err != nil {
						t.Fatalf("edited value does not decode: %v", err)
					}
					if diff := cmp.Diff(obj.Meta, after.Meta); diff != "" {
						t.Fatalf("metadata (-want +got):\n%s", diff)
					}
					return
				}
				if obj.Format == FormatJSON {
					// A typed JSON kind (CRD): compare decoded metadata; the
					// member order is checked by the JSON tests.
					after, err := Decode(got)
					if err != nil {
						t.Fatalf("edited value does not decode: %v", err)
					}
					if diff := cmp.Diff(obj.Meta, after.Meta); diff != "" {
						t.Fatalf("metadata (-want +got):\n%s", diff)
					}
					return
				}
				want, err = EncodeTyped(obj.Typed, FormatProtobuf)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("wire edit differs from typed encode\n got: %q\nwant: %q", got, want)
				}
				if tc.name == "noop" && !bytes.Equal(got, stored) {
					t.Fatal("no-op edit changed the value")
				}
			})
		}
	}
}

// withUnknownSpecField returns a stored protobuf value whose object message
// field 2 (spec) carries an extra field 999 that no Kubernetes version
// knows, as a newer apiserver would write it.
func withUnknownSpecField(t testing.TB, stored []byte) []byte {
	t.Helper()
	env, err := ParseUnknown(stored)
	if err != nil {
		t.Fatal(err)
	}
	fields, err := parseFields(env.Raw)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, f := range fields {
		if f.num == 2 {
			spec := append([]byte{}, f.val...)
			spec = protowire.AppendTag(spec, 999, protowire.BytesType)
			spec = protowire.AppendString(spec, "from-the-future")
			raw = protowire.AppendTag(raw, 2, protowire.BytesType)
			raw = protowire.AppendBytes(raw, spec)
			continue
		}
		raw = append(raw, f.data...)
	}
	return env.WithRaw(raw)
}

// outsideMetadata returns the object message without its metadata field.
func outsideMetadata(t testing.TB, value []byte) []byte {
	t.Helper()
	env, err := ParseUnknown(value)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, err := splitMetadata(env.Raw)
	if err != nil {
		t.Fatal(err)
	}
	return rest
}

// TestEditMetaKeepsUnknownFields proves that an edit never loses a field
// this build does not know: a typed decode and re-encode would drop it.
func TestEditMetaKeepsUnknownFields(t *testing.T) {
	stored := withUnknownSpecField(t, readFile(t, "../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-0__terminating.bin"))
	obj, err := Decode(stored)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.RoundTrips(); err == nil {
		t.Fatal("a typed round trip kept field 999; the test no longer proves anything")
	}
	for _, tc := range metaEdits {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EditMeta(stored, tc.edit)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(got, []byte("from-the-future")) {
				t.Fatal("unknown field 999 was lost")
			}
			if !bytes.Equal(outsideMetadata(t, got), outsideMetadata(t, stored)) {
				t.Fatal("bytes outside metadata changed")
			}
			after, err := Decode(got)
			if err != nil {
				t.Fatalf("edited value does not decode: %v", err)
			}
			want := obj.Meta.DeepCopy()
			applyTyped(want, tc.edit)
			if diff := cmp.Diff(want, after.Meta); diff != "" {
				t.Fatalf("metadata (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEditMetaUnknownKind edits a kind no scheme knows.
func TestEditMetaUnknownKind(t *testing.T) {
	stored := readFile(t, "../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	// Rename the kind in the envelope: route.openshift.io/v1 Route.
	env, err := ParseUnknown(stored)
	if err != nil {
		t.Fatal(err)
	}
	var tm []byte
	tm = appendString(tm, 1, "route.openshift.io/v1")
	tm = appendString(tm, 2, "Route")
	var v []byte
	v = append(v, ProtobufMagic...)
	v = protowire.AppendTag(v, 1, protowire.BytesType)
	v = protowire.AppendBytes(v, tm)
	v = protowire.AppendTag(v, 2, protowire.BytesType)
	v = protowire.AppendBytes(v, env.Raw)
	v = appendString(v, 3, "")
	v = appendString(v, 4, "")

	obj, err := Decode(v)
	if err != nil {
		t.Fatalf("Decode unknown kind: %v", err)
	}
	if obj.Typed != nil || obj.GVK.Kind != "Route" || obj.Meta.Name != "www-web-0" || obj.Meta.DeletionTimestamp == nil {
		t.Fatalf("decoded %+v", obj)
	}
	if len(obj.Undecoded) == 0 {
		t.Fatal("no undecoded bytes reported")
	}
	got, err := EditMeta(v, MetaEdit{ClearDeletion: true})
	if err != nil {
		t.Fatal(err)
	}
	after, err := Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	if after.Meta.DeletionTimestamp != nil || after.Meta.DeletionGracePeriodSeconds != nil {
		t.Fatal("deletion not cleared")
	}
	if !bytes.Equal(after.Undecoded, obj.Undecoded) {
		t.Fatal("undecoded bytes changed")
	}
}

// TestEditMetaJSONKeepsOrder edits JSON-stored objects and checks that only
// the edited members change.
func TestEditMetaJSONKeepsOrder(t *testing.T) {
	for _, tc := range []struct {
		file string
		edit MetaEdit
		want string
	}{
		{"widgets.e2e.example.com__demo__w1.bin", MetaEdit{RemoveAllFinalizers: true},
			`"generation":1,"managedFields"`},
		{"widgets.e2e.example.com__demo__w1.bin", MetaEdit{SetLabels: map[string]string{"x": "1"}},
			`"generation":1,"labels":{"x":"1"},"managedFields"`},
		{"customresourcedefinitions__-__widgets.e2e.example.com.bin", MetaEdit{SetLabels: map[string]string{"x": "1"}},
			`"creationTimestamp":"2026-11-30T00:35:13Z","labels":{"x":"1"},"managedFields"`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			stored := readFile(t, "../fixtures/corpus/plain/"+tc.file)
			got, err := EditMeta(stored, tc.edit)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(got, []byte(tc.want)) {
				t.Fatalf("edited JSON lacks %s:\n%s", tc.want, got)
			}
			if !bytes.HasSuffix(got, []byte("}\n")) || bytes.HasSuffix(got, []byte("\n\n")) {
				t.Fatal("trailing newline not kept")
			}
			// Everything after metadata is unchanged.
			i, j := bytes.Index(stored, []byte(`,"spec":`)), bytes.Index(got, []byte(`,"spec":`))
			if i < 0 || j < 0 || !bytes.Equal(stored[i:], got[j:]) {
				t.Fatal("bytes after metadata changed")
			}
		})
	}
}
