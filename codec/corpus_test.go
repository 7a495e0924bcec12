package codec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// corpusFiles returns the .bin files under fixtures/corpus/plain (values
// written by a real kube-apiserver v1.37.2 into etcd v3.7.3) and under
// fixtures/corpus-v1.*/plain (the same kinds written by older apiservers,
// see fixtures/apiserver).
func corpusFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("../fixtures/corpus/plain/*.bin")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	older, err := filepath.Glob("../fixtures/corpus-v1.*/plain/*.bin")
	if err != nil || len(older) == 0 {
		t.Fatalf("no corpus files of older apiservers: %v", err)
	}
	return append(files, older...)
}

// corpusName names a corpus file in a subtest: its base name, after the
// apiserver version for an older apiserver's ("v1.34-pods__demo__web-0.bin").
func corpusName(bin string) string {
	dir := filepath.Base(filepath.Dir(filepath.Dir(bin)))
	if v, ok := strings.CutPrefix(dir, "corpus-"); ok {
		return v + "-" + filepath.Base(bin)
	}
	return filepath.Base(bin)
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// twin reads the `kubectl get -o json` view stored beside a corpus value.
func twin(t testing.TB, bin string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readFile(t, strings.TrimSuffix(bin, ".bin")+".json"), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// serverSetOnRead drops what the apiserver adds when it serves an object
// but never stores: resourceVersion (the key's mod revision) and, since
// kubectl hides them, managedFields.
func serverSetOnRead(m map[string]any) map[string]any {
	m = deepCopy(m)
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		delete(md, "managedFields")
		delete(md, "selfLink")
	}
	return m
}

// appliedOnRead removes from the apiserver's view what the apiserver
// derives when it reads an object rather than what it stored:
//   - a PVC's status.phase defaults to Pending on decode;
//   - a StatefulSet's volumeClaimTemplates get apiVersion and kind filled in;
//   - a CRD is stored as apiextensions.k8s.io/v1beta1 and served converted
//     to v1, so only its metadata and names are compared.
func appliedOnRead(kind string, want, got map[string]any) {
	switch kind {
	case "PersistentVolumeClaim", "PersistentVolume":
		ws, _ := want["status"].(map[string]any)
		gs, _ := got["status"].(map[string]any)
		if ws != nil && gs != nil && gs["phase"] == nil && ws["phase"] == "Pending" {
			delete(ws, "phase")
		}
	case "StatefulSet":
		spec, _ := want["spec"].(map[string]any)
		tmpls, _ := spec["volumeClaimTemplates"].([]any)
		for _, t := range tmpls {
			if m, ok := t.(map[string]any); ok {
				delete(m, "apiVersion")
				delete(m, "kind")
			}
		}
	case "CustomResourceDefinition":
		for _, m := range []map[string]any{want, got} {
			spec, _ := m["spec"].(map[string]any)
			for k := range m {
				if k != "metadata" && k != "kind" {
					delete(m, k)
				}
			}
			m["names"] = spec["names"]
		}
	}
}

func deepCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// TestCorpusGolden decodes every corpus value and compares it with the
// apiserver's own JSON view, then checks that re-encoding gives the stored
// bytes back exactly.
func TestCorpusGolden(t *testing.T) {
	for _, bin := range corpusFiles(t) {
		t.Run(corpusName(bin), func(t *testing.T) { checkGolden(t, bin) })
	}
}

// checkGolden decodes the stored value in bin, compares it with the
// apiserver's JSON beside it and checks that it re-encodes to the same
// bytes.
func checkGolden(t *testing.T, bin string) {
	t.Helper()
	stored := readFile(t, bin)
	obj, err := Decode(stored)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := serverSetOnRead(twin(t, bin))
	got := serverSetOnRead(obj.Content)
	appliedOnRead(obj.GVK.Kind, want, got)
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("decoded object differs from kubectl's view (-kubectl +decoded):\n%s", diff)
	}
	if obj.Meta.Name != want["metadata"].(map[string]any)["name"] {
		t.Errorf("Meta.Name = %q", obj.Meta.Name)
	}
	if err := obj.RoundTrips(); err != nil {
		re, _ := obj.Reencode()
		t.Errorf("Encode(Decode(v)) != v: %v\nstored:  %q\nencoded: %q", err, stored, re)
	}
}

// TestEtcdctlForms checks the two ways etcdctl prints a value.
func TestEtcdctlForms(t *testing.T) {
	base := "../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-0__terminating"
	stored := readFile(t, base+".bin")
	for _, tc := range []struct{ name, file string }{
		{"print-value-only", base + ".etcdctl-print-value-only.out"},
		{"json", base + ".etcdctl-get.json"},
		{"raw", base + ".bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := ReadInput(bytes.NewReader(readFile(t, tc.file)))
			if err != nil {
				t.Fatalf("ReadInput: %v", err)
			}
			if !bytes.Equal(in.Value, stored) {
				t.Fatalf("value = %q, want the stored bytes", in.Value)
			}
			if tc.name == "json" && in.Key != "/registry/persistentvolumeclaims/demo/www-web-0" {
				t.Errorf("key = %q", in.Key)
			}
		})
	}
}
