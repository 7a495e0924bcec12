package verify

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/etcdpvc/etcdpvc/internal/regular"
	"github.com/etcdpvc/etcdpvc/kubeadm"
)

// ErrNoKubeconfig means no kubeconfig was found: no --kubeconfig, no
// $KUBECONFIG file, and (with --kubeadm) no admin kubeconfig on the node.
var ErrNoKubeconfig = errors.New("no kubeconfig")

// FindOptions are where a kubeconfig may be.
type FindOptions struct {
	// Flag is --kubeconfig: it wins, and must exist.
	Flag string
	// Env is $KUBECONFIG, a list of files (filepath.ListSeparator); files
	// that do not exist are skipped, as kubectl does.
	Env string
	// Kubeadm: look for the node's admin kubeconfig (admin.conf, else
	// super-admin.conf) in the manifests directory's parent. It wins over
	// $KUBECONFIG, as --kubeadm wins over the ETCDCTL_* variables.
	Kubeadm      bool
	ManifestsDir string
}

// Kubeconfig is the kubeconfig found.
type Kubeconfig struct {
	// Paths are the files, merged as kubectl merges $KUBECONFIG's.
	Paths []string
	// Source says where it came from: "--kubeconfig", "--kubeadm" or
	// "$KUBECONFIG".
	Source string
	// HostRoot is where the host's file system is mounted (--kubeadm run
	// in a node debug pod): the kubeconfig's absolute file paths are below
	// it.
	HostRoot string
}

// Find finds the kubeconfig to reach the apiserver with: --kubeconfig,
// else (with --kubeadm) the node's admin.conf or super-admin.conf next to
// the manifests directory, else the existing files of $KUBECONFIG. A
// --kubeconfig that does not exist is an error; finding none is
// ErrNoKubeconfig.
func Find(o FindOptions) (Kubeconfig, error) {
	if o.Flag != "" {
		if _, err := os.Stat(o.Flag); err != nil {
			return Kubeconfig{}, fmt.Errorf("--kubeconfig: %w", err)
		}
		return Kubeconfig{Paths: []string{o.Flag}, Source: "--kubeconfig"}, nil
	}
	var tried []string
	if o.Kubeadm {
		dir := o.ManifestsDir
		if dir == "" {
			dir = kubeadm.DefaultManifestsDir
		}
		parent := filepath.Dir(filepath.Clean(dir))
		for _, name := range []string{"admin.conf", "super-admin.conf"} {
			p := filepath.Join(parent, name)
			if fileExists(p) {
				return Kubeconfig{Paths: []string{p}, Source: "--kubeadm", HostRoot: kubeadm.HostRoot(dir)}, nil
			}
			tried = append(tried, p)
		}
	}
	var paths []string
	for _, p := range filepath.SplitList(o.Env) {
		if p == "" {
			continue
		}
		if fileExists(p) {
			paths = append(paths, p)
		} else {
			tried = append(tried, p)
		}
	}
	if len(paths) > 0 {
		return Kubeconfig{Paths: paths, Source: "$KUBECONFIG"}, nil
	}
	if len(tried) == 0 {
		return Kubeconfig{}, fmt.Errorf("%w: give --kubeconfig or $KUBECONFIG (or --kubeadm or --node on a control-plane node)", ErrNoKubeconfig)
	}
	return Kubeconfig{}, fmt.Errorf("%w: none of %v exists", ErrNoKubeconfig, tried)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// String names the kubeconfig for messages.
func (k Kubeconfig) String() string {
	if len(k.Paths) == 0 {
		return "no kubeconfig"
	}
	return fmt.Sprintf("%s (%s)", filepath.Join(k.Paths[0]), k.Source)
}

// RESTConfig loads the kubeconfig's current context. With a HostRoot, the
// absolute file paths it names (certificates, keys, CA) are taken below
// it, where the host's files are.
func (k Kubeconfig) RESTConfig() (*rest.Config, error) {
	if len(k.Paths) == 0 {
		return nil, ErrNoKubeconfig
	}
	// client-go opens these files itself: a FIFO or a device would block
	// it, out of Ctrl-C's reach.
	for _, p := range k.Paths {
		if err := regular.Check(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("load kubeconfig %s: %w", k, err)
		}
	}
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: k.Paths}
	cfg, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", k, err)
	}
	if k.HostRoot != "" {
		rebase(cfg, k.HostRoot)
	}
	for _, p := range referencedFiles(cfg) {
		if err := regular.Check(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("kubeconfig %s: %w", k, err)
		}
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", k, err)
	}
	return rc, nil
}

// rebase moves the absolute file paths of cfg below root.
func rebase(cfg *clientcmdapi.Config, root string) {
	move := func(p *string) {
		if filepath.IsAbs(*p) {
			*p = filepath.Join(root, *p)
		}
	}
	for _, c := range cfg.Clusters {
		move(&c.CertificateAuthority)
	}
	for _, a := range cfg.AuthInfos {
		move(&a.ClientCertificate)
		move(&a.ClientKey)
		move(&a.TokenFile)
	}
}

// referencedFiles lists the files a kubeconfig names (certificates, keys,
// CAs, token files).
func referencedFiles(cfg *clientcmdapi.Config) []string {
	var out []string
	for _, c := range cfg.Clusters {
		out = append(out, c.CertificateAuthority)
	}
	for _, a := range cfg.AuthInfos {
		out = append(out, a.ClientCertificate, a.ClientKey, a.TokenFile)
	}
	return slices.DeleteFunc(out, func(p string) bool { return p == "" })
}
