package surgery

import (
	"bytes"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
)

// TestJSONNumberLiterals edits a custom resource stored as JSON whose
// numbers a decoded object cannot hold as written (1.0, 1e3, an integer
// beyond 2^53): a field patch or an edit of a sibling must keep their
// stored text, and a patch's own numbers are written as the patch has them.
func TestJSONNumberLiterals(t *testing.T) {
	stored := corpus(t, crFile)
	const spec = `"spec":{"color":"blue","size":3}`
	const lits = `"spec":{"color":"blue","ratio":1.0,"big":12345678901234567890,"thousand":1e3,"list":[1.0,12345678901234567890,1e3],"size":3}`
	if !bytes.Contains(stored, []byte(spec)) {
		t.Fatalf("corpus %s changed: no %s", crFile, spec)
	}
	cr := bytes.Replace(stored, []byte(spec), []byte(lits), 1)
	edited := func() map[string]any {
		c := codec.CopyContent(current(t, crKey, cr).Obj.Content)
		c["spec"].(map[string]any)["color"] = "red"
		return c
	}

	tests := []struct {
		name string
		edit Edit
		// want is the new stored spec; "" with errText set means an error.
		want, errText string
	}{
		{name: "merge patch of a sibling", edit: Patch{PatchMerge, []byte(`{"spec":{"color":"red"}}`)},
			want: strings.Replace(lits, `"blue"`, `"red"`, 1)},
		{name: "json patch of a sibling", edit: Patch{PatchJSON, []byte(`[{"op":"replace","path":"/spec/color","value":"red"}]`)},
			want: strings.Replace(lits, `"blue"`, `"red"`, 1)},
		{name: "json patch of a list element", edit: Patch{PatchJSON, []byte(`[{"op":"replace","path":"/spec/list/2","value":7}]`)},
			want: strings.Replace(lits, `1e3],`, `7],`, 1)},
		{name: "edit of a sibling", edit: Replace{Content: edited()},
			want: strings.Replace(lits, `"blue"`, `"red"`, 1)},
		{name: "patch sets a big integer as written", edit: Patch{PatchMerge, []byte(`{"spec":{"size":98765432109876543210}}`)},
			want: strings.Replace(lits, `"size":3`, `"size":98765432109876543210`, 1)},
		{name: "patch sets a number to the same value", edit: Patch{PatchMerge, []byte(`{"spec":{"ratio":1,"thousand":1000}}`)}},
		{name: "patch changes a big integer beyond float64", edit: Patch{PatchMerge, []byte(`{"spec":{"big":12345678901234567891}}`)},
			errText: "the patch only changes numbers beyond the precision of a decoded object (float64), which the diff cannot show; nothing written"},
		{name: "patch changes a big integer and a sibling", edit: Patch{PatchMerge, []byte(`{"spec":{"big":12345678901234567891,"color":"red"}}`)},
			want: strings.Replace(strings.Replace(lits, `"blue"`, `"red"`, 1), `"big":12345678901234567890`, `"big":12345678901234567891`, 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := current(t, crKey, cr)
			got, err := tc.edit.Transform(cur)
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if !bytes.Equal(got, cr) {
					t.Fatalf("changed:\n%s", got)
				}
				return
			}
			want := bytes.Replace(cr, []byte(lits), []byte(tc.want), 1)
			if !bytes.Equal(got, want) {
				t.Fatalf("stored value\n got %s\nwant %s", got, want)
			}
		})
	}
}
