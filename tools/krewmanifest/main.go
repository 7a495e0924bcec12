// Command krewmanifest writes the krew plugin manifest of a release: the
// plugin `kubectl etcdpvc`, one platform for each release archive named
// etcdpvc-VERSION-OS-ARCH.tar.gz, with the archive's URL and sha256. make
// release runs it, then krew's own validate-krew-manifest on its output.
// It is hand-written because krew publishes no generator: its release bot
// fills a template with the same fields on GitHub only.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

// archiveName is a release archive's file name: its version, OS and
// architecture.
var archiveName = regexp.MustCompile(`^etcdpvc-(.+)-([a-z0-9]+)-([a-z0-9]+)\.tar\.gz$`)

// Platform is one archive of the manifest.
type Platform struct {
	OS, Arch, URI, SHA256 string
}

// Manifest is what the manifest says.
type Manifest struct {
	Version   string
	Homepage  string
	Platforms []Platform
}

var manifestTemplate = template.Must(template.New("krew").Parse(`apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: etcdpvc
spec:
  version: {{.Version}}
  homepage: {{.Homepage}}
  shortDescription: Break-glass surgery on Kubernetes objects in etcd
  description: |
    etcdpvc reads, and edits with a diff, a durable backup and a
    compare-and-swap, the objects kube-apiserver stores in etcd: undelete a
    Terminating PVC, restore an object from an etcd snapshot or write-ahead
    log. Run it on a control-plane node (kubectl debug node/NAME, then
    kubectl etcdpvc --node /host doctor) or with etcd's client certificates.
  platforms:
{{- range .Platforms}}
  - selector:
      matchLabels:
        os: {{.OS}}
        arch: {{.Arch}}
    uri: {{.URI}}
    sha256: {{.SHA256}}
    bin: etcdpvc
{{- end}}
`))

// Build reads the archives and returns the manifest of version, each
// archive found at uriBase followed by its file name.
func Build(version, uriBase, homepage string, archives []string) (Manifest, error) {
	m := Manifest{Version: version, Homepage: homepage}
	for _, a := range archives {
		sub := archiveName.FindStringSubmatch(filepath.Base(a))
		if sub == nil {
			return m, fmt.Errorf("%s: want a file named etcdpvc-VERSION-OS-ARCH.tar.gz", a)
		}
		if sub[1] != version {
			return m, fmt.Errorf("%s: version %s, not %s", a, sub[1], version)
		}
		sum, err := fileSHA256(a)
		if err != nil {
			return m, err
		}
		m.Platforms = append(m.Platforms, Platform{OS: sub[2], Arch: sub[3], URI: strings.TrimSuffix(uriBase, "/") + "/" + filepath.Base(a), SHA256: sum})
	}
	if len(m.Platforms) == 0 {
		return m, errors.New("no archives")
	}
	return m, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Write renders m to w.
func (m Manifest) Write(w io.Writer) error { return manifestTemplate.Execute(w, m) }

func main() {
	version := flag.String("version", "", "the release's version (vX.Y.Z)")
	uriBase := flag.String("uri-base", "", "the URL the archives are downloaded from, without their file names")
	homepage := flag.String("homepage", "https://github.com/etcdpvc/etcdpvc", "the plugin's homepage")
	out := flag.String("out", "", "the manifest file to write (a new file)")
	flag.Parse()
	if *version == "" || *uriBase == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "krewmanifest: error: give -version, -uri-base and -out")
		os.Exit(2)
	}
	m, err := Build(*version, *uriBase, *homepage, flag.Args())
	if err == nil {
		err = writeNew(*out, m)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "krewmanifest: error: %v\n", err)
		os.Exit(1)
	}
}

// writeNew writes m to path, which must not exist.
func writeNew(path string, m Manifest) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err := m.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
