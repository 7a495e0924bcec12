package node

import (
	"path/filepath"

	"github.com/etcdpvc/etcdpvc/kubeadm"
)

// rke2ManifestsDir is where RKE2 writes its static pod manifests, the
// kube-apiserver's among them (rancher/rke2 pkg/rke2: the agent's
// pod-manifests directory below its data dir /var/lib/rancher/rke2). The
// manifest's flags name the etcd client certificate RKE2 generates under
// /var/lib/rancher/rke2/server/tls/etcd (k3s-io/k3s
// pkg/daemons/control/deps/deps.go, which RKE2 runs: client.crt,
// client.key and server-ca.crt), and the encryption config under
// server/cred.
const rke2ManifestsDir = "/var/lib/rancher/rke2/agent/pod-manifests"

// rke2Kubeconfig is the admin kubeconfig RKE2 writes (its documented
// write-kubeconfig default).
const rke2Kubeconfig = "/etc/rancher/rke2/rke2.yaml"

// readRKE2 reads RKE2's layout: a kube-apiserver static pod, as kubeadm's,
// in its own manifests directory.
func readRKE2(root string) (*Found, error) {
	f, err := fromManifest(root, filepath.Join(rke2ManifestsDir, kubeadm.ManifestName))
	if err != nil {
		return nil, err
	}
	f.kubeconfig(below(root, rke2Kubeconfig))
	return f, nil
}
