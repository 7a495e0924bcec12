package surgery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etcdpvc/etcdpvc/store"
)

// Bounds of resolve: how long it tries (from the caller giving up, when it
// does), and how many requests it sends.
const (
	resolveTimeout  = 30 * time.Second
	cancelledBudget = 5 * time.Second
	resolveAttempts = 8
	resolveRetries  = 3
	resolvePause    = 250 * time.Millisecond
)

// txnState is what resolve has established about a transaction whose
// answer was lost: sent (a send is outstanding, its outcome open), fenced
// (a key it compares on was rewritten with its own value, so no send so
// far can apply), applied, not applied (and never will be), or unknown.
type txnState int

const (
	stateSent txnState = iota
	stateFenced
	stateApplied
	stateNotApplied
	stateUnknown
)

// resolver is the state of one resolve: ctx is the caller's (once it is
// done, nothing is sent again) and rctx bounds the resolution; expect is
// what every outstanding send compares each key against, the plan's
// revision or the last fence's; fenceSent marks the keys a fence was sent
// to, fenceKey and fenceRev the last fence that landed and note what it
// established; rev, warnings and err are the outcome.
type resolver struct {
	t               *txn
	w               store.Writer
	rd              store.Reader
	ctx, rctx       context.Context
	state           txnState
	expect          []int64
	fenceSent       []bool
	fenceKey        string
	fenceRev        int64
	note, lost      string
	retries         int
	txnErr, lastErr error
	rev             int64
	warnings        []string
	err             error
}

// resolve finds out, after transaction t was sent and its answer was lost
// (a timeout, a leader lost, a connection reset, ctx cancelled while it
// was under way), whether it was applied, and sends it again when it was
// not and the caller is still waiting. It is the one resolver of every
// write: a put, a delete, a batch of several keys.
//
// Every key is read linearizably through any member that answers
// (readAny), so that the member that lost the answer does not hold the
// resolution up. A read that shows a key unchanged proves nothing: the
// transaction may still be on its way and apply later. Its outcome is
// known only once it can no longer apply, which a fence establishes: a
// compare-and-swap that rewrites a key the transaction compares on with
// the value read, at the same revision, same bytes, same lease. Then:
//
//   - every key holds the new value: the transaction was applied;
//   - the fence landed: no send so far can apply, since it compares
//     against a revision the key has left. A put is sent again against
//     the fence's revision while the caller waits, and resolved the same
//     way; a delete is not: nothing was deleted, and the command is run
//     again;
//   - a create has no fence that leaves no visible object: while every key
//     is absent, it is sent again while the caller waits (the lost
//     transaction and the new one cannot both apply), and otherwise its
//     outcome is unknown;
//   - the keys moved on: no send can apply any more; for a put, the keys'
//     history says whether it was made and overwritten since; a delete
//     cannot be told from another client's.
//
// It returns the revision and warnings of a transaction applied, or an
// error that says whether anything was written: a *ConflictError, a
// *FenceError, or an *UncertainError (ErrUncertain) when it cannot tell.
// It runs at most resolveTimeout, and at most cancelledBudget once ctx is
// done.
func resolve(ctx context.Context, w store.Writer, t *txn, txnErr error) (int64, []string, error) {
	r := &resolver{t: t, w: w, ctx: ctx, expect: t.expects(), fenceSent: make([]bool, len(t.plans)), txnErr: txnErr, lastErr: txnErr}
	r.lost = fmt.Sprintf("the transaction's answer was lost (%v)", txnErr)
	if ctx.Err() != nil {
		r.lost = fmt.Sprintf("the write was interrupted while its transaction was under way (%v)", txnErr)
	}
	rd, ok := w.(store.Reader)
	if !ok {
		r.unknown(fmt.Sprintf("the transaction failed without an answer (%v) and the store cannot be read back", txnErr))
		return 0, nil, r.err
	}
	r.rd = rd
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(cancelledBudget, cancel)
		context.AfterFunc(rctx, func() { t.Stop() })
	})
	defer stop()
	r.rctx = rctx
	for attempt := 0; r.state == stateSent || r.state == stateFenced; attempt++ {
		if attempt >= resolveAttempts || rctx.Err() != nil {
			if t.creates() {
				r.unknown(fmt.Sprintf("%s; the reads did not show the keys created, but a create cannot be fenced off and may still land (last error: %v)", r.lost, r.lastErr))
			} else {
				r.unknown(fmt.Sprintf("%s; the transaction could not be fenced off (last error: %v), so it may still apply", r.lost, r.lastErr))
			}
			break
		}
		kvs, err := r.read()
		if err != nil {
			r.lastErr = err
			r.pause()
			continue
		}
		r.next(kvs)
	}
	return r.rev, r.warnings, r.err
}

