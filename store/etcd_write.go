package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// CompareAndSwapSize returns an upper bound of the size etcd counts against
// --max-request-bytes for CompareAndSwap's transaction: the value, the key
// (which the transaction names three times) and the framing (the
// transaction's and raft's, an auth user name included).
func CompareAndSwapSize(key string, value []byte) int {
	return len(value) + 3*len(key) + 512
}

// tooLarge reports whether err is a refusal of a request by its size: etcd's
// ErrRequestTooLarge, or a gRPC message size limit (ResourceExhausted
// "message larger than max"; etcd's other ResourceExhausted errors, such as
// "database space exceeded", are not about size).
func tooLarge(err error) bool {
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) {
		return true
	}
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.ResourceExhausted && strings.Contains(s.Message(), "larger than max")
}

// CompareAndSwap puts value at key in one transaction if the key's mod
// revision is still expect (0: the key must not exist), attaching lease
// (0: none). It returns the revision of the write. When the key has moved
// on it writes nothing and returns a *ConflictError holding the key's
// current state (Current 0 when the key is gone). A lease that has expired
// or been revoked fails the put with an error wrapping ErrLeaseNotFound;
// the lease is never dropped silently.
//
// A request larger than etcd or the client accepts fails with an error
// wrapping ErrTooLarge, and was not applied.
//
// An error wrapping ErrUnavailable or a context error leaves the outcome
// unknown: the transaction may have been applied after the client gave up.
// Read the key again before retrying.
func (e *Etcd) CompareAndSwap(ctx context.Context, key string, expect int64, value []byte, lease int64) (int64, error) {
	op := fmt.Sprintf("compare-and-swap %s at revision %d", key, expect)
	var popts []clientv3.OpOption
	if lease != 0 {
		op = fmt.Sprintf("%s with lease %x", op, lease)
		popts = append(popts, clientv3.WithLease(clientv3.LeaseID(lease)))
	}
	var resp *clientv3.TxnResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", expect)).
			Then(clientv3.OpPut(key, string(value), popts...)).
			Else(clientv3.OpGet(key)).
			Commit()
		return err
	})
	if err != nil {
		if tooLarge(err) {
			// Refused before it was applied: never an unknown outcome.
			return 0, fmt.Errorf("%s: %w (%d bytes with the key): %w", op, ErrTooLarge, len(key)+len(value), cleanRPCError(err))
		}
		return 0, rpcError(op, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	return 0, txnConflict(key, expect, resp)
}

// Deleter deletes keys with compare-and-delete. The live backend
// implements it.
type Deleter interface {
	// CompareAndDelete deletes key if and only if its mod revision is
	// still expect. On success it returns the revision of the delete;
	// otherwise it returns a *ConflictError and deletes nothing.
	CompareAndDelete(ctx context.Context, key string, expect int64) (int64, error)
}

// CompareAndDelete deletes key in one transaction if its mod revision is
// still expect, and returns the revision of the delete. When the key has
// moved on (or is gone) it deletes nothing and returns a *ConflictError
// holding the key's current state. An error wrapping ErrUnavailable or a
// context error leaves the outcome unknown, as for CompareAndSwap.
func (e *Etcd) CompareAndDelete(ctx context.Context, key string, expect int64) (int64, error) {
	op := fmt.Sprintf("compare-and-delete %s at revision %d", key, expect)
	if expect <= 0 {
		return 0, fmt.Errorf("%s: a delete needs the revision the key was read at", op)
	}
	var resp *clientv3.TxnResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", expect)).
			Then(clientv3.OpDelete(key)).
			Else(clientv3.OpGet(key)).
			Commit()
		return err
	})
	if err != nil {
		return 0, rpcError(op, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	return 0, txnConflict(key, expect, resp)
}

// txnConflict reports a compare-and-swap (or -delete) whose compare failed:
// its Else branch read the key, which gives the current value, if any.
func txnConflict(key string, expect int64, resp *clientv3.TxnResponse) *ConflictError {
	ce := &ConflictError{Key: key, Expected: expect}
	if len(resp.Responses) == 1 {
		if r := resp.Responses[0].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
			ce.CurrentValue = keyValue(r.Kvs[0], true)
			ce.Current = ce.CurrentValue.ModRevision
		}
	}
	return ce
}
