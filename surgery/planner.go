package surgery

import "github.com/etcdpvc/etcdpvc/kubevalue"

// Planner makes the plans of the write path: it reads and seals stored
// values as its kubevalue.Codec does, and refuses what the write path must
// not write. The zero Planner works on a cluster without encryption at
// rest under the default prefix, and redacts Secret values in diffs.
type Planner struct {
	kubevalue.Codec
	// AllowKeyMismatch lets MakePlan edit a value whose kind, namespace or
	// name are not those its key names (undelete --force); by default such
	// a plan is refused with ErrKeyMismatch. Restore and recover always
	// refuse.
	AllowKeyMismatch bool
}
