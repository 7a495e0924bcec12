// Package kubeadm reads what etcdpvc needs from a control-plane node: the
// kube-apiserver static pod manifest (kubeadm writes it to
// /etc/kubernetes/manifests/kube-apiserver.yaml) names the etcd endpoints,
// the client certificate the apiserver uses, its --etcd-prefix and its
// --encryption-provider-config.
package kubeadm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/internal/regular"
)

// DefaultManifestsDir is where kubeadm writes static pod manifests.
const DefaultManifestsDir = "/etc/kubernetes/manifests"

// ManifestName is the kube-apiserver manifest's file name.
const ManifestName = "kube-apiserver.yaml"

// ErrNoManifest means the manifest does not exist (not a control-plane
// node, or another installer).
var ErrNoManifest = errors.New("no kube-apiserver manifest")

// APIServer is what the kube-apiserver's flags say about its storage.
type APIServer struct {
	// Manifest is the file read.
	Manifest string
	// Endpoints are --etcd-servers.
	Endpoints []string
	// CAFile, CertFile and KeyFile are --etcd-cafile, --etcd-certfile and
	// --etcd-keyfile.
	CAFile, CertFile, KeyFile string
	// Prefix is --etcd-prefix ("/registry" when not set).
	Prefix string
	// EncryptionConfig is --encryption-provider-config ("" when not set).
	EncryptionConfig string
	// HostRoot is the directory the host's file system is mounted at when
	// the manifest was read below one (for example "/host" in a `kubectl
	// debug node` pod); the file paths above are then already below it.
	// "" when the manifest was read from the host's own /etc.
	HostRoot string
	// ServersOverrides are --etcd-servers-overrides: resources stored in
	// another etcd than Endpoints.
	ServersOverrides []Override
}

// Override is one entry of the kube-apiserver's --etcd-servers-overrides:
// the objects of Group/Resource live in the etcd at Servers (with the same
// client certificate and prefix as the rest).
type Override struct {
	// Group is the API group ("" for the core group) and Resource the
	// plural, as the apiserver's flag names them ("/events",
	// "coordination.k8s.io/leases").
	Group, Resource string
	// Servers are the etcd client URLs.
	Servers []string
}

// String renders o in the flag's syntax.
func (o Override) String() string {
	return o.Group + "/" + o.Resource + "#" + strings.Join(o.Servers, ";")
}

// ParseServersOverrides parses the kube-apiserver's
// --etcd-servers-overrides value: comma-separated group/resource#servers
// entries, servers separated by semicolons, the core group empty
// ("/events#https://10.0.0.5:2379"). "" yields none. A resource named
// twice is an error, as it would be ambiguous.
func ParseServersOverrides(value string) ([]Override, error) {
	var out []Override
	seen := map[string]bool{}
	for _, entry := range strings.Split(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		gr, servers, ok := strings.Cut(entry, "#")
		if !ok || strings.Contains(servers, "#") {
			return nil, fmt.Errorf("etcd servers override %q: want group/resource#servers", entry)
		}
		group, res, ok := strings.Cut(gr, "/")
		if !ok || strings.Contains(res, "/") || res == "" {
			return nil, fmt.Errorf("etcd servers override %q: want group/resource before '#' (the core group is empty: /events)", entry)
		}
		o := Override{Group: strings.ToLower(group), Resource: strings.ToLower(res)}
		for _, s := range strings.Split(servers, ";") {
			if s = strings.TrimSpace(s); s != "" {
				o.Servers = append(o.Servers, s)
			}
		}
		if len(o.Servers) == 0 {
			return nil, fmt.Errorf("etcd servers override %q: no servers after '#'", entry)
		}
		if seen[gr] {
			return nil, fmt.Errorf("etcd servers override %q: %s is overridden twice", entry, gr)
		}
		seen[gr] = true
		out = append(out, o)
	}
	return out, nil
}

// Read reads the kube-apiserver manifest in dir.
func Read(dir string) (*APIServer, error) {
	if dir == "" {
		dir = DefaultManifestsDir
	}
	path := filepath.Join(dir, ManifestName)
	b, err := regular.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, ErrNoManifest)
	}
	if err != nil {
		return nil, fmt.Errorf("read kube-apiserver manifest: %w", err)
	}
	a, err := Parse(path, b)
	if err != nil {
		return nil, err
	}
	a.Rebase(HostRoot(dir))
	return a, nil
}

// HostRoot returns the directory a host's root file system is mounted at,
// judging from where its manifests directory is: "/host" for
// "/host/etc/kubernetes/manifests", "" for "/etc/kubernetes/manifests" or
// for a directory not named like kubeadm's.
func HostRoot(manifestsDir string) string {
	dir := filepath.Clean(manifestsDir)
	root, ok := strings.CutSuffix(dir, DefaultManifestsDir)
	if !ok || root == "" || root == "/" || !filepath.IsAbs(root) {
		return ""
	}
	return root
}

// Rebase moves the manifest's absolute file paths below root, where the
// host's files are when the manifest was read there; "" and "/" leave
// them as they are.
func (a *APIServer) Rebase(root string) {
	if root == "" || filepath.Clean(root) == "/" {
		return
	}
	a.HostRoot = root
	for _, p := range []*string{&a.CAFile, &a.CertFile, &a.KeyFile, &a.EncryptionConfig} {
		if filepath.IsAbs(*p) {
			*p = filepath.Join(root, *p)
		}
	}
}

// Parse reads a kube-apiserver static pod manifest.
func Parse(path string, manifest []byte) (*APIServer, error) {
	var pod corev1.Pod
	if err := yaml.Unmarshal(manifest, &pod); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "kube-apiserver" {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil && len(pod.Spec.Containers) == 1 {
		c = &pod.Spec.Containers[0]
	}
	if c == nil {
		return nil, fmt.Errorf("parse %s: no kube-apiserver container", path)
	}
	return ParseArgs(path, append(append([]string{}, c.Command...), c.Args...))
}

// ParseArgs reads the kube-apiserver's storage flags from its command
// line args; path names where they were read, for errors.
func ParseArgs(path string, args []string) (*APIServer, error) {
	a := &APIServer{Manifest: path, Prefix: "/registry"}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "--") {
			continue
		}
		name, val, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			i++
			val = args[i]
		}
		switch name {
		case "etcd-servers":
			for _, ep := range strings.Split(val, ",") {
				if ep = strings.TrimSpace(ep); ep != "" {
					a.Endpoints = append(a.Endpoints, ep)
				}
			}
		case "etcd-cafile":
			a.CAFile = val
		case "etcd-certfile":
			a.CertFile = val
		case "etcd-keyfile":
			a.KeyFile = val
		case "etcd-prefix":
			a.Prefix = "/" + strings.Trim(val, "/")
		case "encryption-provider-config":
			a.EncryptionConfig = val
		case "etcd-servers-overrides":
			o, err := ParseServersOverrides(val)
			if err != nil {
				return nil, fmt.Errorf("parse %s: --etcd-servers-overrides: %w", path, err)
			}
			a.ServersOverrides = o
		}
	}
	if len(a.Endpoints) == 0 {
		return nil, fmt.Errorf("parse %s: kube-apiserver has no --etcd-servers", path)
	}
	return a, nil
}
