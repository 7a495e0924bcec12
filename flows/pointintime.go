package flows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/textout"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
)

// PointInTimeRequest is what `snapshot` writes: the point (one of Index,
// BeforeRevision, BeforeDelete, BeforeTime) and the file.
type PointInTimeRequest struct {
	// Index is a raft index; BeforeRevision the point just before the
	// entry that made that revision; BeforeDelete just before the first
	// entry after the db's that deletes that key (or a key under it, when
	// it ends in "/").
	Index          uint64
	BeforeRevision int64
	BeforeDelete   string
	// BeforeTime is the point at the last entry the log's times place
	// certainly before it (clock.Clock.LastBefore).
	BeforeTime time.Time
	// Out is the snapshot file to write; DryRun writes nothing.
	Out    string
	DryRun bool
	JSON   bool
}

// PointInTimeReport is what a point-in-time snapshot holds (and, with
// --wal-base, what restoring it would change in the current db).
type PointInTimeReport struct {
	Index         uint64         `json:"index"`
	Term          uint64         `json:"term"`
	Revision      int64          `json:"revision"`
	Base          string         `json:"base"`
	BaseIndex     uint64         `json:"baseIndex"`
	BaseRevision  int64          `json:"baseRevision"`
	Entries       int            `json:"entries"`
	Changes       int            `json:"keyChanges"`
	Compaction    int64          `json:"compactRevision,omitempty"`
	LeasesGranted int            `json:"leasesGranted"`
	LeasesRevoked int            `json:"leasesRevoked"`
	Kept          map[string]int `json:"keptAsTheBaseHoldsThem,omitempty"`
	Notes         []string       `json:"notes,omitempty"`
	Why           string         `json:"why,omitempty"`
	// Time, for a point asked for by a time, is how it was chosen.
	Time            *PointInTimeTime `json:"time,omitempty"`
	Current         string           `json:"current,omitempty"`
	CurrentRevision int64            `json:"currentRevision,omitempty"`
	// Resources counts, per resource, the objects at the point, what the
	// log's entries changed since the base, and (with Current) what a
	// restore would bring back, undo or remove.
	Resources []PointInTimeResource     `json:"resources"`
	Written   *store.PointInTimeWritten `json:"written,omitempty"`
}

// PointInTimeResource is one resource's line of the report.
type PointInTimeResource struct {
	Resource string `json:"resource"`
	Objects  int    `json:"objects"`
	Created  int    `json:"createdSinceBase"`
	Updated  int    `json:"updatedSinceBase"`
	Deleted  int    `json:"deletedSinceBase"`
	// Back: live at the point, deleted in the current db; Undone: changed
	// since; Lost: created since (a restore removes them).
	Back   int `json:"wouldComeBack,omitempty"`
	Undone int `json:"wouldBeUndone,omitempty"`
	Lost   int `json:"wouldBeRemoved,omitempty"`
}

// errNoPoint means `snapshot` was not told which point to write, or
// told more than one.
var errNoPoint = errors.New("snapshot writes the keyspace at one point: give --index N, --before-revision R, --before-delete KEY or --before-time TIME")

