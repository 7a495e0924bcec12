package surgery

import (
	"context"

	"github.com/etcdpvc/etcdpvc/store"
)

// Open decrypts and decodes a key-value already read (for example one
// revision of a history).
func (c Codec) Open(ctx context.Context, kv store.KeyValue) (*Current, error) {
	return c.open(ctx, kv)
}
