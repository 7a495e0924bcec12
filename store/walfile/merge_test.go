package walfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// testLog writes a member's log with etcd's wal package.
type testLog struct {
	t   *testing.T
	dir string
	w   *wal.WAL
}

func newTestLog(t *testing.T, member, cluster uint64) *testLog {
	t.Helper()
	md, err := proto.Marshal(&pb.Metadata{NodeID: &member, ClusterID: &cluster})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "wal")
	w, err := wal.Create(zap.NewNop(), dir, md)
	if err != nil {
		t.Fatal(err)
	}
	return &testLog{t: t, dir: dir, w: w}
}

// purged starts the log after a raft snapshot at index (as a member's
// log is once etcd purged the segments before it).
func (l *testLog) purged(index, term uint64) *testLog {
	l.t.Helper()
	if err := l.w.SaveSnapshot(&walpb.Snapshot{Index: &index, Term: &term, ConfState: &raftpb.ConfState{}}); err != nil {
		l.t.Fatal(err)
	}
	return l
}

// save writes entries and then a hard state with commit.
func (l *testLog) save(commit, term uint64, ents ...*raftpb.Entry) *testLog {
	l.t.Helper()
	if err := l.w.Save(&raftpb.HardState{Term: &term, Vote: new(uint64), Commit: &commit}, ents); err != nil {
		l.t.Fatal(err)
	}
	return l
}

func (l *testLog) close() string {
	l.t.Helper()
	if err := l.w.Close(); err != nil {
		l.t.Fatal(err)
	}
	return l.dir
}

// put is the entry (index, term) of a put of value.
func put(index, term uint64, value string) *raftpb.Entry {
	data, err := proto.Marshal(&pb.InternalRaftRequest{ID: index, Put: &pb.PutRequest{Key: []byte("/registry/configmaps/demo/c"), Value: []byte(value)}})
	if err != nil {
		panic(err)
	}
	typ := raftpb.EntryType_EntryNormal
	return &raftpb.Entry{Index: &index, Term: &term, Type: &typ, Data: data}
}

// puts are the entries from to to of term, each carrying its index and
// term as value.
func puts(from, to, term uint64) []*raftpb.Entry {
	var out []*raftpb.Entry
	for i := from; i <= to; i++ {
		out = append(out, put(i, term, fmt.Sprintf("v%d-t%d", i, term)))
	}
	return out
}

// scanned is what a Scan yields, in order: the records' types, the entries
// with their values, the commit of the state record.
type scanned struct {
	types   []int64
	entries []string // "index/term=value"
	commit  uint64
	cluster uint64
	pos     []Pos
	tail    *Tail
}