// read reads every key of the transaction through any member: nil for a
// key that is absent.
func (r *resolver) read() ([]*store.KeyValue, error) {
	out := make([]*store.KeyValue, len(r.t.plans))
	for i, p := range r.t.plans {
		kv, err := readAny(r.rctx, r.rd, p.Key)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			out[i] = kv
		}
	}
	return out, nil
}

// next moves the resolution on from what a read of every key shows.
func (r *resolver) next(kvs []*store.KeyValue) {
	t := r.t
	made, absent := 0, 0
	for i, kv := range kvs {
		switch {
		case kv == nil:
			absent++
		case t.puts && bytes.Equal(kv.Value, t.plans[i].NewStored):
			made++
		}
	}
	if made == len(kvs) && sameRevision(kvs) {
		r.applied(kvs[0].ModRevision, fmt.Sprintf("%s, but a re-read shows the new value at revision %d: the write was made", r.lost, kvs[0].ModRevision))
		return
	}
	for i, kv := range kvs {
		if p := t.plans[i]; p.Expect != 0 && kv != nil && kv.ModRevision == r.expect[i] {
			r.fence(i, kv)
			return
		}
	}
	switch {
	case t.creates() && absent == len(kvs) && t.batch():
		r.sendAgain("the keys were still absent")
	case t.creates() && absent == len(kvs):
		r.sendAgain("the key was still absent")
	case t.creates() && made > 0 && made+absent == len(kvs):
		// The keys are read one by one: a transaction that landed
		// during the read shows some created and the rest absent. It
		// creates all of them at once, so read them again.
	default:
		r.moved(kvs)
	}
}

// sameRevision reports whether every key read is at one revision: the
// revision of one transaction that wrote them all.
func sameRevision(kvs []*store.KeyValue) bool {
	for _, kv := range kvs {
		if kv == nil || kv.ModRevision != kvs[0].ModRevision {
			return false
		}
	}
	return true
}

// fence rewrites key i with its own value kv, at the revision the
// transaction compares it against.
func (r *resolver) fence(i int, kv *store.KeyValue) {
	r.fenceSent[i] = true
	frev, err := r.w.CompareAndSwap(r.rctx, kv.Key, r.expect[i], kv.Value, kv.Lease)
	var ce *store.ConflictError
	switch {
	case err == nil:
		r.fenced(i, frev)
	case errors.As(err, &ce):
		// Moved between the read and the fence: the re-read sorts it
		// out.
	case errors.Is(err, store.ErrLeaseNotFound):
		// The key's lease is gone: the lost transaction, which attaches
		// it, cannot apply either.
		r.notApplied(fmt.Errorf("%s: %s; the key's lease has expired (%w), so the transaction cannot apply: %s", r.t.what(), r.lost, store.ErrLeaseNotFound, r.t.nothing()))
	default:
		r.lastErr = err
		r.pause()
	}
}

// fenced takes note of a fence of key i that landed at frev: no send so
// far can apply. A put is sent again; a delete is settled not applied.
func (r *resolver) fenced(i int, frev int64) {
	key := "the key"
	if r.t.batch() {
		key = r.t.plans[i].Key
	}
	r.note = fmt.Sprintf("%s was still at revision %d and was rewritten with its own value at revision %d so that the transaction can no longer apply", key, r.expect[i], frev)
	r.expect[i], r.state = frev, stateFenced
	r.fenceKey, r.fenceRev = r.t.plans[i].Key, frev
	if r.t.puts {
		r.sendAgain(r.note)
		return
	}
	r.notApplied(nil)
}

// sendAgain sends the transaction again against r.expect, while the caller
// waits and retries are left; why says what established that it may be.
func (r *resolver) sendAgain(why string) {
	if r.ctx.Err() != nil || r.retries >= resolveRetries {
		if r.state == stateFenced {
			r.notApplied(nil)
		} else {
			r.unknown(fmt.Sprintf("%s; a re-read shows the key still absent, but a create cannot be fenced off and may still land", r.lost))
		}
		return
	}
	r.retries++
	rev, err := r.t.send(r.rctx, r.expect)
	switch {
	case err == nil:
		r.applied(rev, fmt.Sprintf("%s; %s, and the write was sent again and succeeded", r.lost, why))
	case errors.Is(err, store.ErrConflict):
		// The re-read sorts out whether an attempt landed.
		r.state = stateSent
	case r.state == stateFenced && errors.Is(err, store.ErrLeaseNotFound):
		r.notApplied(&FenceError{Key: r.fenceKey, Revision: r.fenceRev, Err: fmt.Errorf("%s: %s; %s, and sent again it failed: %w; %s", r.t.what(), r.lost, why, err, r.t.nothing())})
	default:
		r.state = stateSent
		r.lastErr = err
		r.pause()
	}
}

