package node

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/internal/regular"
	"github.com/etcdpvc/etcdpvc/kubeadm"
)

// OpenShift's kube-apiserver is a static pod whose manifest
// (openshiftManifest) mounts one revision of its resources,
// /etc/kubernetes/static-pod-resources/kube-apiserver-pod-N, at
// /etc/kubernetes/static-pod-resources in the pod, and the certificates
// directory kube-apiserver-certs at /etc/kubernetes/static-pod-certs. Its
// flags are the rendered KubeAPIServerConfig in that revision's
// configmaps/config/config.yaml: apiServerArguments (etcd-servers,
// etcd-cafile = configmaps/etcd-serving-ca/ca-bundle.crt, etcd-certfile and
// etcd-keyfile = secrets/etcd-client/tls.crt and tls.key, etcd-prefix =
// kubernetes.io, encryption-provider-config), with storageConfig (urls, ca,
// certFile, keyFile, storagePrefix) as older releases render it
// (openshift/cluster-kube-apiserver-operator
// bindata/assets/config/defaultconfig.yaml). The admin kubeconfig
// openshiftKubeconfig is the localhost.kubeconfig key of the
// node-kubeconfigs secret (bindata/assets/kube-apiserver/node-kubeconfigs.yaml),
// one of the CertSecrets the operator installs, unrevisioned, into
// kube-apiserver-certs (pkg/operator/starter.go, WithUnrevisionedCerts),
// the directory bindata/assets/kube-apiserver/pod.yaml mounts from
// /etc/kubernetes/static-pod-resources/kube-apiserver-certs; the installer
// writes a secret's keys as secrets/NAME/KEY, as etcd-client's above.
const (
	openshiftManifest   = "/etc/kubernetes/manifests/kube-apiserver-pod.yaml"
	openshiftResources  = "/etc/kubernetes/static-pod-resources"
	openshiftKubeconfig = "/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/localhost.kubeconfig"
	openshiftPodDir     = "/etc/kubernetes/static-pod-resources"
	openshiftPodCerts   = "/etc/kubernetes/static-pod-certs"
)

var revisionDir = regexp.MustCompile(`^` + regexp.QuoteMeta(openshiftResources) + `/kube-apiserver-pod-\d+$`)

// kubeAPIServerConfig is the part of OpenShift's KubeAPIServerConfig
// etcdpvc reads.
type kubeAPIServerConfig struct {
	APIServerArguments map[string][]string `json:"apiServerArguments"`
	StorageConfig      struct {
		URLs          []string `json:"urls"`
		CA            string   `json:"ca"`
		CertFile      string   `json:"certFile"`
		KeyFile       string   `json:"keyFile"`
		StoragePrefix string   `json:"storagePrefix"`
	} `json:"storageConfig"`
}

// readOpenShift reads OpenShift's layout: the revision the running
// kube-apiserver's manifest mounts, and that revision's rendered config.
func readOpenShift(root string) (*Found, error) {
	manifest := below(root, openshiftManifest)
	b, err := regular.ReadFile(manifest)
	if err != nil {
		return nil, fmt.Errorf("the kube-apiserver's manifest names its revision: %w", err)
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(b, &pod); err != nil {
		return nil, fmt.Errorf("parse %s: %w", manifest, err)
	}
	var revs []string
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil && revisionDir.MatchString(filepath.Clean(v.HostPath.Path)) {
			revs = append(revs, filepath.Clean(v.HostPath.Path))
		}
	}
	sort.Strings(revs)
	if len(revs) != 1 {
		return nil, fmt.Errorf("%s: want one hostPath volume %s/kube-apiserver-pod-N, found %d", manifest, openshiftResources, len(revs))
	}
	rev := below(root, revs[0])
	f := &Found{Files: []File{{"kube-apiserver manifest", manifest}}}
	cfgPath := filepath.Join(rev, "configmaps", "config", "config.yaml")
	b, err = regular.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("the kube-apiserver's rendered config: %w", err)
	}
	var cfg kubeAPIServerConfig
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", cfgPath, err)
	}
	f.Files = append(f.Files, File{"kube-apiserver config", cfgPath})
	// apiServerArguments win over storageConfig: they come last, and
	// ParseArgs keeps a flag's last value.
	var args []string
	sc := cfg.StorageConfig
	if len(cfg.APIServerArguments["etcd-servers"]) == 0 {
		for _, u := range sc.URLs {
			args = append(args, "--etcd-servers="+u)
		}
	}
	for _, kv := range [][2]string{{"etcd-cafile", sc.CA}, {"etcd-certfile", sc.CertFile}, {"etcd-keyfile", sc.KeyFile}, {"etcd-prefix", sc.StoragePrefix}} {
		if kv[1] != "" {
			args = append(args, "--"+kv[0]+"="+kv[1])
		}
	}
	names := make([]string, 0, len(cfg.APIServerArguments))
	for name := range cfg.APIServerArguments {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasPrefix(name, "etcd-") && name != "encryption-provider-config" {
			continue
		}
		for _, v := range cfg.APIServerArguments[name] {
			args = append(args, "--"+name+"="+v)
		}
	}
	a, err := kubeadm.ParseArgs(cfgPath, args)
	if err != nil {
		return nil, err
	}
	// The config names the files as the pod sees them.
	for _, p := range []*string{&a.CAFile, &a.CertFile, &a.KeyFile, &a.EncryptionConfig} {
		switch {
		case *p == "":
		case strings.HasPrefix(*p, openshiftPodDir+"/"):
			*p = filepath.Join(rev, strings.TrimPrefix(*p, openshiftPodDir))
		case strings.HasPrefix(*p, openshiftPodCerts+"/"):
			*p = below(root, filepath.Join(openshiftResources, "kube-apiserver-certs", strings.TrimPrefix(*p, openshiftPodCerts)))
		default:
			*p = below(root, *p)
		}
	}
	a.HostRoot = ""
	if root != "/" {
		a.HostRoot = root
	}
	f.APIServer = a
	if err := f.need(a); err != nil {
		return nil, err
	}
	f.kubeconfig(below(root, openshiftKubeconfig))
	return f, nil
}
