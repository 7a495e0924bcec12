// Command image builds etcdpvc's node image from the static release
// binaries, without a container daemon, with go-containerregistry (as ko
// and crane do): an OCI image index for linux/amd64 and linux/arm64, each
// image one layer holding the binary at /usr/local/bin/etcdpvc and a
// world-writable /tmp, the binary as entrypoint, the non-root user
// 65532 (any other user works too), and labels for the version and the
// source. It writes an OCI layout directory (crane push takes it) and one
// tarball per platform that docker load takes.
//
//	go run ./tools/image -version V -out dist/image -tar-prefix dist/etcdpvc-V \
//	    linux/amd64=dist/etcdpvc-V-linux-amd64 linux/arm64=dist/etcdpvc-V-linux-arm64
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BinaryPath is where the image holds the binary; its directory is on
// PATH, so that `kubectl debug ... -- etcdpvc ...` finds it.
const BinaryPath = "/usr/local/bin/etcdpvc"

// User is the image's default user: distroless's nonroot.
const User = "65532:65532"

// Options are what an image records.
type Options struct {
	Version, Source string
	// Binaries maps "os/arch" to the static binary for that platform.
	Binaries map[string]string
}

// Platforms are the platforms Build makes, in index order.
var Platforms = []string{"linux/amd64", "linux/arm64"}

// Build makes the image index: one image per platform of Platforms.
func Build(o Options) (v1.ImageIndex, map[string]v1.Image, error) {
	idx := v1.ImageIndex(empty.Index)
	idx = mutate.IndexMediaType(idx, types.OCIImageIndex)
	images := map[string]v1.Image{}
	for _, p := range Platforms {
		bin, ok := o.Binaries[p]
		if !ok {
			return nil, nil, fmt.Errorf("no binary for %s", p)
		}
		img, err := platformImage(o, p, bin)
		if err != nil {
			return nil, nil, err
		}
		osName, arch, _ := strings.Cut(p, "/")
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}}})
		images[p] = img
	}
	return idx, images, nil
}

// epoch is every file's and the image's time: the same binaries make the
// same image.
var epoch = time.Unix(0, 0).UTC()

func platformImage(o Options, platform, bin string) (v1.Image, error) {
	body, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []struct {
		name string
		mode int64
	}{{"usr/", 0o755}, {"usr/local/", 0o755}, {"usr/local/bin/", 0o755}, {"tmp/", 0o1777}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(BinaryPath, "/"), Mode: 0o755, Size: int64(len(body)), ModTime: epoch}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(body); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{Layer: layer, MediaType: types.OCILayer})
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	osName, arch, _ := strings.Cut(platform, "/")
	cf.OS, cf.Architecture = osName, arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.User = User
	cf.Config.WorkingDir = "/tmp"
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "etcdpvc",
		"org.opencontainers.image.version": o.Version,
		"org.opencontainers.image.source":  o.Source,
	}
	return mutate.ConfigFile(img, cf)
}

// Write writes idx as an OCI layout at dir (which must not exist), and
// each platform's image as a tarball at tarPrefix-OS-ARCH.image.tar,
// tagged etcdpvc:VERSION, for docker load.
func Write(dir, tarPrefix, version string, idx v1.ImageIndex, images map[string]v1.Image) error {
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("%s exists: remove it first", dir)
	}
	if _, err := layout.Write(dir, idx); err != nil {
		return err
	}
	if tarPrefix == "" {
		return nil
	}
	tag, err := name.NewTag("etcdpvc:" + strings.ReplaceAll(version, "+", "_"))
	if err != nil {
		return err
	}
	for _, p := range Platforms {
		path := tarPrefix + "-" + strings.ReplaceAll(p, "/", "-") + ".image.tar"
		if err := tarball.WriteToFile(path, tag, images[p]); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

func main() {
	version := flag.String("version", "", "the image's version label")
	source := flag.String("source", "https://github.com/etcdpvc/etcdpvc", "the image's source label")
	out := flag.String("out", "", "the OCI layout directory to write (a new one)")
	tarPrefix := flag.String("tar-prefix", "", "write each platform's docker load tarball at PREFIX-OS-ARCH.image.tar")
	flag.Parse()
	o := Options{Version: *version, Source: *source, Binaries: map[string]string{}}
	for _, a := range flag.Args() {
		p, bin, ok := strings.Cut(a, "=")
		if !ok {
			fail(fmt.Errorf("argument %q: want OS/ARCH=BINARY", a))
		}
		o.Binaries[p] = bin
	}
	if o.Version == "" || *out == "" {
		fail(errors.New("give -version and -out"))
	}
	idx, images, err := Build(o)
	if err == nil {
		err = Write(*out, *tarPrefix, o.Version, idx, images)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "image: error: %v\n", err)
	os.Exit(1)
}