func scanAll(t *testing.T, l *Log) scanned {
	t.Helper()
	var s scanned
	tail, err := l.Scan(func(rec *walpb.Record, pos Pos) error {
		s.types = append(s.types, rec.GetType())
		switch rec.GetType() {
		case MetadataType:
			var md pb.Metadata
			if err := proto.Unmarshal(rec.GetData(), &md); err != nil {
				return err
			}
			s.cluster = md.GetClusterID()
		case StateType:
			hs, err := DecodeState(rec.GetData())
			if err != nil {
				return err
			}
			s.commit = hs.GetCommit()
		case EntryType:
			e, err := DecodeEntry(rec.GetData())
			if err != nil {
				return err
			}
			s.entries = append(s.entries, fmt.Sprintf("%d/%d=%s", e.Index, e.Term, e.Request.Put.Value))
			s.pos = append(s.pos, pos)
			// The position reads the same record again.
			again, err := l.ReadRecord(pos)
			if err != nil {
				return fmt.Errorf("read entry %d again: %w", e.Index, err)
			}
			if !bytes.Equal(again.GetData(), rec.GetData()) {
				return fmt.Errorf("entry %d read again differs", e.Index)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// ReadRecord keeps the segments it opened open until Close; the log
	// reads again after it.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(s.pos) > 0 {
		if _, err := l.ReadRecord(s.pos[0]); err != nil {
			t.Fatalf("read again after Close: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s.tail = tail
	return s
}

func want(ents ...[]*raftpb.Entry) []string {
	var out []string
	for _, es := range ents {
		for _, e := range es {
			d, err := DecodeEntry(mustMarshal(e))
			if err != nil {
				panic(err)
			}
			out = append(out, fmt.Sprintf("%d/%d=%s", e.GetIndex(), e.GetTerm(), d.Request.Put.Value))
		}
	}
	return out
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// checkStream: a merged scan is a stream a replay reads as one member's
// log: one metadata record, one state record, then entries.
func checkStream(t *testing.T, s scanned) {
	t.Helper()
	if len(s.types) < 2 || s.types[0] != MetadataType || s.types[1] != StateType {
		t.Fatalf("the stream starts with %v, want a metadata and a state record", s.types[:min(2, len(s.types))])
	}
	for i, typ := range s.types[2:] {
		if typ != EntryType {
			t.Fatalf("record %d of the stream is of type %d, want entries only after the state", i+2, typ)
		}
	}
}

// TestMergedSpans: three logs with overlapping spans, purged at different
// indexes (and one ending early, as a lagging member's), merge into the
// whole span, each index once, with the highest commit index.
func TestMergedSpans(t *testing.T) {
	const cluster = 0xc1
	a := newTestLog(t, 1, cluster).save(11, 1, puts(1, 12, 1)...).close()
	b := newTestLog(t, 2, cluster).purged(7, 1).save(24, 2, append(puts(8, 12, 1), puts(13, 25, 2)...)...).close()
	c := newTestLog(t, 3, cluster).purged(19, 2).save(30, 2, puts(20, 30, 2)...).close()
	l, err := OpenMerged([]string{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	if l.Dir != strings.Join([]string{a, b, c}, ", ") {
		t.Errorf("Dir %q", l.Dir)
	}
	if len(l.Segments) != 3 || l.Segments[0].Dir != a || l.Segments[1].Dir != b || l.Segments[2].Dir != c {
		t.Errorf("segments %+v: want each log's, with its directory", l.Segments)
	}
	s := scanAll(t, l)
	checkStream(t, s)
	if got, w := s.entries, want(puts(1, 12, 1), puts(13, 30, 2)); !slicesEqual(got, w) {
		t.Errorf("entries:\n got %v\nwant %v", got, w)
	}
	if s.commit != 30 || s.cluster != cluster || s.tail != nil {
		t.Errorf("commit %d, cluster %x, tail %v", s.commit, s.cluster, s.tail)
	}
	// Scan can run again, with the same result.
	if again := scanAll(t, l); !slicesEqual(again.entries, s.entries) {
		t.Errorf("a second scan differs: %v", again.entries)
	}

	// A gap no log holds stays a gap.
	d := newTestLog(t, 3, cluster).purged(14, 2).save(30, 2, puts(15, 30, 2)...).close()
	l, err = OpenMerged([]string{a, d})
	if err != nil {
		t.Fatal(err)
	}
	s = scanAll(t, l)
	if got, w := s.entries, want(puts(1, 12, 1), puts(15, 30, 2)); !slicesEqual(got, w) {
		t.Errorf("with a gap:\n got %v\nwant %v", got, w)
	}
}

func slicesEqual(a, b []string) bool {
	return strings.Join(a, " ") == strings.Join(b, " ")
}

// TestMergedRealLogs merges copies of a real etcd's multi-segment log, one
// purged of its first segments and one without its last ones: the merge
// is the whole log, entry for entry.
func TestMergedRealLogs(t *testing.T) {
	dir := makeLog(t, 300)
	whole, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Segments) < 5 {
		t.Fatalf("want several segments, got %d", len(whole.Segments))
	}
	var full []string
	fullTypes := map[int64]int{}
	if _, err := whole.Scan(func(rec *walpb.Record, _ Pos) error {
		fullTypes[rec.GetType()]++
		if rec.GetType() == EntryType {
			full = append(full, fmt.Sprintf("%x", rec.GetData()))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	n := len(whole.Segments)
	early := copyFiles(t, dir) // lost its last segments: ends early
	for _, s := range whole.Segments[n-2:] {
		os.Remove(filepath.Join(early, s.Name))
	}
	purged := copyFiles(t, dir) // purged its first segments
	for _, s := range whole.Segments[:n-3] {
		os.Remove(filepath.Join(purged, s.Name))
	}
	for _, dirs := range [][]string{{early, purged}, {purged, early}} {
		l, err := OpenMerged(dirs)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		types := map[int64]int{}
		if _, err := l.Scan(func(rec *walpb.Record, _ Pos) error {
			types[rec.GetType()]++
			if rec.GetType() == EntryType {
				got = append(got, fmt.Sprintf("%x", rec.GetData()))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if types[MetadataType] != 1 || types[StateType] != 1 {
			t.Errorf("%d metadata and %d state records, want one each", types[MetadataType], types[StateType])
		}
		if !slicesEqual(got, full) {
			t.Errorf("merged %v: %d entries, want the log's %d", dirs, len(got), len(full))
		}
	}
}

// TestMergedSameEntryDiffers: one index and term with different data in
// two logs is an error naming both files and the index.
func TestMergedSameEntryDiffers(t *testing.T) {
	a := newTestLog(t, 1, 7).save(10, 1, puts(1, 10, 1)...).close()
	ents := puts(1, 10, 1)
	ents[8] = put(9, 1, "something else")
	b := newTestLog(t, 2, 7).save(10, 1, ents...).close()
	_, err := OpenMerged([]string{a, b})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "raft entry 9 (term 1)") ||
		!strings.Contains(err.Error(), filepath.Join(a, "0000000000000000-0000000000000000.wal")) ||
		!strings.Contains(err.Error(), filepath.Join(b, "0000000000000000-0000000000000000.wal")) {
		t.Errorf("got %v", err)
	}
}

// TestMergedOtherCluster: logs of two clusters are not merged.
func TestMergedOtherCluster(t *testing.T) {
	a := newTestLog(t, 1, 0xaa).save(3, 1, puts(1, 3, 1)...).close()
	b := newTestLog(t, 1, 0xbb).save(3, 1, puts(1, 3, 1)...).close()
	_, err := OpenMerged([]string{a, b})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), a+" is cluster aa's") || !strings.Contains(err.Error(), b+" cluster bb's") {
		t.Errorf("got %v", err)
	}
}

// TestMergedOverwritten: a log holding an entry a new leader overwrote
// (a lower term, past that log's commit) yields the other log's entry;
// its own later entries, from the history that lost, are not taken.
func TestMergedOverwritten(t *testing.T) {
	// a was the old leader: entries 8 to 10 of term 1 were never committed.
	a := newTestLog(t, 1, 7).save(7, 1, puts(1, 10, 1)...).close()
	for _, tc := range []struct {
		name     string
		bCommit  uint64
		dirOrder string
	}{
		{"the other log records them committed", 9, "ab"},
		{"the other log records them committed", 9, "ba"},
		{"no log records them committed: the most up-to-date log's", 7, "ab"},
		{"no log records them committed: the most up-to-date log's", 7, "ba"},
	} {
		t.Run(fmt.Sprintf("%s, %s", tc.name, tc.dirOrder), func(t *testing.T) {
			b := newTestLog(t, 2, 7).save(tc.bCommit, 2, append(puts(1, 7, 1), puts(8, 9, 2)...)...).close()
			dirs := []string{a, b}
			if tc.dirOrder == "ba" {
				dirs = []string{b, a}
			}
			l, err := OpenMerged(dirs)
			if err != nil {
				t.Fatal(err)
			}
			s := scanAll(t, l)
			checkStream(t, s)
			// a's entry 10 follows its overwritten 9: not the cluster's.
			if got, w := s.entries, want(puts(1, 7, 1), puts(8, 9, 2)); !slicesEqual(got, w) {
				t.Errorf("entries:\n got %v\nwant %v", got, w)
			}
			if s.commit != tc.bCommit {
				t.Errorf("commit %d, want %d", s.commit, tc.bCommit)
			}
		})
	}

	// Within one log: etcd's semantics, the later entries replace those
	// from their index on (here 10 of term 1 is gone).
	c := newTestLog(t, 1, 7).save(7, 1, puts(1, 10, 1)...).save(7, 2, puts(8, 9, 2)...).close()
	d := newTestLog(t, 2, 7).save(5, 1, puts(1, 5, 1)...).close()
	l, err := OpenMerged([]string{d, c})
	if err != nil {
		t.Fatal(err)
	}
	if got, w := scanAll(t, l).entries, want(puts(1, 7, 1), puts(8, 9, 2)); !slicesEqual(got, w) {
		t.Errorf("a log overwritten within itself:\n got %v\nwant %v", got, w)
	}
}

// TestMergedNewestLogWins: where no log records an index committed and
// the logs hold different terms there, the most up-to-date log (as raft
// compares them: last term, then length) is the cluster's: here a's
// entry 8 of term 1 is followed by its entry 9 of term 3, which the
// leader of term 3 appended after its own entry 8, a's; b's entry 8 of
// term 2 never was committed, though its term is higher.
func TestMergedNewestLogWins(t *testing.T) {
	a := newTestLog(t, 1, 7).save(7, 1, puts(1, 8, 1)...).save(7, 3, put(9, 3, "v9-t3")).close()
	b := newTestLog(t, 2, 7).save(7, 2, append(puts(1, 7, 1), put(8, 2, "v8-t2"))...).close()
	for _, dirs := range [][]string{{a, b}, {b, a}} {
		l, err := OpenMerged(dirs)
		if err != nil {
			t.Fatal(err)
		}
		if got, w := scanAll(t, l).entries, want(puts(1, 8, 1), puts(9, 9, 3)); !slicesEqual(got, w) {
			t.Errorf("entries:\n got %v\nwant %v", got, w)
		}
	}
}

// TestMergedDiverged: two logs that both record one index committed, with
// different terms, are a diverged member: an error naming both.
func TestMergedDiverged(t *testing.T) {
	a := newTestLog(t, 1, 7).save(8, 1, puts(1, 8, 1)...).close()
	b := newTestLog(t, 2, 7).save(8, 2, append(puts(1, 7, 1), put(8, 2, "x"))...).close()
	_, err := OpenMerged([]string{a, b})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "raft entry 8 is term 1 in "+a) ||
		!strings.Contains(err.Error(), "term 2 in "+b) || !strings.Contains(err.Error(), "diverged") {
		t.Errorf("got %v", err)
	}
}

// TestMergedRewriteBelowCommit: a log that writes an entry again below
// the commit index it recorded before contradicts itself.
func TestMergedRewriteBelowCommit(t *testing.T) {
	a := newTestLog(t, 1, 7).save(8, 1, puts(1, 8, 1)...).save(8, 2, put(6, 2, "x")).close()
	b := newTestLog(t, 2, 7).save(8, 1, puts(1, 8, 1)...).close()
	_, err := OpenMerged([]string{b, a})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "raft entry 6 written again") || !strings.Contains(err.Error(), a) {
		t.Errorf("got %v", err)
	}
}

// TestMergedOnce: one directory, or the same given twice (also as a data
// directory and its wal directory), is Open's log.
func TestMergedOnce(t *testing.T) {
	data := t.TempDir()
	w := filepath.Join(data, "member", "wal")
	if err := os.MkdirAll(filepath.Dir(w), 0o700); err != nil {
		t.Fatal(err)
	}
	md := mustMarshal(&pb.Metadata{NodeID: new(uint64), ClusterID: new(uint64)})
	ww, err := wal.Create(zap.NewNop(), w, md)
	if err != nil {
		t.Fatal(err)
	}
	commit, term := uint64(3), uint64(1)
	if err := ww.Save(&raftpb.HardState{Term: &term, Commit: &commit}, puts(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	ww.Close()
	for _, dirs := range [][]string{{w}, {w, w}, {data, w, data}} {
		l, err := OpenMerged(dirs)
		if err != nil {
			t.Fatal(err)
		}
		if l.merged != nil || l.Dir != w || len(l.Segments) != 1 {
			t.Errorf("%v: %+v, want Open's log", dirs, l)
		}
	}
	if _, err := OpenMerged(nil); err == nil {
		t.Error("no directory: no error")
	}
}

// TestMergedTornTail: a torn tail ends its log only; the merge reports it
// with the segment's path.
func TestMergedTornTail(t *testing.T) {
	a := newTestLog(t, 1, 7).save(20, 1, puts(1, 20, 1)...).close()
	b := newTestLog(t, 2, 7).save(15, 1, puts(1, 15, 1)...).close()
	seg := filepath.Join(b, "0000000000000000-0000000000000000.wal")
	bl, err := Open(b)
	if err != nil {
		t.Fatal(err)
	}
	var last Pos
	if _, err := bl.Scan(func(rec *walpb.Record, p Pos) error {
		if rec.GetType() == EntryType {
			last = p
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, last.Offset+5); err != nil { // inside entry 15
		t.Fatal(err)
	}
	l, err := OpenMerged([]string{b, a})
	if err != nil {
		t.Fatal(err)
	}
	s := scanAll(t, l)
	if got, w := s.entries, want(puts(1, 20, 1)); !slicesEqual(got, w) {
		t.Errorf("entries:\n got %v\nwant %v", got, w)
	}
	if s.tail == nil || s.tail.Segment != seg || s.tail.Offset != last.Offset {
		t.Errorf("tail %v, want %s at offset %d", s.tail, seg, last.Offset)
	}
}

// TestFIFOSegment: a FIFO named like a segment is refused, in Open and
// OpenMerged, never waited on.
func TestFIFOSegment(t *testing.T) {
	good := newTestLog(t, 1, 7).save(3, 1, puts(1, 3, 1)...).close()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "0000000000000001-0000000000000010.wal")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// The good log's segment beside it, so that the FIFO is a later one.
	b, err := os.ReadFile(filepath.Join(good, "0000000000000000-0000000000000000.wal"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "0000000000000000-0000000000000000.wal"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	within := func(what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still waiting on the FIFO", what)
			return nil
		}
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v", what, err)
		}
	}
	check("Open", within("Open", func() error { _, err := Open(dir); return err }))
	check("OpenMerged", within("OpenMerged", func() error { _, err := OpenMerged([]string{good, dir}); return err }))
	// A FIFO put in a segment's place after the listing.
	check("openSegment", within("openSegment", func() error { _, _, err := openSegment(fifo); return err }))
	l := &Log{Dir: dir, Segments: []Segment{{Dir: dir, Name: filepath.Base(fifo)}}}
	check("ReadRecord", within("ReadRecord", func() error { _, err := l.ReadRecord(Pos{}); return err }))
	check("Scan", within("Scan", func() error { _, err := l.Scan(func(*walpb.Record, Pos) error { return nil }); return err }))
}

// TestEntryIndexTerm reads index and term as the full decoder does.
func TestEntryIndexTerm(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(seedDir, "*"))
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := parseSeed(b)
		if err != nil {
			t.Fatal(err)
		}
		e, err := DecodeEntry(data)
		if err != nil {
			t.Fatal(err)
		}
		index, term, err := entryIndexTerm(data)
		if err != nil || index != e.Index || term != e.Term {
			t.Errorf("%s: %d, %d, %v; want %d, %d", f, index, term, err, e.Index, e.Term)
		}
	}
	if _, _, err := entryIndexTerm([]byte{0x18}); err == nil {
		t.Error("a truncated entry: no error")
	}
}

// TestMergedLoserDropped: a log whose entry lost at an index has left the
// cluster's history there; its later entries are not taken, whatever
// their terms.
func TestMergedLoserDropped(t *testing.T) {
	a := newTestLog(t, 1, 7).save(7, 1, puts(1, 8, 1)...).save(7, 3, put(9, 3, "v9-t3")).close()
	b := newTestLog(t, 2, 7).save(8, 2, append(puts(1, 7, 1), put(8, 2, "v8-t2"))...).close()
	l, err := OpenMerged([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if got, w := scanAll(t, l).entries, want(puts(1, 7, 1), puts(8, 8, 2)); !slicesEqual(got, w) {
		t.Errorf("entries:\n got %v\nwant %v", got, w)
	}
}

// TestMergedReceivedSnapshot: a raft snapshot a member received from the
// leader (past the commit index its log records) replaced its log: the
// entries it held past that commit index are not its log's any more, and
// its later commit index does not vouch for them.
func TestMergedReceivedSnapshot(t *testing.T) {
	a := newTestLog(t, 1, 7).save(7, 1, puts(1, 10, 1)...).purged(12, 2).save(15, 2, puts(13, 15, 2)...).close()
	b := newTestLog(t, 2, 7).save(12, 2, append(puts(1, 7, 1), puts(8, 12, 2)...)...).close()
	for _, dirs := range [][]string{{a, b}, {b, a}} {
		l, err := OpenMerged(dirs)
		if err != nil {
			t.Fatal(err)
		}
		s := scanAll(t, l)
		if got, w := s.entries, want(puts(1, 7, 1), puts(8, 15, 2)); !slicesEqual(got, w) {
			t.Errorf("entries:\n got %v\nwant %v", got, w)
		}
		if s.commit != 15 {
			t.Errorf("commit %d", s.commit)
		}
	}
}

// TestMergedTermsDecrease: an entry a log records committed that follows,
// in the merge, an entry of a higher term is a contradiction, not merged.
func TestMergedTermsDecrease(t *testing.T) {
	// a holds entry 8 of term 3, not committed in its log; b, purged up
	// to 8, records entry 9 of term 2 committed.
	a := newTestLog(t, 1, 7).save(7, 3, append(puts(1, 7, 1), put(8, 3, "v8-t3"))...).close()
	b := newTestLog(t, 2, 7).purged(8, 2).save(9, 2, put(9, 2, "v9-t2")).close()
	_, err := OpenMerged([]string{a, b})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "raft entry 9 (term 2) in "+b) || !strings.Contains(err.Error(), "follows entry 8 of term 3 in "+a) {
		t.Errorf("got %v", err)
	}
	// Not committed in b either: b's entry is from a history that lost.
	c := newTestLog(t, 2, 7).purged(8, 2).save(8, 2, put(9, 2, "v9-t2")).close()
	l, err := OpenMerged([]string{a, c})
	if err != nil {
		t.Fatal(err)
	}
	if got, w := scanAll(t, l).entries, want(puts(1, 7, 1), puts(8, 8, 3)); !slicesEqual(got, w) {
		t.Errorf("entries:\n got %v\nwant %v", got, w)
	}
}
