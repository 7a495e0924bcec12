package flows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/diskfree"
	"github.com/etcdpvc/etcdpvc/internal/textout"
	"github.com/etcdpvc/etcdpvc/store"
)

// ReclaimRequest is what `etcdpvc space --reclaim` asks.
type ReclaimRequest struct {
	SpaceRequest
	// Keep is how many recent revisions the compaction keeps (0: it
	// compacts at the current revision, as kube-apiserver's compactor).
	Keep int64
	// Yes carries the plan out without asking.
	Yes bool
	// WaitTimeout bounds the wait for a defragmented member to answer and
	// catch up with the leader (0: two minutes).
	WaitTimeout time.Duration
	// Local is the member whose data directory this node holds (from the
	// etcd manifest; nil: none known): its file system must have room
	// for the defragmented db before its defragmentation.
	Local *LocalMember
	// OnDefragment, when set, is told of each member as its
	// defragmentation starts (the order, for tests).
	OnDefragment func(m *inspect.SpaceMember)
}

// LocalMember is a member whose data directory is on this node.
type LocalMember struct {
	Name, DataDir string
}

// reclaim is one run of the plan: what is done so far, for the output and
// for an interruption.
type reclaim struct {
	w      io.Writer
	e      *store.Etcd
	r      ReclaimRequest
	done   []string
	before map[string]int64
	// rep is the diagnosis the plan is of.
	rep *inspect.SpaceReport
	// under names the member whose defragmentation is under way ("":
	// none).
	under string
	// unseen is true once the output said that members elsewhere are
	// not checked for room.
	unseen bool
}

// Reclaim carries out space's plan on live etcd, after one confirmation:
// it compacts at the current revision (less r.Keep); defragments the
// members that have pages to return, one at a time, followers first and
// the leader last, each after the one before answers again and has caught
// up with the leader; and disarms the NOSPACE alarms only when every
// member is under the quota less the margin. It prints each step as it is
// done and each member's size before and after. Interrupted (ctx), it
// stops between steps and says which were done; a defragmentation under
// way finishes in etcd on its own.
func (s *Session) Reclaim(ctx context.Context, t Terminal, w io.Writer, r ReclaimRequest, progress Progress) error {
	e, ok := etcdOf(s.Reader)
	if !ok {
		return &RefusedError{Msg: "space --reclaim compacts and defragments live etcd: a db file or a write-ahead log cannot be reclaimed; nothing written",
			Advice: "connect to etcd (--kubeadm, or --endpoints and the certificates); offline, `etcdutl defrag --data-dir` defragments a stopped member"}
	}
	if r.WaitTimeout <= 0 {
		r.WaitTimeout = 2 * time.Minute
	}
	rep, err := s.spaceReport(ctx, r.SpaceRequest, progress)
	if rep == nil {
		return err
	}
	if err := rep.Write(w, false); err != nil {
		return err
	}
	fmt.Fprintln(w)
	switch {
	case err != nil:
		return err
	case rep.Verdict == inspect.SpaceUnknown:
		return &RefusedError{Msg: "a member did not answer: a defragmentation of another could cost the quorum; nothing written",
			Advice: "bring the member back (etcdpvc doctor names it), then run space --reclaim again"}
	case rep.Verdict == inspect.SpaceUnder && len(rep.Plan) == 0:
		fmt.Fprintln(w, "nothing to do: every member is under the quota less the margin and no NOSPACE alarm is raised; nothing written")
		return nil
	}
	rc := &reclaim{w: w, e: e, r: r, rep: rep, before: map[string]int64{}}
	for _, m := range rep.Members {
		rc.before[m.Name] = m.DBSize
	}
	compactAt := rep.Revision - r.Keep
	q := fmt.Sprintf("compact at revision %d and defragment the members one at a time, the leader last", compactAt)
	if compactAt <= rep.CompactRevision {
		q = "defragment the members one at a time, the leader last"
	}
	if rep.Verdict == inspect.SpaceLiveOver {
		q += " (the live data is estimated over the quota less the margin: the NOSPACE alarm is disarmed only if every member gets under it after all)"
	}
	if !r.Yes {
		if err := t.Confirm(q+"?", "--yes carries the plan out without asking"); err != nil {
			return err
		}
	}
	if err := rc.compact(ctx, compactAt, rep.CompactRevision); err != nil {
		return rc.stopped(err)
	}
	if err := rc.defragment(ctx); err != nil {
		return rc.stopped(err)
	}
	return rc.disarm(ctx, rep.Target)
}

