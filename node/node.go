// Package node finds what etcdpvc needs on a control-plane node, from the
// files its Kubernetes distribution lays out there: the etcd endpoints, the
// client certificate the kube-apiserver uses, its --etcd-prefix, its
// EncryptionConfiguration and an admin kubeconfig. It knows kubeadm, RKE2,
// k3s with embedded etcd and OpenShift, each read from below a root (the
// node's "/", or "/host" in a `kubectl debug node` pod). It never guesses:
// when no layout or several match, or a file a layout needs is missing,
// the error names the files.
package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/etcdpvc/etcdpvc/kubeadm"
)

// Layout names a distribution's layout of a control-plane node.
type Layout string

// The layouts Detect knows.
const (
	Kubeadm   Layout = "kubeadm"
	RKE2      Layout = "rke2"
	K3s       Layout = "k3s"
	OpenShift Layout = "openshift"
)

// Renew says how the layout's certificates are renewed.
func (l Layout) Renew() string {
	switch l {
	case RKE2:
		return "rke2 certificate rotate"
	case K3s:
		return "k3s certificate rotate"
	case OpenShift:
		return "OpenShift's operators rotate it: check the etcd and kube-apiserver cluster operators"
	}
	return "kubeadm certs renew"
}

// ErrNoLayout means no known layout was found below the root: not a
// control-plane node, or the host's file system is mounted elsewhere.
var ErrNoLayout = errors.New("no control-plane node layout")

// ErrAmbiguous means several layouts were found below one root.
var ErrAmbiguous = errors.New("several control-plane node layouts")

// ErrUnsupported means the layout was found but its datastore is not an
// etcd etcdpvc can reach (k3s on kine).
var ErrUnsupported = errors.New("unsupported datastore")

// ErrNotReadable means a file the layout needs exists but this user
// cannot read it: on a node, the etcd client key is root's only.
var ErrNotReadable = errors.New("not readable by this user")

// File is one file a layout was read from, and what it was used for.
type File struct {
	// Role says what the file is ("kube-apiserver manifest", "etcd CA").
	Role string
	// Path is where it was read, below the root.
	Path string
}

// Found is what a layout says about its etcd and apiserver.
type Found struct {
	Layout Layout
	// Root is the directory the node's file system was read below ("/"
	// for the node's own).
	Root string
	// APIServer holds the endpoints, the client certificate, the prefix,
	// the encryption config and the overrides, every path below Root.
	APIServer *kubeadm.APIServer
	// Kubeconfig is the node's admin kubeconfig, below Root ("" when the
	// layout has none; Notes then say so).
	Kubeconfig string
	// Files are every file read or named, in the order used.
	Files []File
	// Notes are what the user should know about the layout's files
	// (a kubeconfig missing, an encryption config not used).
	Notes []string
}

// HostRoot is where `kubectl debug node` mounts the node's file system.
const HostRoot = "/host"

// Detect finds the control-plane layout below root. An empty root tries
// "/" and, when "/" is no control-plane node, HostRoot. Exactly one layout
// must match; a file the layout needs must exist.
func Detect(root string) (*Found, error) {
	if root != "" {
		return detect(root)
	}
	return detectFallback("/", HostRoot)
}

// detectFallback finds the layout below root, or below fallback when root
// shows none: the node's file system where kubectl debug node mounts it.
func detectFallback(root, fallback string) (*Found, error) {
	f, err := detect(root)
	if !errors.Is(err, ErrNoLayout) {
		return f, err
	}
	if _, serr := os.Stat(fallback); errors.Is(serr, os.ErrNotExist) {
		return nil, fmt.Errorf("%w (and %s, where kubectl debug node mounts the node, does not exist)", err, fallback)
	}
	f, err2 := detect(fallback)
	if errors.Is(err2, ErrNoLayout) {
		return nil, fmt.Errorf("%w below %s or %s: %v; %v", ErrNoLayout, root, fallback, unwrapNoLayout(err), unwrapNoLayout(err2))
	}
	return f, err2
}

// unwrapNoLayout is the list of files an ErrNoLayout error names.
func unwrapNoLayout(err error) string {
	s := err.Error()
	if _, after, ok := strings.Cut(s, ": "); ok {
		return after
	}
	return s
}

// probe is one layout's test: the marker file whose existence says the
// layout is there, and how to read it.
type probe struct {
	layout Layout
	// markers: the layout is there when any exists below the root.
	markers []string
	read    func(root string) (*Found, error)
}