// moved settles a transaction none of whose keys is where it compares: no
// send can apply any more. For a put, the keys' history says whether it
// was made; a delete cannot be told from another client's.
func (r *resolver) moved(kvs []*store.KeyValue) {
	t := r.t
	if !t.puts {
		for i := range kvs {
			if r.fenceLanded(i, kvs[i]) {
				return
			}
		}
		why := "the key gone, deleted by this delete or by another client"
		switch {
		case t.batch():
			why = "no key at the revision the transaction compares against: deleted by this transaction (and perhaps created again since), or changed by another client"
		case kvs[0] != nil:
			why = fmt.Sprintf("the key at revision %d: another client wrote it", kvs[0].ModRevision)
		}
		r.unknown(fmt.Sprintf("%s; a re-read shows %s", r.lost, why))
		return
	}
	var rev int64
	for i, p := range t.plans {
		made, err := writtenSince(r.rctx, r.rd, p)
		switch {
		case err != nil && errors.Is(err, store.ErrCompacted):
			r.unknown(fmt.Sprintf("%s; %s has changed since (now at revision %s) and its history is compacted: whether the write was made cannot be told", r.lost, p.Key, revString(currentRev(kvs[i]))))
			return
		case err != nil:
			r.lastErr = err
			r.pause()
			return
		case made != 0 && (rev == 0 || made == rev):
			rev = made
			continue
		}
		if !r.fenceLanded(i, kvs[i]) {
			r.notMade(i, kvs)
		}
		return
	}
	r.applied(rev, fmt.Sprintf("%s, but the key's history shows the new value written at revision %d; the key has changed since (now at %s)", r.lost, rev, revString(currentRev(kvs[0]))))
}

// fenceLanded reports whether key i, read as kv, holds what a fence sent
// to it whose answer was lost wrote: its value before the write, at a
// later revision. It then takes note of the fence.
func (r *resolver) fenceLanded(i int, kv *store.KeyValue) bool {
	p := r.t.plans[i]
	if !r.fenceSent[i] || kv == nil || p.Before == nil || !bytes.Equal(kv.Value, p.Before.KV.Value) {
		return false
	}
	r.fenced(i, kv.ModRevision)
	return true
}

// notMade settles a put whose key i moved on without the new value.
func (r *resolver) notMade(i int, kvs []*store.KeyValue) {
	p, kv := r.t.plans[i], kvs[i]
	switch {
	case r.t.batch():
		r.unknown(fmt.Sprintf("%s; a re-read shows %s holding another value or absent while others were created; a create cannot be fenced off and may still land", r.lost, p.Key))
	case p.Expect == 0:
		r.unknown(fmt.Sprintf("%s; the key was created meanwhile with another value (revision %d), and the create may still land if that is deleted", r.lost, currentRev(kv)))
	default:
		ce := &store.ConflictError{Key: p.Key, Expected: p.Expect, Current: currentRev(kv), CurrentValue: kv}
		r.notApplied(&ConflictError{Key: p.Key, Read: p.Expect, Current: currentRev(kv), Cause: ce})
	}
}

// applied settles the transaction applied at rev.
func (r *resolver) applied(rev int64, warning string) {
	r.state, r.rev, r.warnings = stateApplied, rev, []string{warning}
}

// notApplied settles the transaction not applied: err says why, or, when
// nil, the last fence does.
func (r *resolver) notApplied(err error) {
	if err == nil {
		nothing := r.t.nothing()
		if r.t.batch() && !r.t.puts {
			nothing = "nothing of it was deleted; run the same command again"
		}
		err = &FenceError{Key: r.fenceKey, Revision: r.fenceRev, Err: fmt.Errorf("%s: %s; %s: %s: %w", r.t.what(), r.lost, r.note, nothing, r.txnErr)}
	}
	r.state, r.err = stateNotApplied, err
}