// compact compacts at rev unless etcd is compacted there already.
func (rc *reclaim) compact(ctx context.Context, rev, compacted int64) error {
	if rev <= compacted {
		fmt.Fprintf(rc.w, "compact: nothing to compact (compacted at %d, keeping %d revisions)\n", compacted, rc.r.Keep)
		return nil
	}
	fmt.Fprintf(rc.w, "compact: at revision %d…\n", rev)
	err := rc.e.Compact(ctx, rev)
	if errors.Is(err, store.ErrCompacted) {
		// Another compactor (kube-apiserver's) went past rev meanwhile.
		fmt.Fprintf(rc.w, "compact: etcd was compacted at or past revision %d meanwhile (kube-apiserver's compactor?)\n", rev)
		return nil
	}
	if err != nil {
		return err
	}
	rc.step(fmt.Sprintf("compacted at revision %d", rev))
	return nil
}

// defragment defragments each member with pages to return, one at a time,
// the leader last: the leader is read again before each, as it may move.
func (rc *reclaim) defragment(ctx context.Context) error {
	seen := map[string]bool{}
	for {
		members, err := spaceMembers(ctx, rc.e)
		if err != nil {
			return err
		}
		var next *inspect.SpaceMember
		for _, m := range members {
			if m.Error != "" {
				return fmt.Errorf("member %s did not answer before its turn: %s", m.Name, m.Error)
			}
		}
		for _, m := range inspect.DefragOrder(members) {
			if !seen[m.Name] {
				next = m
				break
			}
		}
		if next == nil {
			return nil
		}
		seen[next.Name] = true
		// The member has applied the compaction before its turn. Its
		// size in use may say nothing of the pages the compaction
		// freed (etcd counts them free only at its next write, and
		// NOSPACE refuses writes): SpaceReport.AfterDefragment.
		if err := rc.caughtUp(ctx, next); err != nil {
			return err
		}
		if !rc.rep.DefragmentHelps(next) && next.Free() < inspect.WorthDefragmenting(next.DBSize) {
			fmt.Fprintf(rc.w, "defragment %s (%s): skipped, %s of %s is free: a defragmentation would return little\n", next.Name, next.Role, inspect.HumanBytes(next.Free()), inspect.HumanBytes(next.DBSize))
			continue
		}
		if err := rc.room(next); err != nil {
			return err
		}
		if rc.r.OnDefragment != nil {
			rc.r.OnDefragment(next)
		}
		fmt.Fprintf(rc.w, "defragment %s (%s): %s, %s in use…\n", next.Name, next.Role, inspect.HumanBytes(next.DBSize), inspect.HumanBytes(next.DBSizeInUse))
		was := next.DBSize
		rc.under = next.Name
		if err := rc.e.Defragment(ctx, next.Endpoint); err != nil {
			return err
		}
		rc.under = ""
		if err := rc.caughtUp(ctx, next); err != nil {
			return err
		}
		rc.step(fmt.Sprintf("defragmented %s", next.Name))
		fmt.Fprintf(rc.w, "defragment %s: %s → %s, answering and caught up\n", next.Name, inspect.HumanBytes(was), inspect.HumanBytes(next.DBSize))
	}
}

// room checks, for the member whose data directory is on this node, that
// its file system has room for the db a defragmentation writes beside the
// old one: the size expected after it, and a fifth more for the estimate.
// A member on another node is not checked (its disk is not seen), and the
// output says so once.
func (rc *reclaim) room(m *inspect.SpaceMember) error {
	l := rc.r.Local
	if l == nil || l.Name != m.Name || l.DataDir == "" {
		if !rc.unseen {
			fmt.Fprintln(rc.w, "free disk: not checked for members whose data directory this node does not hold (--kubeadm names the local one)")
			rc.unseen = true
		}
		return nil
	}
	need := rc.rep.AfterDefragment(m)
	need += need / 5
	avail, err := diskfree.Available(l.DataDir)
	if err != nil {
		return fmt.Errorf("before the defragmentation of %s: %w", m.Name, err)
	}
	if avail < need {
		return fmt.Errorf("before the defragmentation of %s: %s free on %s, about %s needed for the defragmented db", m.Name, inspect.HumanBytes(avail), l.DataDir, inspect.HumanBytes(need))
	}
	fmt.Fprintf(rc.w, "free disk: %s on %s, about %s needed\n", inspect.HumanBytes(avail), l.DataDir, inspect.HumanBytes(need))
	return nil
}

