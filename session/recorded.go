package session

import (
	"slices"
	"strings"

	"github.com/etcdpvc/etcdpvc/surgery"
)

// connectionSettings are the settings that name an etcd: when any of them
// is given, a restore uses it, not the connection its backup records.
var connectionSettings = []string{SettingEndpoints, SettingCACert, SettingCert, SettingKey, "kubeadm", "manifests-dir", SettingNode, "db", SettingUser, SettingPassword, SettingInsecure}

// AsRecorded makes o, for a restore of a backup taken from src, reach the
// etcd src records when o names none (no connection setting given), with
// the prefix and encryption config src records unless given. It returns
// the line to tell the user which etcd is used; "" when o reads a --db
// file the user named.
func AsRecorded(o *Options, src *surgery.Source) string {
	if src != nil {
		if !o.Given[SettingPrefix] && src.Prefix != "" {
			o.Prefix = src.Prefix
		}
		if !o.Given[SettingEncryptionConfig] && !o.Given["kubeadm"] && !o.Given[SettingNode] && src.EncryptionConfig != "" {
			o.EncryptionConfig = src.EncryptionConfig
		}
	}
	for _, f := range connectionSettings {
		if !o.Given[f] {
			continue
		}
		if o.Given["db"] {
			return ""
		}
		if sameEtcd(*o, src) {
			return "using the etcd the flags or ETCDCTL_* variables name (" + Summary(*o) + "), the one the backup records"
		}
		return "using the etcd the flags or ETCDCTL_* variables name (" + Summary(*o) + "), not the one the backup records"
	}
	recorded := src != nil && (src.Kubeadm || len(src.Endpoints) > 0)
	if recorded && !src.Kubeadm && strings.HasPrefix(src.Endpoints[0], "file:") {
		recorded = false // written into a db copy: there is no etcd to reach
	}
	if !recorded {
		return "the backup records no etcd to reach; using " + Summary(*o)
	}
	if src.Kubeadm {
		o.Kubeadm, o.ManifestsDir = true, src.ManifestsDir
		if o.ManifestsDir == "" {
			o.ManifestsDir = "/etc/kubernetes/manifests"
		}
	} else {
		o.Endpoints, o.CACert, o.Cert, o.Key = src.Endpoints, src.CACert, src.Cert, src.Key
	}
	id := ""
	if src.ClusterID != "" {
		id = " (cluster ID " + src.ClusterID + ")"
	}
	return "using the etcd the backup records: " + Summary(*o) + id
}

// sameEtcd reports whether o reaches the etcd src records: the same
// endpoints, --kubeadm applied (on a copy) when o takes them from the
// manifest. It says false whenever it cannot tell. The cluster ID check
// of the restore itself still refuses another cluster behind the same
// endpoints.
func sameEtcd(o Options, src *surgery.Source) bool {
	if src == nil || len(src.Endpoints) == 0 {
		return false
	}
	if o.TakesLayout() && !o.KubeadmApplied {
		o.Warn = nil
		if _, err := Kubeadm(&o); err != nil {
			return false
		}
	}
	a := normalizeEndpoints(o.Endpoints)
	b := normalizeEndpoints(src.Endpoints)
	return len(a) > 0 && slices.Equal(a, b)
}

// normalizeEndpoints sorts endpoints, without trailing slashes, for
// comparison.
func normalizeEndpoints(eps []string) []string {
	out := make([]string, 0, len(eps))
	for _, ep := range SplitList(eps) {
		out = append(out, strings.TrimRight(ep, "/"))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Summary names the etcd o reaches, as flags: "--endpoints URL,...
// --cacert CA --cert CERT", or "--kubeadm --manifests-dir DIR" before the
// manifest is read.
func Summary(o Options) string {
	if o.Kubeadm && !o.KubeadmApplied {
		return "--kubeadm --manifests-dir " + o.ManifestsDir
	}
	if o.Node && !o.KubeadmApplied {
		if o.NodeRoot == "" {
			return "--node"
		}
		return "--node=" + o.NodeRoot
	}
	eps := o.Endpoints
	if len(eps) == 0 {
		eps = []string{"127.0.0.1:2379"}
	}
	out := "--endpoints " + strings.Join(eps, ",")
	if o.CACert != "" {
		out += " --cacert " + o.CACert
	}
	if o.Cert != "" {
		out += " --cert " + o.Cert
	}
	return out
}

// NamesEtcd reports whether o names an etcd to reach: a connection
// setting (or --db) given by a flag or an ETCDCTL_* variable.
func NamesEtcd(o Options) bool {
	for _, f := range connectionSettings {
		if o.Given[f] {
			return true
		}
	}
	return false
}