// unknown settles the transaction's outcome unknown.
func (r *resolver) unknown(reason string) {
	e := r.t.uncertain(reason, r.txnErr)
	if r.fenceRev != 0 && r.fenceKey == e.Key {
		e.Fence = r.fenceRev
	}
	r.state, r.err = stateUnknown, e
}

// uncertain is the *UncertainError of t: reason says what is known, cause
// is the error that left the outcome open.
func (t *txn) uncertain(reason string, cause error) *UncertainError {
	p := t.plans[0]
	e := &UncertainError{Key: p.Key, Object: t.object(), Expect: p.Expect, Delete: !t.puts, Reason: reason, Cause: cause}
	if t.batch() {
		e.Keys = len(t.plans)
	}
	return e
}

// pause waits resolvePause between two attempts, or until the resolution's
// time is up.
func (r *resolver) pause() {
	t := time.NewTimer(resolvePause)
	defer t.Stop()
	select {
	case <-r.rctx.Done():
	case <-t.C:
	}
}

// currentRev is a read key's mod revision, 0 when it is absent.
func currentRev(kv *store.KeyValue) int64 {
	if kv == nil {
		return 0
	}
	return kv.ModRevision
}

// writtenSince returns the revision at which the key held p.NewStored
// after the plan's revision, or 0 if it never did.
func writtenSince(ctx context.Context, rd store.Reader, p *Plan) (int64, error) {
	var made int64
	info, err := rd.History(ctx, p.Key, func(ev store.Event) error {
		if !ev.Deleted && ev.KV.ModRevision > p.Expect && bytes.Equal(ev.KV.Value, p.NewStored) {
			made = ev.KV.ModRevision
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if made == 0 && info.CompactRevision > p.Expect {
		return 0, fmt.Errorf("history compacted past revision %d: %w", p.Expect, store.ErrCompacted)
	}
	return made, nil
}

// UncertainError reports a write whose transaction was sent and whose
// outcome could not be established: the key may hold the old value or the
// new one, and a transaction still in flight may yet apply. It matches
// ErrUncertain and its cause.
type UncertainError struct {
	// Key is the etcd key; Object names it as kubectl does. For a
	// transaction of several keys, Key is its first and Object names them
	// all.
	Key, Object string
	// Keys is the number of keys of a transaction of several, 0 for one.
	Keys int
	// Expect is the revision the write compared against (0: a create).
	Expect int64
	// Delete: the write was a compare-and-delete.
	Delete bool
	// Backup is the backup of the value before the write.
	Backup string
	// Reason says what is known.
	Reason string
	// Cause is the transaction's error.
	Cause error
	// AuditErr is why the audit log could not record the outcome, if it
	// could not.
	AuditErr error
	// Fence is the revision of the last fence resolve landed (0: none):
	// a retry sent after it compares on it, and may still apply.
	Fence int64
}

func (e *UncertainError) Error() string {
	verb, check := "write", fmt.Sprintf("check whether it holds the new value now (etcdpvc get) and compare it with the backup %s", e.Backup)
	switch {
	case e.Keys > 1:
		verb, check = "create", "check them with etcdpvc get, or run the same command again, which finds what is left"
		if e.Delete {
			verb = "delete"
		}
	case e.Delete:
		verb, check = "delete", fmt.Sprintf("check whether it still exists (etcdpvc get); the backup %s holds its value (etcdpvc restore puts it back)", e.Backup)
	case e.Expect == 0:
		check = fmt.Sprintf("check whether it exists now (etcdpvc get); the backup %s records the write", e.Backup)
	}
	msg := fmt.Sprintf("%s %s: %v: %s; %s", verb, e.Object, ErrUncertain, e.Reason, check)
	if e.AuditErr != nil {
		msg += fmt.Sprintf(" (the audit log could not record it: %v)", e.AuditErr)
	}
	return msg
}

// Unwrap returns ErrUncertain and the transaction's error.
func (e *UncertainError) Unwrap() []error { return []error{ErrUncertain, e.Cause} }

// FenceError reports a write whose transaction's answer was lost and
// which was fenced off: Key was rewritten with its own bytes at Revision,
// so that the transaction can no longer apply; nothing was written. The
// fence is recorded in audit.log (Record.Fence), so that a restore run
// again takes it for what it is, not for a change by someone else.
type FenceError struct {
	Key      string
	Revision int64
	Err      error
}

func (e *FenceError) Error() string { return e.Err.Error() }

// Unwrap returns the error that says what was established.
func (e *FenceError) Unwrap() error { return e.Err }
