package inspect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/etcdpvc/etcdpvc/kubeadm"
	"github.com/etcdpvc/etcdpvc/verify"
)

// Line is the check as doctor prints it: status, name, detail, aligned.
func (c Check) Line() string {
	return fmt.Sprintf("%-4s  %-12s  %s", c.Status, c.Name, c.Detail)
}

// manifestSettings are the connection flags the kube-apiserver manifest
// also sets, with the manifest's flag for each.
var manifestSettings = []struct{ flag, manifest string }{
	{"endpoints", "--etcd-servers"},
	{"cacert", "--etcd-cafile"},
	{"cert", "--etcd-certfile"},
	{"key", "--etcd-keyfile"},
	{"prefix", "--etcd-prefix"},
	{"encryption-config", "--encryption-provider-config"},
	{"etcd-servers-overrides", "--etcd-servers-overrides"},
}

// CheckManifest reports, under "manifest", on the kube-apiserver manifest
// in dir. Without --kubeadm (withKubeadm false) it only warns when the
// manifest exists, the settings then coming from flags and ETCDCTL_*
// only. With --kubeadm it fails when the manifest cannot be read, else
// says what it names (etcd, prefix, encryption config) and warns of each
// flag given that overrides it (CheckManifestOverrides); it returns true
// then: the manifest is to be applied.
func CheckManifest(rep *DoctorReport, dir string, withKubeadm bool, given func(flag string) bool) bool {
	if !withKubeadm {
		path := filepath.Join(dir, kubeadm.ManifestName)
		if _, err := os.Stat(path); err == nil {
			rep.Add(CheckWarn, "manifest", "%s exists but --kubeadm was not given: the connection settings come from flags and ETCDCTL_* only", path)
		}
		return false
	}
	a, err := kubeadm.Read(dir)
	if err != nil {
		rep.Add(CheckFail, "manifest", "%v", err)
		return false
	}
	enc := a.EncryptionConfig
	if enc == "" {
		enc = "none"
	}
	rep.Add(CheckOK, "manifest", "%s: etcd %s, prefix %s, encryption config %s", a.Manifest, strings.Join(a.Endpoints, ","), a.Prefix, enc)
	CheckManifestOverrides(rep, given)
	return true
}

// CheckManifestOverrides warns, under "manifest", of each flag given on
// the command line (given(flag); an ETCDCTL_* variable does not count)
// that overrides a setting of the manifest.
func CheckManifestOverrides(rep *DoctorReport, given func(flag string) bool) {
	for _, s := range manifestSettings {
		if given(s.flag) {
			rep.Add(CheckWarn, "manifest", "--%s overrides the manifest's %s", s.flag, s.manifest)
		}
	}
}

// APIServerProbe is what CheckAPIServer asks of the apiserver: a
// verify.Verifier.
type APIServerProbe interface {
	Reach() (verify.Reach, string)
	Host() string
	Permitted(ctx context.Context) ([]string, error)
}

// CheckAPIServer reports, under "apiserver", whether writes will be
// verified: whether the apiserver answers for this cluster, and whether
// the kubeconfig's user may make the dry runs (RBAC).
func CheckAPIServer(ctx context.Context, rep *DoctorReport, v APIServerProbe) {
	if reach, why := v.Reach(); reach != verify.Reachable {
		rep.Add(CheckWarn, "apiserver", "writes will not be verified: %s", why)
		return
	}
	refused, err := v.Permitted(ctx)
	switch {
	case err != nil:
		rep.Add(CheckWarn, "apiserver", "%s answers, but the user's permissions cannot be checked: %v", v.Host(), err)
	case len(refused) > 0:
		rep.Add(CheckWarn, "apiserver", "%s answers, but the kubeconfig's user may not %s persistentvolumeclaims: writes cannot be verified", v.Host(), strings.Join(refused, " or "))
	default:
		rep.Add(CheckOK, "apiserver", "%s answers for this cluster; writes will be verified", v.Host())
	}
}
