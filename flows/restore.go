package flows

import (
	"context"
	"errors"
	"fmt"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// Restore undoes the write backup b was taken for (surgery.Planner.PlanRestore)
// through Write. A key changed since that write is refused unless force,
// after showing the diff from what it holds to the backup; a backup of
// another cluster is refused with how to reach the right one.
func (s *Session) Restore(ctx context.Context, t Terminal, b *surgery.Backup, force bool, o WriteOptions) (err error) {
	defer func() { o.Result.Failed(b.Key, nil, s.Options.Prefix, err) }()
	plan, err := s.Planner.PlanRestore(ctx, s.Reader, b, force)
	if err != nil {
		var ch *surgery.ChangedError
		if errors.As(err, &ch) {
			t.Diff(ch.Diff)
			msg, hint := ch.Refusal()
			return &RefusedError{Msg: msg, Advice: hint}
		}
		var oc *surgery.OtherClusterError
		if errors.As(err, &oc) {
			return &hintedError{err, "give the connection flags of the cluster the backup was taken from; --force restores into this cluster anyway"}
		}
		return err
	}
	_, err = s.Write(ctx, t, []*surgery.Plan{plan}, o)
	return err
}

// RestoreAll undoes the writes of backups, given in the order they were
// made (an operation's: surgery.OperationBackups), in reverse order,
// through Write: runs of deletes (of what creates made) or of creates (of
// what deletes removed) go in transactions of at most o.MaxTxnOps keys
// (default store.MaxTxnOps), each all or nothing, and every other key
// with its own compare-and-swap. Each key must hold what its write left
// (surgery.Planner.PlanRestores): one changed since refuses the whole
// restore, with every such diff shown, unless force. A key restored
// already is nothing to do, so a second run after a partial one finishes
// it.
func (s *Session) RestoreAll(ctx context.Context, t Terminal, backups []*surgery.Backup, force bool, o WriteOptions) error {
	plans, err := s.Planner.PlanRestores(ctx, s.Reader, backups, force)
	if err != nil {
		var set *surgery.RestoreSetError
		if errors.As(err, &set) {
			for _, ch := range set.Changed {
				t.Diff(ch.Diff)
				// The refusal's words, not the diff: a record holds no value.
				msg, _ := ch.Refusal()
				o.Result.Failed(ch.Key, nil, s.Options.Prefix, &RefusedError{Msg: msg})
			}
			refused := &RefusedError{Msg: set.Error(), Advice: set.Hint()}
			for _, b := range backups { // the others: not written either
				o.Result.Failed(b.Key, nil, s.Options.Prefix, refused)
			}
			return refused
		}
		var oc *surgery.OtherClusterError
		if errors.As(err, &oc) {
			err = &hintedError{err, "give the connection flags of the cluster the backups were taken from; --force restores into this cluster anyway"}
		}
		for _, b := range backups {
			o.Result.Failed(b.Key, nil, s.Options.Prefix, err)
		}
		return err
	}
	if o.MaxTxnOps <= 0 {
		o.MaxTxnOps = store.MaxTxnOps
	}
	_, err = s.Write(ctx, t, plans, o)
	return err
}

// keyResource returns the resource key belongs to, which selects the
// encryption provider.
func keyResource(prefix, key string) (resource.Resource, error) {
	if key == "" {
		return resource.Resource{}, usageError("", "an encrypted value needs its etcd key (--etcd-key): it selects the provider and is authenticated data")
	}
	r, _, _, ok := resource.ParseKey(prefix, key)
	if !ok {
		return resource.Resource{}, usageError("", "--etcd-key %q is not an object key under the prefix %q", key, prefix)
	}
	return r, nil
}

// DecryptValue returns the plaintext of a stored value read from a file or
// pipe, decrypting it with o's encryption config when it is encrypted; key
// selects the provider. o has its --kubeadm applied (Kubeadm).
func DecryptValue(ctx context.Context, o session.Options, key string, value []byte) ([]byte, error) {
	if codec.Detect(value) != codec.FormatEncrypted {
		return value, nil
	}
	enc, err := session.LoadEncryption(ctx, o)
	if err != nil {
		return nil, err
	}
	if enc == nil {
		_, err := codec.Decode(value)
		return nil, err
	}
	defer enc.Close()
	r, err := keyResource(o.Prefix, key)
	if err != nil {
		return nil, err
	}
	plain, err := enc.Decrypt(ctx, r.GroupResource(), key, value)
	if err != nil {
		return nil, fmt.Errorf("decrypt %s: %w", key, err)
	}
	return plain, nil
}

// EncryptValue encrypts plaintext for key with the first provider o's
// encryption config lists for its resource, as the apiserver would;
// without a config the plaintext is returned. o has its --kubeadm applied.
func EncryptValue(ctx context.Context, o session.Options, key string, plain []byte) ([]byte, error) {
	enc, err := session.LoadEncryption(ctx, o)
	if err != nil || enc == nil {
		return plain, err
	}
	defer enc.Close()
	r, err := keyResource(o.Prefix, key)
	if err != nil {
		return nil, err
	}
	out, err := enc.Encrypt(ctx, r.GroupResource(), key, plain)
	if err != nil {
		return nil, fmt.Errorf("encrypt %s: %w", key, err)
	}
	return out, nil
}

// Delete deletes the object at key from etcd through Write
// (surgery.Planner.PlanDelete): a value the apiserver cannot read (so that
// every LIST of its resource fails and kubectl cannot delete it), or with
// force an object it can. The backup holds the stored bytes; restore puts
// them back.
func (s *Session) Delete(ctx context.Context, t Terminal, key string, force bool, o WriteOptions) error {
	plan, err := s.Planner.PlanDelete(ctx, s.Reader, key, force)
	if err != nil {
		o.Result.Failed(key, nil, s.Options.Prefix, err)
		return err
	}
	_, err = s.Write(ctx, t, []*surgery.Plan{plan}, o)
	return err
}
