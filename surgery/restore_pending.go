package surgery

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// mayStillApply reports whether the write backup b was taken for may
// still be on its way to etcd while its key is at revision rev: audit.log's
// last line of it is its intent (the run was killed after sending it) or
// an uncertain outcome (its answer was lost), rev is a revision a
// transaction of it compares on (the backup's, or a fence of the write
// path's, which its retry compares on), and no fence by restore settled
// it since. A frozen or cut-off member can hold such a transaction and
// apply it when it comes back, after any read that shows the key
// unchanged. For a create, rev is 0 (the key absent).
func (b *Backup) mayStillApply(rev int64) bool {
	base := filepath.Base(b.Path)
	pending := false
	for _, rec := range b.auditLog() {
		switch {
		case rec.Settles != "" && filepath.Base(rec.Settles) == base && rec.Outcome == OutcomeWritten:
			pending = false
		case filepath.Base(rec.Backup) == base && rec.Key == b.Key:
			pending = (rec.Outcome == OutcomeIntent || rec.Outcome == OutcomeUncertain) &&
				(rev == b.ModRevision || rev == rec.Fence)
		}
	}
	return pending
}

// planFence plans the fence of a write of unknown outcome whose key still
// holds the backup's value (kv): the key rewritten with its own bytes and
// lease, under a compare on its revision, so that its mod revision moves
// and the lost compare-and-swap, which compares on the revision it read,
// can never apply. Its record names the backup it settles.
func planFence(p *Plan, b *Backup, kv *store.KeyValue, gr schema.GroupResource) *Plan {
	base := filepath.Base(b.Path)
	p.Before = &kubevalue.Current{KV: *kv, GR: gr}
	p.NewStored, p.Expect, p.Lease = kv.Value, kv.ModRevision, kv.Lease
	p.Settles = b.Path
	p.Description = fmt.Sprintf("fence %s: rewrite it with its own bytes so that the write of backup %s, whose outcome is unknown, can no longer apply", b.Key, base)
	p.Diff = fmt.Sprintf("--- %s (revision %d)\n+++ %s (the same bytes at a new revision: a fence)\n", b.Key, kv.ModRevision, b.Key)
	p.Warnings = append(p.Warnings, fmt.Sprintf("audit.log records the write of backup %s as of unknown outcome (its answer was lost, or the run stopped after sending it), and %s still holds the backup's value (revision %d): the write may still apply (a frozen or cut-off member can hold it), so restore fences it off: it rewrites the key with its own bytes, and the write, which compares on revision %d, can then never apply", base, b.Key, kv.ModRevision, kv.ModRevision))
	return p
}

// PendingCreateError reports the undo of a create of unknown outcome whose
// key is absent: a create cannot be fenced off (it compares on the key
// being absent, which a fence cannot change without creating it), so it
// may still land while a member that does not answer holds it. Nothing is
// written. It matches ErrUncertain.
type PendingCreateError struct {
	Key, Backup string
	// Members are the members that do not answer, or that hold the key
	// when the others do not.
	Members []string
	// Err is why the members could not be listed, if they could not.
	Err error
}

func (e *PendingCreateError) Error() string {
	who := "member " + strings.Join(e.Members, "; member ")
	if e.Err != nil {
		who = fmt.Sprintf("any member (the members could not be listed: %v)", e.Err)
	}
	return fmt.Sprintf("restore %s from %s: %v: audit.log records the create backup %s was taken for as of unknown outcome, and the key is absent; a create cannot be fenced off (it compares on the key being absent), so it may still land through %s; nothing written",
		e.Key, e.Backup, ErrUncertain, filepath.Base(e.Backup), who)
}

// Unwrap returns ErrUncertain.
func (e *PendingCreateError) Unwrap() error { return ErrUncertain }

// Hint says how to know when the create can no longer land.
func (e *PendingCreateError) Hint() string {
	return "the create can no longer land once the member holding it has restarted or answers again (etcdctl endpoint status --cluster lists every member); then run this restore again: it deletes the key if the create landed, and has nothing to do if not"
}

// pendingCreate checks, for the undo of a create of unknown outcome whose
// key is absent (read linearizably), whether the create may still land:
// when a member of the cluster does not answer, or holds the key, it may,
// and the error is a *PendingCreateError. A store without members (a db
// file) holds no transaction in flight.
func pendingCreate(ctx context.Context, r store.Reader, b *Backup) error {
	mr, ok := r.(store.MemberReader)
	if !ok {
		return nil
	}
	mks, err := mr.MemberKeys(ctx, b.Key, 0)
	if err != nil {
		return &PendingCreateError{Key: b.Key, Backup: b.Path, Err: err}
	}
	var who []string
	for _, mk := range mks {
		switch {
		case mk.Err != nil:
			who = append(who, fmt.Sprintf("%s, which does not answer (%v)", mk.Member.Name, mk.Err))
		case mk.KV != nil:
			who = append(who, fmt.Sprintf("%s, which holds the key at revision %d", mk.Member.Name, mk.KV.ModRevision))
		}
	}
	if len(who) > 0 {
		return &PendingCreateError{Key: b.Key, Backup: b.Path, Members: who}
	}
	return nil
}
