package surgery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/store"
)

// ErrMembersDiffer means the members of the etcd cluster do not hold the
// same key: one of them diverged (restored from an old snapshot, a bad
// disk), and which answers depends on the member asked. Nothing is
// written.
var ErrMembersDiffer = errors.New("the etcd members do not hold the same key")

// MembersDifferError reports a key the members hold differently. It
// matches ErrMembersDiffer.
type MembersDifferError struct {
	Key string
	// Differ says how each member that is not of the majority differs;
	// Majority says what the majority holds ("" when there is none).
	Differ   []string
	Majority string
}

func (e *MembersDifferError) Error() string {
	maj := "no majority of the members agrees"
	if e.Majority != "" {
		maj = "the majority holds " + e.Majority
	}
	return fmt.Sprintf("%s: %v: %s, but %s; a write there is not the cluster's: nothing written", e.Key, ErrMembersDiffer, maj, strings.Join(e.Differ, "; "))
}

// Is reports whether target is ErrMembersDiffer.
func (e *MembersDifferError) Is(target error) bool { return target == ErrMembersDiffer }

// Hint says how to go on.
func (e *MembersDifferError) Hint() string {
	return "compare the members with etcdpvc diff --members and repair the one that diverged (the runbook diverged-member.md) before writing"
}

// Bounds of the members' checks: how long members that disagree are given
// to catch up before a write is refused, and how long a majority is given
// to apply a write made.
const (
	membersSettle   = 2 * time.Second
	membersApply    = 5 * time.Second
	membersInterval = 25 * time.Millisecond
)

// keyState says what a member holds at a key: its mod revision and the
// digest of its value, or that it is absent.
func keyState(kv *store.KeyValue) string {
	if kv == nil {
		return "nothing (absent)"
	}
	return fmt.Sprintf("revision %d (sha256 %.12s)", kv.ModRevision, digest(kv.Value))
}

// checkMembers compares p's key on every member of the cluster, each read
// alone (serializably), before p is written: members that disagree (after
// membersSettle for one that lags) refuse the write with a
// *MembersDifferError naming them. A store that cannot read members is
// not checked. Members that do not answer are named in the warnings; with
// fewer than a majority answering, the key cannot be compared, and the
// write is refused too (the cluster could not commit it).
func checkMembers(ctx context.Context, w store.Writer, key string) ([]string, error) {
	mr, ok := w.(store.MemberReader)
	if !ok {
		return nil, nil
	}
	deadline := time.Now().Add(membersSettle)
	for {
		mks, err := mr.MemberKeys(ctx, key, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: list the etcd members to compare the key on each: %w; nothing written", key, err)
		}
		if len(mks) < 2 {
			return nil, nil
		}
		groups := map[string][]string{}
		var warnings, silent []string
		for _, mk := range mks {
			if mk.Err != nil {
				silent = append(silent, mk.Member.Name)
				warnings = append(warnings, fmt.Sprintf("etcd member %s did not answer (%v): %s is compared on the others only", mk.Member.Name, mk.Err, key))
				continue
			}
			s := keyState(mk.KV)
			groups[s] = append(groups[s], mk.Member.Name)
		}
		answered := len(mks) - len(silent)
		if answered <= len(mks)/2 {
			return nil, fmt.Errorf("%s: only %d of %d etcd members answer (%s do not): the key cannot be compared on a majority: %w; nothing written (each member is reached at an address --endpoints gives for it, else at the client URL it advertises: give one for each member that answers from here)", key, answered, len(mks), strings.Join(silent, ", "), store.ErrUnavailable)
		}
		if len(groups) == 1 {
			return warnings, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, membersDiffer(key, groups, len(mks))
		}
		time.Sleep(membersInterval)
	}
}

// CheckMembers compares the key of every plan to be written on every
// member of the cluster, as each write does again right before its backup
// (checkMembers): a write command runs it before it asks for confirmation,
// so that an operator is refused before being asked, not after. It returns
// the first refusal, wrapped with its object's name; members that do not
// answer are not named here (the writes name them).
func CheckMembers(ctx context.Context, w store.Writer, plans []*Plan) error {
	for _, p := range plans {
		if p == nil || p.NoOp {
			continue
		}
		if _, err := checkMembers(ctx, w, p.Key); err != nil {
			return fmt.Errorf("%s: %w", p.ObjectName(), err)
		}
	}
	return nil
}

// membersDiffer is the error of key held as groups say (state → members)
// by members of a cluster of n.
func membersDiffer(key string, groups map[string][]string, n int) error {
	e := &MembersDifferError{Key: key}
	for s, names := range groups {
		if len(names) > n/2 {
			e.Majority = fmt.Sprintf("%s (%s)", s, strings.Join(names, ", "))
		}
	}
	for s, names := range groups {
		if e.Majority == "" || !strings.HasPrefix(e.Majority, s+" (") {
			e.Differ = append(e.Differ, fmt.Sprintf("member %s holds %s", strings.Join(names, ", "), s))
		}
	}
	return e
}

// majorityHolds waits (membersApply at most) until a majority of the
// cluster's members, each read alone at revision rev, hold every key of
// transaction t as it wrote it at rev: the new value at that revision, or
// for a delete the key absent (a member that has not reached rev yet is
// asked again). A store that cannot read members is not checked. It
// returns nil once they do, else an *UncertainError: a member answered
// "written", and the cluster does not show it.
func majorityHolds(ctx context.Context, w store.Writer, t *txn, rev int64) error {
	mr, ok := w.(store.MemberReader)
	if !ok {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	deadline := time.Now().Add(membersApply)
	for _, p := range t.plans {
		// Read at rev: what a member holds once it applied the write,
		// later writes of others aside.
		want := func(kv *store.KeyValue) bool {
			if p.Delete {
				return kv == nil
			}
			return kv != nil && kv.ModRevision == rev && string(kv.Value) == string(p.NewStored)
		}
		for {
			mks, err := mr.MemberKeys(ctx, p.Key, rev)
			if err != nil || len(mks) < 2 {
				return nil
			}
			var holds, others []string
			for _, mk := range mks {
				switch {
				case mk.Err != nil:
					others = append(others, fmt.Sprintf("%s did not answer at revision %d (%v)", mk.Member.Name, rev, mk.Err))
				case want(mk.KV):
					holds = append(holds, mk.Member.Name)
				default:
					others = append(others, fmt.Sprintf("%s holds %s", mk.Member.Name, keyState(mk.KV)))
				}
			}
			if len(holds) > len(mks)/2 {
				break
			}
			if time.Now().After(deadline) {
				return t.uncertain(fmt.Sprintf("etcd answered that the write was made at revision %d, but after %s only %d of %d members hold %s (%s): the member that answered does not hold what the cluster holds",
					rev, membersApply, len(holds), len(mks), p.Key, strings.Join(others, "; ")), ErrMembersDiffer)
			}
			time.Sleep(membersInterval)
		}
	}
	return nil
}

// readAny reads key at its latest revision through any member of the
// cluster that answers linearizably (store.MemberReader), else as rd.Get
// does: resolving a lost answer must not wait on the member that lost it.
func readAny(ctx context.Context, rd store.Reader, key string) (*store.KeyValue, error) {
	if mr, ok := rd.(store.MemberReader); ok {
		return mr.GetAny(ctx, key)
	}
	return rd.Get(ctx, key, 0)
}
