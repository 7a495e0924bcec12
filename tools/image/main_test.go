package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage builds the image from a static etcdpvc built here, reads the
// OCI layout back with go-containerregistry, checks each platform's
// config, and runs the binary taken from the layer: version, and decode
// of a corpus value. This machine's platform gets the binary built here;
// the other gets the same file, as only the packaging is under test.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds etcdpvc")
	}
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("the image is for linux/amd64 and linux/arm64")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "etcdpvc")
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", bin, "./cmd/etcdpvc")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	o := Options{Version: "v9.8.7", Source: "https://example.invalid/etcdpvc", Binaries: map[string]string{"linux/amd64": bin, "linux/arm64": bin}}
	idx, images, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image")
	if err := Write(out, filepath.Join(dir, "etcdpvc-v9.8.7"), o.Version, idx, images); err != nil {
		t.Fatal(err)
	}
	if err := Write(out, "", o.Version, idx, images); err == nil {
		t.Error("Write wrote over an existing layout")
	}

	// Read the layout back, as crane would.
	lp, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	ii, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	// layout.Write makes the index the layout's index.json: its entries
	// are the platforms' images.
	inner := ii
	m, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	var native v1.Image
	for _, d := range m.Manifests {
		p := d.Platform.OS + "/" + d.Platform.Architecture
		platforms = append(platforms, p)
		img, err := inner.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		got := []string{cf.OS + "/" + cf.Architecture, strings.Join(cf.Config.Entrypoint, " "), cf.Config.User,
			cf.Config.Labels["org.opencontainers.image.version"], cf.Config.Labels["org.opencontainers.image.source"]}
		want := []string{p, BinaryPath, "65532:65532", "v9.8.7", "https://example.invalid/etcdpvc"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s config (-want +got):\n%s", p, diff)
		}
		if p == runtime.GOOS+"/"+runtime.GOARCH {
			native = img
		}
	}
	if diff := cmp.Diff(Platforms, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	if native == nil {
		t.Fatal("no image for this machine's platform")
	}

	// Unpack the binary from the image's file system and run it.
	run := filepath.Join(dir, "unpacked", "etcdpvc")
	extract(t, native, strings.TrimPrefix(BinaryPath, "/"), run)
	v, err := exec.Command(run, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(v), "etcdpvc ") {
		t.Errorf("etcdpvc version from the image: %v\n%s", err, v)
	}
	corpus, _ := filepath.Abs("../../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	d, err := exec.Command(run, "decode", corpus).CombinedOutput()
	if err != nil || !strings.Contains(string(d), "name: www-web-0") {
		t.Errorf("etcdpvc decode from the image: %v\n%s", err, d)
	}

	// The docker load tarball holds the same image: the same config (the
	// manifest differs, in docker's media types).
	native2, err := tarball.ImageFromPath(filepath.Join(dir, "etcdpvc-v9.8.7-"+runtime.GOOS+"-"+runtime.GOARCH+".image.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := native.ConfigName()
	d2, _ := native2.ConfigName()
	if d1 != d2 {
		t.Errorf("tarball image config %s, layout image config %s", d2, d1)
	}
}

// extract writes the file name of img's file system to dst.
func extract(t *testing.T, img v1.Image, name, dst string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s is not in the image", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != name {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, os.FileMode(h.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return
	}
}
