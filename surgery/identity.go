package surgery

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/etcdpvc/etcdpvc/store"
)

// KubeSystemUID reads the uid of the kube-system namespace from r: the
// identity of a cluster whose store names no etcd cluster ID, as kine's
// does not. kube-apiserver creates the namespace when it first starts and
// refuses to delete it, so its uid names the cluster for its life.
func (c Planner) KubeSystemUID(ctx context.Context, r store.Reader) (string, error) {
	key := c.StorePrefix() + "/namespaces/kube-system"
	cur, err := c.Load(ctx, r, key, 0)
	if err != nil {
		return "", fmt.Errorf("read the kube-system namespace's uid: %w", err)
	}
	if cur.Obj.Meta.UID == "" {
		return "", fmt.Errorf("read the kube-system namespace's uid: %s has none", key)
	}
	return string(cur.Obj.Meta.UID), nil
}

// checkKubeSystem compares the kube-system namespace uid a backup records
// with the one r holds, as checkCluster compares etcd cluster IDs: a
// mismatch, or a uid that cannot be read, is an *OtherClusterError unless
// force, then a warning.
func (c Planner) checkKubeSystem(ctx context.Context, r store.Reader, b *Backup, force bool) ([]string, error) {
	e := &OtherClusterError{Backup: b.Path, Recorded: b.KubeSystemUID(), Identity: kubeSystemIdentity, RecordedEndpoints: b.Source.Endpoints}
	if er, ok := r.(interface{ Endpoints() []string }); ok {
		e.LiveEndpoints = er.Endpoints()
	}
	live, err := c.KubeSystemUID(ctx, r)
	if err == nil {
		if live == e.Recorded {
			return nil, nil
		}
		e.Live = live
	}
	switch {
	case force:
		return []string{e.Error() + "; restoring anyway, as forced"}, nil
	case err != nil:
		return nil, fmt.Errorf("%w (%w)", e, err)
	}
	return nil, e
}

// kubeSystemIdentity names the identity a kine backup records.
const kubeSystemIdentity = "kube-system namespace uid"

// otherClusterText is OtherClusterError's message.
func otherClusterText(e *OtherClusterError) string {
	what, liveWhat, store := "etcd cluster ID", "cluster ID", "etcd"
	if e.Identity != "" {
		what, liveWhat, store = e.Identity, e.Identity, "store"
	}
	live := "an unknown " + liveWhat
	if e.Live != "" {
		live = liveWhat + " " + e.Live
	}
	return fmt.Sprintf("backup %s was taken from %s %s (endpoints %s), but the %s reached at %s has %s",
		e.Backup, what, e.Recorded, strings.Join(e.RecordedEndpoints, ","), store, strings.Join(e.LiveEndpoints, ","), live)
}

// noIdentityWarning is restore's warning for a backup that records neither
// an etcd cluster ID nor a kube-system namespace uid.
func noIdentityWarning(b *Backup) string {
	return fmt.Sprintf("backup %s records no etcd cluster ID nor kube-system namespace uid; restore cannot check that this is the cluster it was taken from", filepath.Base(b.Path))
}
