package surgery

import (
	"context"
	"fmt"
	"strings"

	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// PlanDeleteSelected plans deleting kv, an object the apiserver can read
// that a selection chose (delete -l, --field-selector, --older-than), by
// the rule of every delete: a compare-and-delete on the mod revision read,
// the diff of what goes, a backup of the stored bytes. why says what chose
// it, for the description ("older than 1h"). The warning that no finalizer
// runs is the caller's to say once for the selection; a lease's is kept.
func (c Planner) PlanDeleteSelected(ctx context.Context, kv store.KeyValue, why string) (*Plan, error) {
	res, ns, name, ok := resource.ParseKey(c.StorePrefix(), kv.Key)
	if !ok {
		return nil, fmt.Errorf("delete %s: %w under the prefix %s", kv.Key, ErrNotObjectKey, c.StorePrefix())
	}
	p, err := c.planDelete(ctx, kv, res, ns, name, true)
	if err != nil {
		return nil, err
	}
	p.Description = strings.Replace(p.Description, "(readable, --force)", "("+why+")", 1)
	kept := p.Warnings[:0]
	for _, w := range p.Warnings {
		if !strings.Contains(w, "no finalizers run") {
			kept = append(kept, w)
		}
	}
	p.Warnings = kept
	return p, nil
}
