package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrKineTxn means the endpoints are kine, which serves the etcd API from a
// SQL table and accepts only the transactions kube-apiserver sends: one
// key, compared on its mod revision. A transaction of several keys, or
// one comparing a create revision, is refused before it is sent, so
// nothing was written. It matches ErrCrossStore, so that the executor
// writes such keys one transaction each where it does so for keys kept in
// different etcd clusters.
var ErrKineTxn = errors.New("kine serves only single-key transactions compared on the mod revision")

// kineTxnError is ErrKineTxn, matching ErrCrossStore too.
type kineTxnError struct{}

func (kineTxnError) Error() string   { return ErrKineTxn.Error() }
func (kineTxnError) Unwrap() []error { return []error{ErrKineTxn, ErrCrossStore} }

// KineTxnHint is the remedy of ErrKineTxn.
const KineTxnHint = "kine (k3s's datastore) cannot create or delete several keys all or nothing: recover the objects one by one (etcdpvc recover RESOURCE NAME)"

// kineMemberName is the name kine gives the one member its MemberList
// returns, with ID 0, which no etcd member has.
const kineMemberName = "kine"

// Kine reports whether the endpoints are kine rather than etcd. It was
// established when the connection was opened: kine's responses carry no
// cluster ID and its member list names one member "kine" with ID 0.
func (e *Etcd) Kine() bool { return e.kine.Load() }

// detectKine asks for the member list when the connection probe's header
// named no cluster ID, which etcd always does, and records whether the
// endpoints are kine.
func (e *Etcd) detectKine(ctx context.Context) {
	ms, err := e.MemberList(ctx)
	if err != nil {
		return
	}
	e.kine.Store(len(ms) == 1 && ms[0].ID == 0 && ms[0].Name == kineMemberName)
}

// ErrKineUnsupported means the endpoints are kine, which answers none of
// etcd's maintenance: alarms, defragmentation, hashes, snapshots, the
// lease list. The call was not sent.
var ErrKineUnsupported = errors.New("kine (k3s's datastore) serves no alarms, defragmentation, hashes, snapshots or lease list: they are etcd's")

// kineRefuses returns op refused with ErrKineUnsupported when the
// endpoints are kine, else nil.
func (e *Etcd) kineRefuses(op string) error {
	if !e.Kine() {
		return nil
	}
	return fmt.Errorf("%s: %w", op, ErrKineUnsupported)
}
