package inspect

import (
	"context"
	"fmt"

	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
)

// objectUID is the metadata.uid of an object's content ("" when none).
func objectUID(content map[string]any) string {
	md, _ := content["metadata"].(map[string]any)
	uid, _ := md["uid"].(string)
	return uid
}

// WALHistory reads every write of ref's key a write-ahead log holds, in
// log order, each with its raft index and term, its outcome (applied, not
// applied, unknown), its revision where the log establishes it, and what
// it changed. When the log was replayed over a db (wal.OpenWALOver),
// the db's revisions of the key the log's writes do not give are placed
// in revision order among those: first when older than all of them. A
// write not applied, or whose outcome is unknown, never shows a revision.
// Incarnations are separate: a create after a deletion is "created (new
// incarnation, uid UID)", and a write is never compared field by field
// with another object (another uid). A key the log never wrote (and the
// db does not hold) gives an error wrapping store.ErrNotFound that says
// what the log covers.
func WALHistory(ctx context.Context, w *wal.WAL, ref resource.Ref, o HistoryOptions) (*HistoryReport, error) {
	cov := w.Coverage()
	rep := &HistoryReport{Key: ref.Key, Log: &cov}
	var prev map[string]any
	var prevEnc string
	// Incarnations are separate: a row is compared only with the one
	// before of the same object. lastUID is the uid of the last object a
	// row wrote ("": none read); ended says that an applied deletion
	// came after the last applied write; earlier that a row before wrote
	// or deleted the key.
	var lastUID string
	ended, earlier := false, false
	// row fills a row's change label from kv; keep says whether the state
	// it reaches is the key's next state (applied or unknown writes).
	label := func(row *HistoryRow, kv store.KeyValue, deleted, keep bool) {
		settled := row.Index == 0 || row.Outcome == wal.OutcomeApplied.String()
		defer func() { earlier = earlier || keep }()
		if deleted {
			row.Change = "deleted"
			if keep {
				prev = nil
				ended = ended || settled
			}
			return
		}
		cur, err := o.Codec.Open(ctx, kv)
		if err != nil {
			row.Change = "undecodable: " + err.Error()
			row.Undecodable = true
			rep.Undecodable++
			if keep {
				prev, lastUID = nil, ""
			}
			return
		}
		enc := encLabel(cur)
		uid := objectUID(cur.Obj.Content)
		other := lastUID != "" && uid != "" && uid != lastUID
		version := kv.Version
		switch {
		case version == 1 && earlier && (other || ended):
			// A create after a deletion: a new incarnation.
			row.Change = "created (new incarnation, uid " + uid + ")"
		case other && prev != nil:
			// Never a field diff across two objects.
			row.Change = fmt.Sprintf("wrote another object: uid %s (was %s)", uid, lastUID)
		case other && version == 0:
			row.Change = "wrote the object (uid " + uid + ", another than " + lastUID + ")"
		case version == 0 && prev == nil:
			// Revision not established: say what it wrote.
			row.Change = "wrote the object"
		default:
			row.Change = changeLabel(version, prev, cur.Obj.Content, prevEnc, enc, o.ShowSecrets)
			row.Manager = rowManager(version, prev, cur.Obj.Content)
		}
		if keep {
			prev, prevEnc, lastUID = cur.Obj.Content, enc, uid
			if settled {
				ended = false
			}
		}
	}
	// The db's revisions first (those the log did not write: before it),
	// then the log's writes in order; labels follow that order.
	type pending struct {
		row           HistoryRow
		kv            store.KeyValue
		deleted, keep bool
	}
	var dbRows, logRows []pending
	fromLog := map[int64]bool{}
	var logStart int64 // the revision before the log, where the log establishes it
	if cov.DB != "" {
		info, err := w.History(ctx, ref.Key, func(ev store.Event) error {
			if ev.KV.ModRevision > cov.DBRevision || ev.KV.ModRevision == 0 {
				// The log's (0: a write it applied at a revision it does
				// not establish): listed from its entries below.
				return nil
			}
			row := HistoryRow{Revision: ev.KV.ModRevision, Version: ev.KV.Version, CreateRevision: ev.KV.CreateRevision, Lease: ev.KV.Lease, Deleted: ev.Deleted}
			if e, ok := w.EntryOfRevision(ev.KV.ModRevision); ok {
				// One of the log's entries the db holds made it (a
				// revoke's deletion, say): its row says which.
				user, err := w.User(e)
				if err != nil {
					return err
				}
				row.Index, row.Term, row.Outcome, row.EtcdUser = e.Index, e.Term, e.Outcome.String(), user
			}
			dbRows = append(dbRows, pending{row, ev.KV, ev.Deleted, true})
			return nil
		})
		if err != nil {
			return nil, err
		}
		rep.CompactRevision, logStart = info.CompactRevision, info.LogStart
	}
	err := w.KeyWrites(ctx, ref.Key, true, func(kw wal.KeyWrite) error {
		e := kw.Entry
		row := HistoryRow{Index: e.Index, Term: e.Term, Outcome: e.Outcome.String(), Reason: e.Reason, Deleted: kw.Event.Deleted}
		user, err := w.User(e)
		if err != nil {
			return err
		}
		row.EtcdUser = user
		established := e.Outcome == wal.OutcomeApplied && kw.Event.KV.ModRevision != 0
		if established {
			row.Revision, row.Version, row.CreateRevision, row.Lease = kw.Event.KV.ModRevision, kw.Event.KV.Version, kw.Event.KV.CreateRevision, kw.Event.KV.Lease
			fromLog[row.Revision] = true
		} else if e.Outcome == wal.OutcomeApplied {
			if row.Reason = e.Reason; row.Reason == "" {
				row.Reason = cov.RevisionsStop
			}
		}
		kv := kw.Event.KV
		if !established {
			kv.Version = 0
		}
		logRows = append(logRows, pending{row, kv, kw.Event.Deleted, e.Outcome != wal.OutcomeNotApplied})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The db's revisions go in revision order among the log's writes
	// whose revisions are established: a db revision before all of them
	// first (before the log), any other after the last one below it and
	// the writes without an established revision that follow it (one of
	// which may have made it).
	var before [][]pending // before[i]: the db's rows to place before logRows[i]
	before = make([][]pending, len(logRows)+1)
	for _, p := range dbRows {
		if fromLog[p.row.Revision] {
			continue
		}
		pos := -1
		for i, l := range logRows {
			if l.row.Revision != 0 && l.row.Revision < p.row.Revision {
				pos = i
			}
		}
		if pos < 0 {
			pos = 0
		} else {
			pos++
			for pos < len(logRows) && logRows[pos].row.Revision == 0 {
				pos++
			}
		}
		before[pos] = append(before[pos], p)
	}
	unplaced := false // a write of the log applied, or maybe, at a revision not established
	for _, l := range logRows {
		unplaced = unplaced || l.row.Revision == 0 && l.row.Outcome != wal.OutcomeNotApplied.String()
	}
	for i := range len(logRows) + 1 {
		for _, p := range before[i] {
			label(&p.row, p.kv, p.deleted, p.keep)
			rep.Rows = append(rep.Rows, p.row)
		}
		if i < len(logRows) {
			p := logRows[i]
			label(&p.row, p.kv, p.deleted, p.keep)
			rep.Rows = append(rep.Rows, p.row)
		}
	}
	if cov.DB != "" && len(rep.Rows) > 0 {
		if first := rep.Rows[0]; first.Revision != 0 {
			// (A write of the log whose revision is not established
			// names no revision the history starts at.)
			rep.CompactedStart = compactedStart(first, rep.CompactRevision)
			switch {
			case rep.CompactedStart != "" && unplaced:
				// Not the first event: a write of the log may be before it.
				rep.CompactedStart = fmt.Sprintf("the db was compacted at revision %d; the first event it holds is at revision %d, and the log's writes whose revisions it does not establish may be before it", rep.CompactRevision, first.Revision)
			case rep.CompactedStart != "" && logStart > 0:
				rep.CompactedStart += fmt.Sprintf("; the log starts after revision %d", logStart)
			}
		}
		if first := rep.Rows[0]; rep.CompactedStart == "" && first.Index != 0 && first.Version != 1 {
			rep.CompactedStart = fmt.Sprintf("the log starts at raft index %d and the db holds no revision of it before: its writes before the log are in neither", cov.FirstIndex)
		}
	}
	info, err := w.Info(ctx)
	if err != nil {
		return nil, err
	}
	rep.Revision = info.Revision
	if len(rep.Rows) == 0 {
		if u, ok := cov.UnnamedCovering(ref.Key); ok {
			return nil, fmt.Errorf("history of %s: %s, may have deleted it: it may have deleted %s, and the db compacted its deletions away; the log never writes it and the db does not hold it, so whether it existed is not established: %w",
				ObjectName(ref), unnamedEntry(u), unnamedWhat(u), wal.ErrUndetermined)
		}
		what := fmt.Sprintf("the log (raft entries %d to %d)", cov.FirstIndex, cov.LastIndex)
		if cov.DB != "" {
			what += " nor the db " + cov.DB
		}
		return nil, fmt.Errorf("history of %s: no write of it in %s: %w", ObjectName(ref), what, store.ErrNotFound)
	}
	return rep, nil
}

// UnknownOutcomes counts the rows of writes whose outcome is not
// established, and gives the first one's raft index.
func (r *HistoryReport) UnknownOutcomes() (n int, first uint64) {
	for _, row := range r.Rows {
		if row.Outcome == wal.OutcomeUnknown.String() {
			if n == 0 {
				first = row.Index
			}
			n++
		}
	}
	return n, first
}