var probes = []probe{
	{Kubeadm, []string{filepath.Join(kubeadm.DefaultManifestsDir, kubeadm.ManifestName)}, readKubeadm},
	{RKE2, []string{filepath.Join(rke2ManifestsDir, kubeadm.ManifestName)}, readRKE2},
	{K3s, []string{k3sConfig, filepath.Join(k3sDataDir, "server")}, readK3s},
	{OpenShift, []string{openshiftManifest, openshiftResources}, readOpenShift},
}

func detect(root string) (*Found, error) {
	if !filepath.IsAbs(root) {
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, err
		}
		root = abs
	}
	root = filepath.Clean(root)
	if st, err := os.Stat(root); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", root)
	}
	var matched []probe
	var seen, tried []string
	for _, p := range probes {
		for _, m := range p.markers {
			path := below(root, m)
			if _, err := os.Lstat(path); err == nil {
				matched = append(matched, p)
				seen = append(seen, fmt.Sprintf("%s (%s)", p.layout, path))
				break
			}
			tried = append(tried, path)
		}
	}
	switch len(matched) {
	case 0:
		return nil, fmt.Errorf("%w below %s: none of %s exists", ErrNoLayout, root, strings.Join(tried, ", "))
	case 1:
	default:
		return nil, fmt.Errorf("%w below %s: %s; give the connection flags (--endpoints, --cacert, --cert, --key, --prefix, --encryption-config) instead", ErrAmbiguous, root, strings.Join(seen, " and "))
	}
	f, err := matched[0].read(root)
	if err != nil {
		return nil, fmt.Errorf("%s node below %s: %w", matched[0].layout, root, err)
	}
	f.Layout, f.Root = matched[0].layout, root
	return f, nil
}

// below is path p of the node's file system as seen below root.
func below(root, p string) string {
	if root == "/" {
		return filepath.Clean(p)
	}
	return filepath.Join(root, p)
}

// fromManifest reads a kube-apiserver static pod manifest below root and
// checks the files it names.
func fromManifest(root, manifest string) (*Found, error) {
	path := below(root, manifest)
	a, err := kubeadm.Read(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	// kubeadm.Read rebases only below a directory named like kubeadm's.
	if a.HostRoot == "" {
		a.Rebase(root)
	}
	f := &Found{APIServer: a, Files: []File{{"kube-apiserver manifest", path}}}
	return f, f.need(a)
}

// need records the apiserver's certificate and encryption config files
// and checks that each exists and can be read by this user.
func (f *Found) need(a *kubeadm.APIServer) error {
	for _, c := range []struct{ role, path string }{
		{"etcd CA", a.CAFile}, {"etcd client certificate", a.CertFile}, {"etcd client key", a.KeyFile},
		{"encryption config", a.EncryptionConfig},
	} {
		if c.path == "" {
			if c.role == "encryption config" {
				continue
			}
			return fmt.Errorf("%s: the kube-apiserver names no %s", f.Files[0].Path, c.role)
		}
		if _, err := os.Stat(c.path); err != nil {
			return fmt.Errorf("%s %s (named by %s): %w", c.role, c.path, f.Files[0].Path, err)
		}
		r, err := os.Open(c.path)
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("%s %s (named by %s): %w (uid %d): the node keeps it for root", c.role, c.path, f.Files[0].Path, ErrNotReadable, os.Getuid())
		}
		if err != nil {
			return fmt.Errorf("%s %s (named by %s): %w", c.role, c.path, f.Files[0].Path, err)
		}
		r.Close()
		f.Files = append(f.Files, File{c.role, c.path})
	}
	return nil
}

// kubeconfig records the layout's admin kubeconfig at p (below root), or
// a note when it does not exist.
func (f *Found) kubeconfig(p string) {
	if _, err := os.Stat(p); err != nil {
		f.Notes = append(f.Notes, fmt.Sprintf("no admin kubeconfig: %v (writes are verified only with --kubeconfig or $KUBECONFIG)", err))
		return
	}
	f.Kubeconfig = p
	f.Files = append(f.Files, File{"kubeconfig", p})
}

// readKubeadm reads kubeadm's layout: the kube-apiserver manifest in
// /etc/kubernetes/manifests and the admin.conf (else super-admin.conf)
// beside it, as --kubeadm does.
func readKubeadm(root string) (*Found, error) {
	f, err := fromManifest(root, filepath.Join(kubeadm.DefaultManifestsDir, kubeadm.ManifestName))
	if err != nil {
		return nil, err
	}
	conf := below(root, "/etc/kubernetes/admin.conf")
	if _, err := os.Stat(conf); err != nil {
		if super := below(root, "/etc/kubernetes/super-admin.conf"); fileExists(super) {
			conf = super
		}
	}
	f.kubeconfig(conf)
	return f, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
