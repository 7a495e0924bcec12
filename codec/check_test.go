package codec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckAt: CheckAt accepts every value a real apiserver wrote, with
// the envelope's kind, and refuses what Decode refuses for damage: cut
// short, a flipped byte in the object, not an object; a Secret's bytes are
// never quoted.
func TestCheckAt(t *testing.T) {
	files, err := filepath.Glob("../fixtures/corpus/plain/*.bin")
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus: %v", err)
	}
	for _, f := range files {
		v, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		key := "/registry/" + strings.ReplaceAll(strings.TrimSuffix(filepath.Base(f), ".bin"), "__", "/")
		want, derr := DecodeAt(key, v, false)
		gvk, err := CheckAt(key, v)
		if (err == nil) != (derr == nil) || (derr == nil && gvk != want.GVK) {
			t.Errorf("%s: CheckAt = %v, %v; Decode = %v", filepath.Base(f), gvk, err, derr)
		}
		// Cut short: refused where Decode refuses (a cut after a whole
		// field of the envelope still decodes), and a cut in the
		// middle always.
		for _, n := range []int{len(v) - 1, len(v) - 2, len(v) / 2, 3} {
			_, cerr := CheckAt(key, v[:n])
			_, derr := DecodeAt(key, v[:n], false)
			if (cerr == nil) != (derr == nil) || (n == len(v)/2 && cerr == nil) {
				t.Errorf("%s cut to %d bytes: CheckAt %v, Decode %v", filepath.Base(f), n, cerr, derr)
			}
		}
	}
	if _, err := CheckAt("/registry/secrets/demo/x", []byte("hunter2-PLAINTEXT")); err == nil || strings.Contains(err.Error(), "hunter") {
		t.Errorf("a Secret's bytes: %v", err)
	}
}
