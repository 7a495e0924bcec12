package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// MaxTxnOps is etcd's default --max-txn-ops: the most operations one
// transaction may hold in each of its branches.
const MaxTxnOps = 128

// BatchCreator is what a store that can create many keys in one
// transaction can do beyond Writer: the live etcd. Callers test for it with
// a type assertion and fall back to one CompareAndSwap per key.
type BatchCreator interface {
	// CreateBatch puts every kv (Key and Value; no lease) in one
	// transaction if and only if none of the keys exists: all or nothing.
	// On success it returns the transaction's revision. When a key exists
	// it writes nothing and returns a *BatchConflictError (matching
	// ErrConflict). A request larger than etcd accepts, or with more
	// operations than its --max-txn-ops (then also ErrTooManyOps), wraps
	// ErrTooLarge and was not applied. An error wrapping ErrUnavailable or a context error leaves
	// the outcome unknown, as for CompareAndSwap.
	CreateBatch(ctx context.Context, kvs []KeyValue) (int64, error)
}

// BatchConflictError reports a CreateBatch that found keys already
// present; nothing was written. It matches ErrConflict.
type BatchConflictError struct {
	// Existing are the keys that exist, with their current state.
	Existing []KeyValue
}

func (e *BatchConflictError) Error() string {
	keys := make([]string, len(e.Existing))
	for i, kv := range e.Existing {
		keys[i] = fmt.Sprintf("%s (revision %d)", kv.Key, kv.ModRevision)
	}
	if len(keys) == 0 {
		return "create batch: a key exists (it was deleted again before it could be read)"
	}
	return "create batch: the keys exist: " + strings.Join(keys, ", ")
}

// Is reports whether target is ErrConflict.
func (e *BatchConflictError) Is(target error) bool { return target == ErrConflict }

// CreateBatchSize returns an upper bound of the size etcd counts against
// --max-request-bytes for a CreateBatch of kvs.
func CreateBatchSize(kvs []KeyValue) int {
	n := 512
	for _, kv := range kvs {
		n += len(kv.Value) + 3*len(kv.Key) + 32
	}
	return n
}

// batchTxn sends one transaction of a batch, If cmps Then thens Else
// elses, for op (a batch of about size bytes, as etcd counts them). More
// operations than etcd's --max-txn-ops wrap ErrTooManyOps and
// ErrTooLarge, a request too large ErrTooLarge: neither was applied.
func (e *Etcd) batchTxn(ctx context.Context, op string, size int, cmps []clientv3.Cmp, thens, elses []clientv3.Op) (*clientv3.TxnResponse, error) {
	var resp *clientv3.TxnResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.Txn(ctx).If(cmps...).Then(thens...).Else(elses...).Commit()
		return err
	})
	switch {
	case err == nil:
		return resp, nil
	case strings.Contains(err.Error(), "too many operations in txn request"):
		return nil, fmt.Errorf("%s: %w: %w: %w", op, ErrTooManyOps, ErrTooLarge, cleanRPCError(err))
	case tooLarge(err):
		return nil, fmt.Errorf("%s: %w (%d bytes): %w", op, ErrTooLarge, size, cleanRPCError(err))
	}
	return nil, rpcError(op, err)
}

// CreateBatch implements BatchCreator with one transaction: If
// CreateRevision(k) == 0 for every key, Then Put every key, Else Get every
// key (keys only) to report which exist.
func (e *Etcd) CreateBatch(ctx context.Context, kvs []KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return 0, errors.New("create batch: no keys")
	}
	op := fmt.Sprintf("create %d keys in one transaction (%s … %s)", len(kvs), kvs[0].Key, kvs[len(kvs)-1].Key)
	if e.Kine() {
		return 0, fmt.Errorf("%s: %w; nothing sent", op, kineTxnError{})
	}
	cmps := make([]clientv3.Cmp, len(kvs))
	puts := make([]clientv3.Op, len(kvs))
	gets := make([]clientv3.Op, len(kvs))
	for i, kv := range kvs {
		cmps[i] = clientv3.Compare(clientv3.CreateRevision(kv.Key), "=", 0)
		puts[i] = clientv3.OpPut(kv.Key, string(kv.Value))
		gets[i] = clientv3.OpGet(kv.Key, clientv3.WithKeysOnly())
	}
	resp, err := e.batchTxn(ctx, op, CreateBatchSize(kvs), cmps, puts, gets)
	if err != nil {
		return 0, err
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	ce := &BatchConflictError{}
	for _, r := range resp.Responses {
		if rr := r.GetResponseRange(); rr != nil {
			for _, kv := range rr.Kvs {
				ce.Existing = append(ce.Existing, *keyValue(kv, false))
			}
		}
	}
	return 0, ce
}

// CreateBatch creates kvs in their store when they all live in one;
// otherwise it fails without writing, and the caller writes them one by
// one.
func (r *Routed) CreateBatch(ctx context.Context, kvs []KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return 0, errors.New("create batch: no keys")
	}
	s := r.storeFor(kvs[0].Key)
	for _, kv := range kvs[1:] {
		if r.storeFor(kv.Key) != s {
			return 0, fmt.Errorf("create batch: %s and %s are kept in different etcd clusters: %w", kvs[0].Key, kv.Key, ErrCrossStore)
		}
	}
	bc, ok := s.(BatchCreator)
	if !ok {
		return 0, fmt.Errorf("create batch: %T: %w", s, ErrCrossStore)
	}
	return bc.CreateBatch(ctx, kvs)
}