// caughtUp waits until m answers and has applied every entry the leader
// had committed when m's defragmentation ended, and reads m's status into
// it.
func (rc *reclaim) caughtUp(ctx context.Context, m *inspect.SpaceMember) error {
	ctx, cancel := context.WithTimeout(ctx, rc.r.WaitTimeout)
	defer cancel()
	var committed uint64
	for {
		if committed == 0 {
			committed = rc.leaderCommitted(ctx)
		}
		memberStatus(ctx, rc.e, m)
		if m.Error == "" && committed != 0 && m.RaftAppliedIndex >= committed {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why := m.Error
				if why == "" {
					why = fmt.Sprintf("applied index %d, the leader's commit %d", m.RaftAppliedIndex, committed)
				}
				return fmt.Errorf("member %s did not catch up within %v after its defragmentation (%s)", m.Name, rc.r.WaitTimeout, why)
			}
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// leaderCommitted is the leader's raft index (0: no leader answered).
func (rc *reclaim) leaderCommitted(ctx context.Context) uint64 {
	members, err := spaceMembers(ctx, rc.e)
	if err != nil {
		return 0
	}
	for _, m := range members {
		if m.Role == inspect.RoleLeader {
			return m.RaftIndex
		}
	}
	return 0
}

// disarm disarms the NOSPACE alarms when every member is under target,
// and prints each member's size before and after.
func (rc *reclaim) disarm(ctx context.Context, target int64) error {
	members, err := spaceMembers(ctx, rc.e)
	if err != nil {
		return rc.stopped(err)
	}
	var over []string
	var alarmed []*inspect.SpaceMember
	for _, m := range members {
		switch {
		case m.Error != "":
			over = append(over, fmt.Sprintf("%s (did not answer: %s)", m.Name, m.Error))
		case m.DBSize > target:
			over = append(over, fmt.Sprintf("%s (%s)", m.Name, inspect.HumanBytes(m.DBSize)))
		}
		for _, a := range m.Alarms {
			if a == "NOSPACE" {
				alarmed = append(alarmed, m)
			}
		}
	}
	if err := rc.sizes(members); err != nil {
		return err
	}
	if len(over) > 0 {
		if len(alarmed) == 0 {
			fmt.Fprintf(rc.w, "still over %s: %s\n", inspect.HumanBytes(target), strings.Join(over, ", "))
			return nil
		}
		return &RefusedError{Msg: fmt.Sprintf("NOSPACE alarm not disarmed: %s over %s (the quota less the margin); done: %s", strings.Join(over, ", "), inspect.HumanBytes(target), rc.doneWords()),
			Advice: "the live data fills the quota: delete what `etcdpvc space` lists as the largest, then run space --reclaim again"}
	}
	if rc.rep.Verdict == inspect.SpaceLiveOver && len(alarmed) > 0 {
		fmt.Fprintf(rc.w, "every member is under %s after all: the plan's estimate of the live data (about %s) was high (AFTER above is what each member holds now)\n",
			inspect.HumanBytes(target), inspect.HumanBytes(rc.rep.Live.Estimate))
	}
	for _, m := range alarmed {
		id, err := parseMemberID(m.ID)
		if err == nil {
			err = rc.e.DisarmNoSpace(ctx, id)
		}
		if err != nil {
			return rc.stopped(err)
		}
		rc.step("disarmed the NOSPACE alarm of " + m.Name)
		fmt.Fprintf(rc.w, "disarm: the NOSPACE alarm of %s\n", m.Name)
	}
	fmt.Fprintf(rc.w, "done: %s\n", rc.doneWords())
	return nil
}

// sizes prints each member's size before the plan and now.
func (rc *reclaim) sizes(members []*inspect.SpaceMember) error {
	fmt.Fprintln(rc.w)
	var rows [][]string
	for _, m := range members {
		now, alarms := "?", strings.Join(m.Alarms, ",")
		if m.Error == "" {
			now = inspect.HumanBytes(m.DBSize)
		}
		if alarms == "" {
			alarms = "-"
		}
		rows = append(rows, []string{m.Name, inspect.HumanBytes(rc.before[m.Name]), now, alarms})
	}
	return textout.NewTable(rc.w, "MEMBER", "BEFORE", "AFTER", "ALARMS").Rows(rows)
}

// step records a step done.
func (rc *reclaim) step(what string) { rc.done = append(rc.done, what) }

// doneWords lists the steps done.
func (rc *reclaim) doneWords() string {
	if len(rc.done) == 0 {
		return "nothing"
	}
	return strings.Join(rc.done, "; ")
}

// stopped is the error of a run stopped by err (an interruption, a member
// that did not answer): it says which steps were done. What was done
// leaves a working cluster: a compaction and a defragmentation each
// complete or do not happen, and no alarm was disarmed.
func (rc *reclaim) stopped(err error) error {
	msg := fmt.Sprintf("space --reclaim stopped: %v; done: %s; the NOSPACE alarm, if raised, is still raised", err, rc.doneWords())
	if errors.Is(err, context.Canceled) {
		msg = fmt.Sprintf("space --reclaim interrupted; done: %s; the NOSPACE alarm, if raised, is still raised", rc.doneWords())
	}
	if rc.under != "" {
		msg += fmt.Sprintf("; the defragmentation of %s had been asked for: if etcd began it, it finishes it on its own", rc.under)
	}
	return &hintedError{&incompleteError{msg: msg}, "run `etcdpvc space` to see where each member stands, then space --reclaim again"}
}

// parseMemberID parses a member ID in hex.
func parseMemberID(s string) (uint64, error) {
	var id uint64
	_, err := fmt.Sscanf(s, "%x", &id)
	return id, err
}