// PointInTime writes (or, dry, describes) the etcd snapshot of the
// keyspace at a raft index: the session's --db (or --wal-base) replayed
// exactly with the log's entries up to it (wal.PointInTime,
// store.WritePointInTime). It is refused where the log does not establish
// every entry up to the point.
func (s *Session) PointInTime(ctx context.Context, w io.Writer, r PointInTimeRequest) error {
	if s.WAL == nil || s.Bolt == nil {
		return usageError("etcdpvc --db OLD.db --wal DIR snapshot --index N --out PIT.db", "snapshot replays a member's write-ahead log over an older snapshot of the cluster: give the snapshot with --db and the log with --wal")
	}
	n := 0
	for _, set := range []bool{r.Index != 0, r.BeforeRevision != 0, r.BeforeDelete != "", !r.BeforeTime.IsZero()} {
		if set {
			n++
		}
	}
	if n != 1 {
		return usageError("`etcdpvc --wal DIR --db OLD.db history …` or `ls --deleted` finds the point", "%v", errNoPoint)
	}
	if !r.DryRun && r.Out == "" {
		return usageError("", "snapshot writes a new file: give --out PIT.db (or --dry-run to see what it would hold)")
	}
	if r.Out != "" {
		for _, in := range []string{s.Bolt.Path(), s.Options.DB} {
			if same, _ := sameFile(in, r.Out); in != "" && (same || filepath.Clean(in) == filepath.Clean(r.Out)) {
				return usageError("", "--out %s is an input: snapshot never writes its inputs", r.Out)
			}
		}
	}
	index, why := r.Index, ""
	var pt *PointInTimeTime
	var timeNotes []string
	switch {
	case !r.BeforeTime.IsZero():
		i, t, notes, err := s.indexBeforeTime(ctx, r.BeforeTime, s.WAL.Coverage().ConsistentIndex)
		if err != nil {
			return err
		}
		index, why, pt, timeNotes = i, t.why(i), t, notes
	case r.BeforeRevision != 0:
		i, err := s.WAL.IndexBeforeRevision(r.BeforeRevision)
		if err != nil {
			return err
		}
		index, why = i, fmt.Sprintf("just before revision %d", r.BeforeRevision)
	case r.BeforeDelete != "":
		if !strings.HasPrefix(r.BeforeDelete, s.Options.Prefix+"/") {
			return usageError("an etcd key such as "+s.Options.Prefix+"/configmaps/NAMESPACE/NAME, or a prefix ending in /", "--before-delete %s: not a key under --prefix %s", r.BeforeDelete, s.Options.Prefix)
		}
		i, e, err := s.WAL.IndexBeforeDelete(r.BeforeDelete)
		if err != nil {
			return err
		}
		if e.Outcome == wal.OutcomeApplied {
			why = fmt.Sprintf("just before entry %d, revision %d, which deletes %s", e.Index, e.Revision, r.BeforeDelete)
		} else {
			why = fmt.Sprintf("just before entry %d, which would delete %s (its outcome is not established: %s)", e.Index, r.BeforeDelete, e.Reason)
		}
		index = i
	}
	p, err := s.WAL.PointInTime(ctx, index)
	if errors.Is(err, wal.ErrUndetermined) {
		return WithHint(err, "a point needs every entry from the older snapshot's consistent index up to it established: choose an earlier point (history and ls --deleted say what the log establishes), or give another member's log too (--wal repeats)")
	}
	if err != nil {
		return err
	}
	rep := &PointInTimeReport{Index: p.Index, Term: p.Term, Revision: p.Revision, Base: p.Base, BaseIndex: p.BaseIndex, BaseRevision: p.BaseRevision,
		Entries: p.Entries, Changes: p.Changes, Compaction: p.Compaction, Kept: p.Kept, Why: why, Time: pt}
	for _, l := range p.Leases {
		if l.AskedTTL != 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("lease %x (entry %d) was granted a TTL of %d s: stored as %d s, etcd's minimum with its default election timeout", l.ID, l.Index, l.AskedTTL, l.TTL))
		}
		switch {
		case l.Revoke:
			rep.LeasesRevoked++
		case !l.Checkpoint:
			rep.LeasesGranted++
		}
	}
	rep.Notes = append(rep.Notes, timeNotes...)
	if err := s.pointInTimeResources(ctx, p, rep); err != nil {
		return err
	}
	if !r.DryRun {
		written, err := store.WritePointInTime(ctx, s.Bolt, r.Out, p.Snapshot(), s.Options.BoltOptions(ctx))
		if err != nil {
			return err
		}
		rep.Written = written
		if err := checkPointInTime(written.Path, p, s.Options.BoltOptions(ctx)); err != nil {
			return err
		}
	}
	if r.JSON {
		return inspect.WriteDocument(w, "json", rep)
	}
	return writePointInTimeReport(w, rep, r.DryRun)
}

// checkPointInTime opens the snapshot written (its trailer checked) and
// checks it is at the point: its consistent index, term and revision.
func checkPointInTime(path string, p *wal.PointInTime, opts store.BoltOptions) error {
	b, err := store.OpenBolt(path, opts)
	if err != nil {
		return fmt.Errorf("check the snapshot written: %w", err)
	}
	defer b.Close()
	m := b.Meta()
	if m.ConsistentIndex != p.Index || m.Term != p.Term && p.Term != 0 || m.Revision != p.Revision {
		return fmt.Errorf("check the snapshot written: %s is at consistent index %d, term %d, revision %d; want %d, %d, %d", path, m.ConsistentIndex, m.Term, m.Revision, p.Index, p.Term, p.Revision)
	}
	return nil
}

