package store

import (
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"google.golang.org/protobuf/encoding/protowire"
)

// LeaseInfo is a lease a store holds. A db file's "lease" bucket records
// each lease as etcd's leasepb.Lease: its ID, the TTL it was granted and,
// when etcd checkpoints leases, the TTL remaining at the last checkpoint.
type LeaseInfo struct {
	ID int64
	// TTL is the TTL the lease was granted, in seconds (0: unknown).
	TTL int64
	// Remaining is the TTL left, in seconds: live etcd's answer, or a db
	// file's last checkpoint (-1: unknown).
	Remaining int64
}

// Leaser is a store that lists the leases it holds: a live etcd (its
// lease list) and a db file (its lease bucket).
type Leaser interface {
	// Leases lists the leases held. A live etcd's list carries no TTLs
	// (TTL 0, Remaining -1): LeaseTTL asks for one lease's.
	Leases(ctx context.Context) ([]LeaseInfo, error)
	// LeaseTTL returns one lease's TTLs; a lease not held is an error
	// wrapping ErrNotFound.
	LeaseTTL(ctx context.Context, id int64) (LeaseInfo, error)
}

var (
	_ Leaser = (*Bolt)(nil)
	_ Leaser = (*Etcd)(nil)
)

// leasepb.Lease's fields.
const (
	leaseFieldID           protowire.Number = 1
	leaseFieldTTL          protowire.Number = 2
	leaseFieldRemainingTTL protowire.Number = 3
)

// Leases lists the leases the file's "lease" bucket holds, with their
// TTLs (Remaining -1 when no checkpoint recorded one).
func (b *Bolt) Leases(ctx context.Context) ([]LeaseInfo, error) {
	var out []LeaseInfo
	err := b.view(func(tx *bolt.Tx, _ *viewGuard) error {
		lb := tx.Bucket(schema.Lease.Name())
		if lb == nil {
			return nil
		}
		return lb.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return nil
			}
			l, err := parseLease(v)
			if err != nil {
				return fmt.Errorf("lease %x: %w", k, err)
			}
			l.ID = int64(binary.BigEndian.Uint64(k))
			out = append(out, l)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read the db's leases: %w", err)
	}
	return out, ctx.Err()
}

// LeaseTTL returns the lease id the file's lease bucket holds.
func (b *Bolt) LeaseTTL(ctx context.Context, id int64) (LeaseInfo, error) {
	all, err := b.Leases(ctx)
	if err != nil {
		return LeaseInfo{}, err
	}
	for _, l := range all {
		if l.ID == id {
			return l, nil
		}
	}
	return LeaseInfo{}, fmt.Errorf("lease %x: %w", id, ErrNotFound)
}

// parseLease reads a leasepb.Lease (its ID is the bucket's key).
func parseLease(v []byte) (LeaseInfo, error) {
	l := LeaseInfo{Remaining: -1}
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return l, fmt.Errorf("malformed lease record: %w", protowire.ParseError(n))
		}
		v = v[n:]
		if typ != protowire.VarintType {
			n = protowire.ConsumeFieldValue(num, typ, v)
			if n < 0 {
				return l, fmt.Errorf("malformed lease record: %w", protowire.ParseError(n))
			}
			v = v[n:]
			continue
		}
		x, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return l, fmt.Errorf("malformed lease record: %w", protowire.ParseError(n))
		}
		v = v[n:]
		switch num {
		case leaseFieldTTL:
			l.TTL = int64(x)
		case leaseFieldRemainingTTL:
			if x > 0 {
				l.Remaining = int64(x)
			}
		case leaseFieldID:
		}
	}
	return l, nil
}

// Leases lists the leases etcd holds (etcd's LeaseLeases), without TTLs.
func (e *Etcd) Leases(ctx context.Context) ([]LeaseInfo, error) {
	if err := e.kineRefuses("lease list"); err != nil {
		return nil, err
	}
	var resp *clientv3.LeaseLeasesResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.Leases(ctx)
		return err
	})
	if err != nil {
		return nil, rpcError("list leases", err)
	}
	out := make([]LeaseInfo, 0, len(resp.Leases))
	for _, l := range resp.Leases {
		out = append(out, LeaseInfo{ID: int64(l.ID), Remaining: -1})
	}
	return out, nil
}

// LeaseTTL asks etcd for one lease's granted and remaining TTL (etcd's
// LeaseTimeToLive); an expired or revoked lease wraps ErrNotFound.
func (e *Etcd) LeaseTTL(ctx context.Context, id int64) (LeaseInfo, error) {
	var resp *clientv3.LeaseTimeToLiveResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.TimeToLive(ctx, clientv3.LeaseID(id))
		return err
	})
	if err != nil {
		return LeaseInfo{}, rpcError(fmt.Sprintf("lease %x time to live", id), err)
	}
	if resp.TTL == -1 {
		return LeaseInfo{}, fmt.Errorf("lease %x: %w", id, ErrNotFound)
	}
	return LeaseInfo{ID: id, TTL: resp.GrantedTTL, Remaining: resp.TTL}, nil
}
