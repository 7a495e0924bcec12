package inspect

import (
	"context"
	"fmt"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// ClearSecrets is what SecretsInClear found.
type ClearSecrets struct {
	// Total is the number of Secrets stored; Clear the number of them
	// stored in the clear (without the k8s:enc: prefix: identity).
	Total, Clear int
	// Names are the first of the Secrets in the clear, as
	// "namespace/name", in key order; never their values.
	Names []string
}

// SecretsInClear reads every Secret under the apiserver's etcd prefix and
// counts those stored in the clear, naming up to max of them. Under an
// EncryptionConfiguration whose first provider for secrets encrypts, such
// Secrets were written before encryption was turned on, or by identity,
// and stay readable by anyone with the etcd data until they are rewritten.
func SecretsInClear(ctx context.Context, r store.Reader, prefix string, max int) (ClearSecrets, error) {
	var out ClearSecrets
	listPrefix := prefix + "/secrets/"
	_, err := r.List(ctx, listPrefix, store.ListOptions{OnCompacted: anyRevision}, func(kv *store.KeyValue) error {
		out.Total++
		if codec.Detect(kv.Value) == codec.FormatEncrypted {
			return nil
		}
		out.Clear++
		if len(out.Names) < max {
			name := kv.Key
			if _, ns, n, ok := resource.ParseKey(prefix, kv.Key); ok {
				name = ns + "/" + n
			}
			out.Names = append(out.Names, name)
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("read Secrets under %s: %w", listPrefix, err)
	}
	return out, nil
}
