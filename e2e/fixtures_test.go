package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixturesDir is where -capture writes.
const fixturesDir = "testdata/fixtures"

// apiGroupPaths maps the resources the scenarios capture to their API
// group's path; the core group is the default.
var apiGroupPaths = map[string]string{
	"statefulsets": "/apis/apps/v1",
	"clusterroles": "/apis/rbac.authorization.k8s.io/v1",
}

// capture, with -capture, writes kv's stored bytes as
// testdata/fixtures/SET/<resource>__<namespace>__<name>[__<variant>].bin,
// the apiserver's JSON of the object at that revision as .json, and the
// key's revisions and checksum as .meta.txt: the layout of fixtures/corpus.
// A cluster-scoped object has "-" for its namespace.
func (c *Cluster) capture(t *testing.T, set, variant string, kv *mvccKV) {
	t.Helper()
	if !*captureFixtures {
		return
	}
	parts := strings.Split(strings.TrimPrefix(kv.Key, "/registry/"), "/")
	if len(parts) == 4 && parts[0] == "services" && parts[1] == "specs" {
		parts = append(parts[:1], parts[2:]...)
	}
	var resource, ns, name string
	switch len(parts) {
	case 2:
		resource, ns, name = parts[0], "-", parts[1]
	case 3:
		resource, ns, name = parts[0], parts[1], parts[2]
	default:
		t.Fatalf("capture %s: not a /registry/RESOURCE/[NAMESPACE/]NAME key", kv.Key)
	}
	group, ok := apiGroupPaths[resource]
	if !ok {
		group = "/api/v1"
	}
	apiPath := group + "/" + resource + "/" + name
	if ns != "-" {
		apiPath = group + "/namespaces/" + ns + "/" + resource + "/" + name
	}
	want := fmt.Sprint(kv.ModRevision)
	var served []byte
	eventually(t, "capture "+apiPath+" at revision "+want, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := c.Client.CoreV1().RESTClient().Get().AbsPath(apiPath).SetHeader("Accept", "application/json").DoRaw(ctx)
		if err != nil {
			return err
		}
		var meta struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			return err
		}
		if meta.Metadata.ResourceVersion != want {
			return fmt.Errorf("served at resourceVersion %s", meta.Metadata.ResourceVersion)
		}
		served = b
		return nil
	})
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, served, "", "    "); err != nil {
		t.Fatalf("capture %s: %v", apiPath, err)
	}
	pretty.WriteByte('\n')
	nameParts := []string{resource, ns, name}
	if variant != "" {
		nameParts = append(nameParts, variant)
	}
	base := filepath.Join(fixturesDir, set, strings.Join(nameParts, "__"))
	sum := sha256.Sum256(kv.Value)
	prefix := kv.Value[:min(len(kv.Value), 16)]
	text := []byte(string(prefix))
	for i, b := range text {
		if b < 0x20 || b > 0x7e {
			text[i] = '.'
		}
	}
	meta := fmt.Sprintf("key=%s\nmod_revision=%d\ncreate_revision=%d\nversion=%d\nlease=%d\nkubectl_resourceVersion=%s\nvalue_bytes=%d\nvalue_sha256=%x\nvalue_prefix_hex=%x\nvalue_prefix_text=%s\n",
		kv.Key, kv.ModRevision, kv.CreateRevision, kv.Version, kv.Lease, want, len(kv.Value), sum, prefix, text)
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		t.Fatal(err)
	}
	for ext, data := range map[string][]byte{".bin": kv.Value, ".json": pretty.Bytes(), ".meta.txt": []byte(meta)} {
		if err := os.WriteFile(base+ext, data, 0o644); err != nil {
			t.Fatalf("capture: %v", err)
		}
	}
	t.Logf("captured %s.{bin,json,meta.txt}", base)
}

// captureFile, with -capture, copies src to testdata/fixtures/SET/NAME.
func captureFile(t *testing.T, set, name, src string) {
	t.Helper()
	if !*captureFixtures {
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(fixturesDir, set, name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// etcdctlGet reads key's value with the etcdctl built alongside etcd: a
// reader independent of both etcdpvc and this suite's clientv3.
func etcdctlGet(t *testing.T, c *Cluster, key string) []byte {
	t.Helper()
	out, err := exec.Command(suite.etcdctl, "--endpoints", c.EtcdURL, "get", key, "-w", "json").Output()
	if err != nil {
		t.Fatalf("etcdctl get %s: %v", key, err)
	}
	var resp struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("etcdctl get %s -w json: %v\n%s", key, err, out)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcdctl get %s: %d values, want 1", key, len(resp.Kvs))
	}
	v, err := base64.StdEncoding.DecodeString(resp.Kvs[0].Value)
	if err != nil {
		t.Fatalf("etcdctl get %s: %v", key, err)
	}
	return v
}
