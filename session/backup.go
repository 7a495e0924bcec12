package session

import (
	"context"
	"path/filepath"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// BackupSource is what a backup of a write made in s records of where it
// went, so that restore can reach it again: the connection (paths made
// absolute, so the record works from any directory), the prefix, the
// encryption config, --kubeadm and its manifests directory, and etcd's
// cluster ID, or for kine, which has none, the kube-system namespace's
// uid. When that cannot be read, the source is returned without it, with
// the store's error.
func (s *Session) BackupSource(ctx context.Context) (*surgery.Source, error) {
	o := s.Options
	src := &surgery.Source{
		Endpoints:        o.Endpoints,
		CACert:           absPath(o.CACert),
		Cert:             absPath(o.Cert),
		Key:              absPath(o.Key),
		Prefix:           o.Prefix,
		Kubeadm:          o.Kubeadm,
		EncryptionConfig: absPath(o.EncryptionConfig),
	}
	if o.Kubeadm {
		src.ManifestsDir = absPath(o.ManifestsDir)
	}
	if cl, ok := store.AsCluster(s.Reader); ok {
		if k, ok := cl.(interface{ Kine() bool }); ok && k.Kine() {
			// kine has no cluster ID: the kube-system namespace's uid
			// names the cluster instead.
			uid, err := s.Planner.KubeSystemUID(ctx, s.Reader)
			src.KubeSystemUID = uid
			return src, err
		}
		id, err := cl.ClusterID(ctx)
		if err != nil {
			return src, err
		}
		src.ClusterID = surgery.FormatClusterID(id)
	}
	return src, nil
}

// absPath makes a path absolute; "" stays "".
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
