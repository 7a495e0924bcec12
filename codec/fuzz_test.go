package codec

import (
	"bytes"
	"testing"
)

func addCorpusSeeds(f *testing.F) {
	for _, bin := range corpusFiles(f) {
		f.Add(readFile(f, bin))
	}
	for _, name := range []string{"pod", "job"} {
		v := readFile(f, "../fixtures/peer/auger-2017/storage/"+name+".bin")
		f.Add(bytes.TrimSuffix(v, []byte("\n")))
	}
}

// FuzzDecode: no panic, and whenever decode succeeds on a kind this build
// knows, re-encoding and decoding again gives the same object.
func FuzzDecode(f *testing.F) {
	addCorpusSeeds(f)
	f.Fuzz(func(t *testing.T, value []byte) {
		sum, serr := Summarize(value)
		obj, err := Decode(value)
		if err != nil {
			return
		}
		// Whatever decodes lists with the same identity.
		if serr != nil {
			t.Fatalf("Decode succeeded but Summarize failed: %v", serr)
		}
		if sum.Kind != obj.GVK.Kind || sum.Name != obj.Meta.Name || sum.Namespace != obj.Meta.Namespace {
			t.Fatalf("Summarize %s %s/%s, Decode %s %s/%s", sum.Kind, sum.Namespace, sum.Name, obj.GVK.Kind, obj.Meta.Namespace, obj.Meta.Name)
		}
		re, err := obj.Reencode()
		if err != nil {
			return
		}
		again, err := Decode(re)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		re2, err := again.Reencode()
		if err != nil || !bytes.Equal(re, re2) {
			t.Fatalf("encoding is not stable: %v", err)
		}
	})
}

// FuzzEditMeta: no panic; when the edit succeeds on a value that decodes,
// the result decodes too, with the same kind and name.
func FuzzEditMeta(f *testing.F) {
	addCorpusSeeds(f)
	f.Fuzz(func(t *testing.T, value []byte) {
		before, err := Decode(value)
		if err != nil {
			return
		}
		for _, tc := range metaEdits {
			out, err := EditMeta(value, tc.edit)
			if err != nil {
				continue
			}
			after, err := Decode(out)
			if err != nil {
				t.Fatalf("%s: edited value does not decode: %v", tc.name, err)
			}
			if after.GVK != before.GVK || after.Meta.Name != before.Meta.Name || after.Meta.Namespace != before.Meta.Namespace {
				t.Fatalf("%s: identity changed", tc.name)
			}
		}
	})
}
