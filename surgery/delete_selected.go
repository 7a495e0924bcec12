package surgery

import (
	"fmt"

	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
)

// PlanDeleteSelected plans deleting cur, an object read at the latest
// revision that a selection chose (delete -l, --field-selector,
// --older-than), by the rule of every delete: a compare-and-delete on the
// mod revision read and a backup of the stored bytes. why says what chose
// it, in the description ("older than 1h"). The plan has no diff: a
// selection is shown one line per object, and rendering thousands of
// objects whole would cost the memory and time a full etcd's operator does
// not have. That no finalizer runs, and that a key's lease is not
// restored by the undo, are the caller's to say, once for the selection.
func (c Planner) PlanDeleteSelected(cur *kubevalue.Current, why string) (*Plan, error) {
	res, ns, name, ok := resource.ParseKey(c.StorePrefix(), cur.KV.Key)
	if !ok {
		return nil, fmt.Errorf("delete %s: %w under the prefix %s", cur.KV.Key, ErrNotObjectKey, c.StorePrefix())
	}
	kind := res.Singular
	if kind == "" {
		kind = res.String()
	}
	object := kubectlName(kind, ns, name)
	p := &Plan{Key: cur.KV.Key, GR: res.GroupResource(), Delete: true, Expect: cur.KV.ModRevision, Lease: cur.KV.Lease, Before: cur,
		Description: fmt.Sprintf("delete %s (%s)", object, why)}
	return p, nil
}
