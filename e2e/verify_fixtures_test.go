package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// This file sorts after every scenario, so that with -capture the test
// checks the fixtures the run has just written.

// TestCapturedFixtures checks the fixtures committed under testdata: every
// .bin matches its .meta.txt, and `etcdpvc decode` turns it into the object
// the apiserver served when it was captured (its .json), but for
// resourceVersion, which a lone value does not carry, and the fields the
// apiserver defaults on read. It needs no servers.
func TestCapturedFixtures(t *testing.T) {
	bins, err := filepath.Glob(filepath.Join(fixturesDir, "*", "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bins) == 0 {
		t.Fatalf("no fixtures under %s: run the suite with -capture", fixturesDir)
	}
	encryptionConfig, err := filepath.Abs(filepath.Join(fixturesDir, "encrypted", "encryption-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range bins {
		base := strings.TrimSuffix(bin, ".bin")
		t.Run(strings.TrimPrefix(base, fixturesDir+"/"), func(t *testing.T) {
			value, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			meta, err := os.ReadFile(base + ".meta.txt")
			if err != nil {
				t.Fatal(err)
			}
			fields := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(meta)), "\n") {
				k, v, _ := strings.Cut(line, "=")
				fields[k] = v
			}
			if got := fmt.Sprintf("%x", sha256.Sum256(value)); got != fields["value_sha256"] {
				t.Fatalf("sha256 %s, .meta.txt says %s", got, fields["value_sha256"])
			}
			served, err := os.ReadFile(base + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal(served, &want); err != nil {
				t.Fatalf("%s.json: %v", base, err)
			}
			if rv := lookup(want, []string{"metadata", "resourceVersion"}); rv != fields["kubectl_resourceVersion"] {
				t.Errorf("%s.json has resourceVersion %v, .meta.txt says %s", base, rv, fields["kubectl_resourceVersion"])
			}

			args := []string{"decode", bin, "-o", "json", "--show-secrets", "--show-managed-fields", "--etcd-key", fields["key"]}
			if bytes.HasPrefix(value, []byte("k8s:enc:")) {
				args = append(args, "--encryption-config", encryptionConfig)
			}
			r := runEtcdpvc(t, nil, args...)
			if r.code != 0 {
				t.Fatalf("want exit status 0:\n%s", r)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("etcdpvc decode -o json: %v\n%s", err, r)
			}
			for _, m := range []map[string]any{want, got} {
				remove(m, []string{"metadata", "resourceVersion"})
			}
			for _, path := range defaultedOnRead[resourceOf(fields["key"])] {
				if lookup(got, path) == nil {
					remove(want, path)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("etcdpvc decode differs from the apiserver's JSON (-apiserver +etcdpvc):\n%s", diff)
			}
		})
	}
}