// ErrTooManyOps means etcd refused a transaction for holding more
// operations than its --max-txn-ops; it was not applied.
var ErrTooManyOps = errors.New("etcd refuses more operations in one transaction than its --max-txn-ops")

// ErrCrossStore means a CreateBatch's keys are not all in one store that
// can create them together; nothing was written.
var ErrCrossStore = errors.New("keys cannot be created in one transaction")

var (
	_ BatchCreator = (*Etcd)(nil)
	_ BatchCreator = (*Routed)(nil)
)

// BatchDeleter is what a store that can delete many keys in one
// transaction can do beyond Deleter: the live etcd. Callers test for it
// with a type assertion and fall back to one CompareAndDelete per key.
type BatchDeleter interface {
	// DeleteBatch deletes every kv's Key in one transaction if and only if
	// each is still at its ModRevision: all or nothing. On success it
	// returns the transaction's revision. When a key has moved or is gone
	// it deletes nothing and returns a *BatchMovedError (matching
	// ErrConflict). Errors otherwise as CreateBatch's: too large or too
	// many operations wrap ErrTooLarge and were not applied; ErrUnavailable
	// or a context error leave the outcome unknown.
	DeleteBatch(ctx context.Context, kvs []KeyValue) (int64, error)
}

// BatchMovedError reports a DeleteBatch that found keys no longer at the
// revision it compared against; nothing was deleted. It matches
// ErrConflict.
type BatchMovedError struct {
	// Moved are the keys found at another revision (their current
	// state, without values); Gone the keys that no longer exist.
	Moved []KeyValue
	Gone  []string
}

func (e *BatchMovedError) Error() string {
	var parts []string
	for _, kv := range e.Moved {
		parts = append(parts, fmt.Sprintf("%s (now at revision %d)", kv.Key, kv.ModRevision))
	}
	for _, k := range e.Gone {
		parts = append(parts, k+" (gone)")
	}
	if len(parts) == 0 {
		return "delete batch: a key moved (and moved back before it could be read)"
	}
	return "delete batch: the keys changed since they were read: " + strings.Join(parts, ", ")
}

// Is reports whether target is ErrConflict.
func (e *BatchMovedError) Is(target error) bool { return target == ErrConflict }

// DeleteBatchSize returns an upper bound of the size etcd counts against
// --max-request-bytes for a DeleteBatch of kvs.
func DeleteBatchSize(kvs []KeyValue) int {
	n := 512
	for _, kv := range kvs {
		n += 3*len(kv.Key) + 48
	}
	return n
}

// DeleteBatch implements BatchDeleter with one transaction: If
// ModRevision(k) == kv.ModRevision for every key, Then Delete every key,
// Else Get every key (keys only) to report which moved.
func (e *Etcd) DeleteBatch(ctx context.Context, kvs []KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return 0, errors.New("delete batch: no keys")
	}
	op := fmt.Sprintf("delete %d keys in one transaction (%s … %s)", len(kvs), kvs[0].Key, kvs[len(kvs)-1].Key)
	if e.Kine() && len(kvs) > 1 {
		return 0, fmt.Errorf("%s: %w; nothing sent", op, kineTxnError{})
	}
	cmps := make([]clientv3.Cmp, len(kvs))
	dels := make([]clientv3.Op, len(kvs))
	gets := make([]clientv3.Op, len(kvs))
	for i, kv := range kvs {
		if kv.ModRevision <= 0 {
			return 0, fmt.Errorf("%s: %s has no revision to compare against", op, kv.Key)
		}
		cmps[i] = clientv3.Compare(clientv3.ModRevision(kv.Key), "=", kv.ModRevision)
		dels[i] = clientv3.OpDelete(kv.Key)
		gets[i] = clientv3.OpGet(kv.Key, clientv3.WithKeysOnly())
	}
	resp, err := e.batchTxn(ctx, op, DeleteBatchSize(kvs), cmps, dels, gets)
	if err != nil {
		return 0, err
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	me := &BatchMovedError{}
	for i, r := range resp.Responses {
		rr := r.GetResponseRange()
		if rr == nil || i >= len(kvs) {
			continue
		}
		if len(rr.Kvs) == 0 {
			me.Gone = append(me.Gone, kvs[i].Key)
			continue
		}
		if cur := keyValue(rr.Kvs[0], false); cur.ModRevision != kvs[i].ModRevision {
			me.Moved = append(me.Moved, *cur)
		}
	}
	return 0, me
}

// DeleteBatch deletes kvs in their store when they all live in one;
// otherwise it fails without writing, and the caller deletes them one by
// one.
func (r *Routed) DeleteBatch(ctx context.Context, kvs []KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return 0, errors.New("delete batch: no keys")
	}
	s := r.storeFor(kvs[0].Key)
	for _, kv := range kvs[1:] {
		if r.storeFor(kv.Key) != s {
			return 0, fmt.Errorf("delete batch: %s and %s are kept in different etcd clusters: %w", kvs[0].Key, kv.Key, ErrCrossStore)
		}
	}
	bd, ok := s.(BatchDeleter)
	if !ok {
		return 0, fmt.Errorf("delete batch: %T: %w", s, ErrCrossStore)
	}
	return bd.DeleteBatch(ctx, kvs)
}

var (
	_ BatchDeleter = (*Etcd)(nil)
	_ BatchDeleter = (*Routed)(nil)
)
