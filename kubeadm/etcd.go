package kubeadm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/internal/regular"
)

// EtcdManifestName is the name of the etcd static pod manifest kubeadm
// writes for a stacked etcd.
const EtcdManifestName = "etcd.yaml"

// EtcdMember is what the etcd manifest's flags say about the member's
// space.
type EtcdMember struct {
	// Manifest is the file read.
	Manifest string
	// Name is --name, the member's name ("" when not set).
	Name string
	// QuotaBackendBytes is --quota-backend-bytes (0 when not set: etcd's
	// default).
	QuotaBackendBytes int64
	// DataDir is --data-dir ("" when not set), below HostRoot when the
	// manifest was read below one.
	DataDir string
}

// ErrNoEtcdManifest means the etcd manifest does not exist (an external
// etcd, or another installer).
var ErrNoEtcdManifest = errors.New("no etcd manifest")

// ReadEtcd reads the etcd manifest in dir (ErrNoEtcdManifest when there is
// none).
func ReadEtcd(dir string) (*EtcdMember, error) {
	if dir == "" {
		dir = DefaultManifestsDir
	}
	path := filepath.Join(dir, EtcdManifestName)
	b, err := regular.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, ErrNoEtcdManifest)
	}
	if err != nil {
		return nil, fmt.Errorf("read etcd manifest: %w", err)
	}
	m, err := ParseEtcd(path, b)
	if err != nil {
		return nil, err
	}
	if root := HostRoot(dir); root != "" && filepath.IsAbs(m.DataDir) {
		m.DataDir = filepath.Join(root, m.DataDir)
	}
	return m, nil
}

// ParseEtcd reads an etcd static pod manifest.
func ParseEtcd(path string, manifest []byte) (*EtcdMember, error) {
	var pod corev1.Pod
	if err := yaml.Unmarshal(manifest, &pod); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "etcd" {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil {
		return nil, fmt.Errorf("parse %s: no etcd container", path)
	}
	m := &EtcdMember{Manifest: path}
	args := append(append([]string{}, c.Command...), c.Args...)
	for i := 0; i < len(args); i++ {
		name, val, ok := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		if !strings.HasPrefix(args[i], "--") {
			continue
		}
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			i++
			val = args[i]
		}
		switch name {
		case "quota-backend-bytes":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("parse %s: --quota-backend-bytes=%q is not a byte count", path, val)
			}
			m.QuotaBackendBytes = n
		case "data-dir":
			m.DataDir = val
		case "name":
			m.Name = val
		}
	}
	return m, nil
}
