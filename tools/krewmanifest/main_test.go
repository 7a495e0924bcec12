package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// krewValidator is krew's own manifest validation, the program krew-index
// runs on every submitted manifest.
const krewValidator = "sigs.k8s.io/krew/cmd/validate-krew-manifest@v0.4.3"

// archive writes a release archive holding the binary etcdpvc.
func archive(t *testing.T, dir, name string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	body := []byte("#!/bin/sh\necho " + name + "\n")
	if err := tw.WriteHeader(&tar.Header{Name: "etcdpvc", Mode: 0o755, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
	gz.Close()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// validate runs krew's validator on the manifest at path (structure,
// platforms, no overlapping selectors; not the install, which needs
// kubectl krew).
func validate(t *testing.T, path string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to run krew's validator")
	}
	out, err := exec.Command("go", "run", krewValidator, "-manifest", path, "-skip-install").CombinedOutput()
	return string(out), err
}

// TestManifestValidates: the manifest of two platforms' archives carries
// each archive's URL and sha256, and krew's validation accepts it.
func TestManifestValidates(t *testing.T) {
	if testing.Short() {
		t.Skip("builds krew's validator")
	}
	dir := t.TempDir()
	const version = "v0.3.0-rc.1"
	var archives []string
	for _, arch := range []string{"amd64", "arm64"} {
		archives = append(archives, archive(t, dir, "etcdpvc-"+version+"-linux-"+arch+".tar.gz"))
	}
	m, err := Build(version, "https://example.invalid/releases/"+version+"/", "https://example.invalid/etcdpvc", archives)
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "plugins", "etcdpvc.yaml")
	if err := writeNew(manifest, m); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(manifest)
	for _, a := range archives {
		b, _ := os.ReadFile(a)
		sum := sha256.Sum256(b)
		for _, want := range []string{"sha256: " + hex.EncodeToString(sum[:]), "uri: https://example.invalid/releases/" + version + "/" + filepath.Base(a)} {
			if !strings.Contains(string(text), want) {
				t.Errorf("manifest lacks %q:\n%s", want, text)
			}
		}
	}
	if out, err := validate(t, manifest); err != nil {
		t.Fatalf("krew's validation refused the manifest: %v\n%s\n%s", err, out, text)
	}
	if err := writeNew(manifest, m); err == nil {
		t.Error("writeNew wrote over an existing manifest")
	}

	// The validator is no rubber stamp: a version without its v is refused.
	bad := filepath.Join(dir, "bad", "etcdpvc.yaml")
	m.Version = strings.TrimPrefix(version, "v")
	if err := writeNew(bad, m); err != nil {
		t.Fatal(err)
	}
	if out, err := validate(t, bad); err == nil {
		t.Errorf("krew's validation accepted version %q:\n%s", m.Version, out)
	}
}

func TestBuildRefusesStrangeArchives(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"etcdpvc-linux-amd64.zip", "etcdpvc-v1.0.0-linux-amd64.tar.gz"} {
		a := archive(t, dir, name)
		if _, err := Build("v2.0.0", "https://x/", "https://x", []string{a}); err == nil {
			t.Errorf("Build accepted %s for v2.0.0", name)
		}
	}
	if _, err := Build("v2.0.0", "https://x/", "https://x", nil); err == nil {
		t.Error("Build made a manifest of no archives")
	}
}