// pointInTimeResources counts the report's resources: the objects live
// at the point, the changes since the base, and, with --wal-base (the
// current db in --db), what a restore would change in it.
func (s *Session) pointInTimeResources(ctx context.Context, p *wal.PointInTime, rep *PointInTimeReport) error {
	prefix := s.Options.Prefix
	rows := map[string]*PointInTimeResource{}
	row := func(key string) *PointInTimeResource {
		name := "(other keys)"
		if r, _, _, ok := resource.ParseKey(prefix, key); ok {
			name = r.String()
		}
		x := rows[name]
		if x == nil {
			x = &PointInTimeResource{Resource: name}
			rows[name] = x
		}
		return x
	}
	at := map[string]int64{} // live at the point: mod revision (with a current db only)
	withCurrent := s.Options.WALBase != "" && s.Options.DB != ""
	if err := p.Live(func(kv store.KeyValue) error {
		row(kv.Key).Objects++
		if withCurrent {
			at[kv.Key] = kv.ModRevision
		}
		return nil
	}); err != nil {
		return err
	}
	for _, c := range p.Changed() {
		switch {
		case c.Before == nil && c.After != nil:
			row(c.Key).Created++
		case c.Before != nil && c.After == nil:
			row(c.Key).Deleted++
		case c.Before != nil && c.After != nil:
			row(c.Key).Updated++
		}
	}
	if withCurrent {
		cur, err := store.OpenBolt(s.Options.DB, s.Options.BoltOptions(ctx))
		if err != nil {
			return fmt.Errorf("read the current db %s: %w", s.Options.DB, err)
		}
		defer cur.Close()
		rep.Current, rep.CurrentRevision = s.Options.DB, cur.Meta().Revision
		err = cur.WalkLatest(ctx, nil, func(kv *store.KeyValue, deleteRev int64) error {
			if deleteRev != 0 {
				return nil
			}
			mod, ok := at[kv.Key]
			switch {
			case !ok:
				row(kv.Key).Lost++
			case mod != kv.ModRevision:
				row(kv.Key).Undone++
			}
			delete(at, kv.Key)
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the current db %s: %w", s.Options.DB, err)
		}
		for k := range at {
			row(k).Back++
		}
	}
	for _, x := range rows {
		rep.Resources = append(rep.Resources, *x)
	}
	sort.Slice(rep.Resources, func(i, j int) bool { return rep.Resources[i].Resource < rep.Resources[j].Resource })
	return nil
}

// keptWords says what each kind of PointInTimeReport.Kept changes.
var keptWords = map[string]string{
	"membership":       "membership changes (members, as the db holds them)",
	"memberAttributes": "member attribute or cluster version changes (members and cluster, as the db holds them)",
	"auth":             "user and role changes (auth, as the db holds them)",
	"alarm":            "alarm changes (alarm, as the db holds it)",
}

// writePointInTimeReport writes the report as text.
func writePointInTimeReport(w io.Writer, rep *PointInTimeReport, dry bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "point in time: raft index %d (term %d), revision %d", rep.Index, rep.Term, rep.Revision)
	if rep.Why != "" {
		fmt.Fprintf(&b, ", %s", rep.Why)
	}
	fmt.Fprintf(&b, "\n  from %s (consistent index %d, revision %d) and the log's entries %d to %d: %s, %s\n",
		rep.Base, rep.BaseIndex, rep.BaseRevision, rep.BaseIndex+1, rep.Index, inspect.Count(rep.Entries, "entry", "entries"), inspect.Count(rep.Changes, "key change", "key changes"))
	if rep.Index == rep.BaseIndex {
		fmt.Fprintf(&b, "  (the point is the db's own: the snapshot holds its keyspace as it is)\n")
	}
	if rep.Compaction > 0 {
		fmt.Fprintf(&b, "  compacted at revision %d\n", rep.Compaction)
	}
	fmt.Fprintf(&b, "  leases: %d granted, %d revoked by those entries\n", rep.LeasesGranted, rep.LeasesRevoked)
	for _, k := range slices.Sorted(maps.Keys(rep.Kept)) {
		fmt.Fprintf(&b, "  kept as %s holds them: %d %s\n", rep.Base, rep.Kept[k], keptWords[k])
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if _, err := io.WriteString(w, b.String()+"\n"); err != nil {
		return err
	}
	head := []string{"RESOURCE", "OBJECTS", "CREATED", "UPDATED", "DELETED"}
	if rep.Current != "" {
		head = append(head, "BACK", "UNDONE", "REMOVED")
	}
	tb := textout.NewTable(w, head...)
	for _, r := range rep.Resources {
		cells := []string{r.Resource, fmt.Sprint(r.Objects), fmt.Sprint(r.Created), fmt.Sprint(r.Updated), fmt.Sprint(r.Deleted)}
		if rep.Current != "" {
			cells = append(cells, fmt.Sprint(r.Back), fmt.Sprint(r.Undone), fmt.Sprint(r.Lost))
		}
		if err := tb.Row(cells...); err != nil {
			return err
		}
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	var t strings.Builder
	fmt.Fprintf(&t, "\nOBJECTS: live at the point; CREATED, UPDATED, DELETED: by the log's entries since %s", rep.Base)
	if rep.Current != "" {
		fmt.Fprintf(&t, ";\nBACK, UNDONE, REMOVED: what restoring it does to the current db %s (revision %d): objects deleted since that\ncome back, objects changed since that go back to the point, objects created since that are removed", rep.Current, rep.CurrentRevision)
	}
	t.WriteString(".\n")
	if dry {
		t.WriteString("dry run: nothing written\n")
	} else if wr := rep.Written; wr != nil {
		fmt.Fprintf(&t, "snapshot: %s (revision %d, sha256 %s, trailer %s, %d bytes; %s added, %d removed by the compaction, %s)\n",
			wr.Path, wr.Revision, wr.FileSHA256, wr.TrailerSHA256, wr.Size, inspect.Count(wr.Added, "revision", "revisions"), wr.Compacted, inspect.Count(wr.Leases, "lease", "leases"))
		if wr.CheckpointsSkipped > 0 {
			fmt.Fprintf(&t, "  %d lease checkpoints not stored: etcd persists them from cluster version 3.6 on\n", wr.CheckpointsSkipped)
		}
		t.WriteString(snapshotRunbook(wr.Path, "docs/runbooks/point-in-time.md"))
	}
	_, err := io.WriteString(w, t.String())
	return err
}
