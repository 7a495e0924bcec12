package walfile

import (
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ErrConflict means the logs OpenMerged was given are not one cluster's
// history: they carry different cluster ids, hold different entries at
// one raft index and term, or two of them record different entries at
// one index committed (a diverged member). The error names both logs.
var ErrConflict = errors.New("write-ahead logs disagree")

// merged is what OpenMerged worked out from a first pass over each
// member's log: which record Scan yields for every raft index.
type merged struct {
	seed maphash.Seed
	logs []*memberLog
	// meta and state are the records Scan yields first (state nil: no
	// log holds one), at their positions in the merged Log.
	meta, state       *walpb.Record
	metaPos, statePos Pos
	// picks are the entries Scan yields, in raft index order, each at its
	// position in the merged Log.
	picks []pick
	tail  *Tail
}

// memberLog is one member's log as the first pass saw it.
type memberLog struct {
	log *Log
	// base is the index of its first segment in the merged Log's Segments.
	base            int32
	member, cluster uint64
	meta            *walpb.Record
	metaPos         Pos
	// commit is the highest commit index its state records hold; state
	// the record holding it.
	commit   uint64
	state    *walpb.Record
	statePos Pos
	// ents are its final entries (see readMember), in raft index order.
	ents []entryRef
	tail *Tail
}

// entryRef is what the first pass keeps of an entry record: never its
// data, only a hash of it.
type entryRef struct {
	index, term uint64
	pos         Pos
	sum         uint64
	size        int
}

type pick struct {
	entryRef
	log int
}

// OpenMerged opens several members' logs of one cluster as one log, merged
// by raft index (see the package documentation). One directory is Open.
// A directory given twice (or a data directory and the wal directory in
// it) is read once. Unlike Open it reads every log once, to work out which
// record holds each entry; that keeps, per entry, its index, term,
// position and a hash of its data, never the data. Logs of different
// clusters, or that disagree about an entry, are an error wrapping
// ErrConflict.
func OpenMerged(dirs []string) (*Log, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no write-ahead log directory given")
	}
	if len(dirs) == 1 {
		return Open(dirs[0])
	}
	var logs []*Log
	for _, d := range dirs {
		l, err := Open(d)
		if err != nil {
			return nil, err
		}
		dup, err := sameDirAsOne(l.Dir, logs)
		if err != nil {
			return nil, err
		}
		if !dup {
			logs = append(logs, l)
		}
	}
	if len(logs) == 1 {
		return logs[0], nil
	}
	m := &merged{seed: maphash.MakeSeed()}
	out := &Log{merged: m}
	var names []string
	for _, l := range logs {
		ml, err := readMember(l, m.seed)
		if err != nil {
			return nil, err
		}
		if first := m.logs; len(first) > 0 && ml.cluster != first[0].cluster {
			return nil, fmt.Errorf("%w: %s is cluster %x's log, %s cluster %x's: they are different clusters", ErrConflict, first[0].log.Dir, first[0].cluster, l.Dir, ml.cluster)
		}
		ml.base = int32(len(out.Segments))
		out.Segments = append(out.Segments, l.Segments...)
		names = append(names, l.Dir)
		m.logs = append(m.logs, ml)
	}
	out.Dir = strings.Join(names, ", ")
	first := m.logs[0]
	m.meta, m.metaPos = first.meta, first.global(first.metaPos)
	var commit uint64
	for _, ml := range m.logs {
		if ml.state != nil && (m.state == nil || ml.commit > commit) {
			m.state, m.statePos, commit = ml.state, ml.global(ml.statePos), ml.commit
		}
		if ml.tail != nil && m.tail == nil {
			t := *ml.tail
			t.Segment = filepath.Join(ml.log.Dir, t.Segment)
			m.tail = &t
		}
	}
	if err := m.plan(); err != nil {
		return nil, err
	}
	for _, ml := range m.logs {
		ml.ents = nil // the plan holds what Scan needs
	}
	return out, nil
}

// sameDirAsOne reports whether dir is the directory of one of logs.
func sameDirAsOne(dir string, logs []*Log) (bool, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return false, fmt.Errorf("write-ahead log directory: %w", err)
	}
	for _, l := range logs {
		other, err := os.Stat(l.Dir)
		if err != nil {
			return false, fmt.Errorf("write-ahead log directory: %w", err)
		}
		if os.SameFile(info, other) {
			return true, nil
		}
	}
	return false, nil
}

// global is pos, a position in the member's own log, in the merged Log.
func (ml *memberLog) global(pos Pos) Pos {
	pos.Segment += ml.base
	return pos
}

// path names the segment a position of the member's own log is in.
func (ml *memberLog) path(pos Pos) string { return ml.log.Segments[pos.Segment].Path() }

// readMember is the first pass over one member's log: its metadata, its
// highest commit index and its final entries. As etcd reads its log, an
// entry replaces every entry from its index on (a new leader overwrote
// what was not committed): the final entry at an index is the last one
// with that index, if no entry with a lower index came after it. A raft
// snapshot the member received from the leader (one past the commit index
// the log records) replaces the log too: the entries past that commit
// index are dropped. An entry written again at or below the commit index
// the log recorded before it is corruption (raft never rewrites a
// committed entry), an error wrapping ErrCorrupt.
func readMember(l *Log, seed maphash.Seed) (*memberLog, error) {
	ml := &memberLog{log: l}
	tail, err := l.Scan(func(rec *walpb.Record, pos Pos) error {
		where := func() string { return fmt.Sprintf("%s at offset %d", ml.path(pos), pos.Offset) }
		switch rec.GetType() {
		case MetadataType:
			var md pb.Metadata
			if err := proto.Unmarshal(rec.GetData(), &md); err != nil {
				return fmt.Errorf("%s: the member's metadata: %w", where(), err)
			}
			if ml.meta == nil {
				ml.meta, ml.metaPos = proto.Clone(rec).(*walpb.Record), pos
				ml.member, ml.cluster = md.GetNodeID(), md.GetClusterID()
			} else if md.GetNodeID() != ml.member || md.GetClusterID() != ml.cluster {
				return fmt.Errorf("%s: %w: metadata of member %x of cluster %x, earlier in the log member %x of cluster %x", where(), ErrCorrupt, md.GetNodeID(), md.GetClusterID(), ml.member, ml.cluster)
			}
		case StateType:
			hs, err := DecodeState(rec.GetData())
			if err != nil {
				return fmt.Errorf("%s: %w", where(), err)
			}
			if ml.state == nil || hs.GetCommit() > ml.commit {
				ml.commit, ml.state, ml.statePos = hs.GetCommit(), proto.Clone(rec).(*walpb.Record), pos
			}
		case SnapshotType:
			var snap walpb.Snapshot
			if err := proto.Unmarshal(rec.GetData(), &snap); err != nil {
				return fmt.Errorf("%s: decode raft snapshot record: %w", where(), err)
			}
			if snap.GetIndex() > ml.commit {
				n := len(ml.ents)
				for n > 0 && ml.ents[n-1].index > ml.commit {
					n--
				}
				ml.ents = ml.ents[:n]
			}
		case EntryType:
			index, term, err := entryIndexTerm(rec.GetData())
			if err != nil {
				return fmt.Errorf("%s: decode raft entry: %w", where(), err)
			}
			n := len(ml.ents)
			for n > 0 && ml.ents[n-1].index >= index {
				n--
			}
			if n < len(ml.ents) && index <= ml.commit {
				return fmt.Errorf("%s: %w: raft entry %d written again after the log recorded the entries up to %d committed", where(), ErrCorrupt, index, ml.commit)
			}
			ml.ents = append(ml.ents[:n], entryRef{index: index, term: term, pos: pos, sum: maphash.Bytes(seed, rec.GetData()), size: len(rec.GetData())})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ml.meta == nil {
		return nil, fmt.Errorf("%s: the log holds no metadata record (it is torn before its first record)", l.Dir)
	}
	ml.tail = tail
	return ml, nil
}

// entryIndexTerm reads the index and term of a raftpb.Entry without
// decoding (copying) its data.
func entryIndexTerm(data []byte) (index, term uint64, err error) {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		data = data[n:]
		if typ == protowire.VarintType && (num == 2 || num == 3) {
			v, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return 0, 0, protowire.ParseError(n)
			}
			if num == 2 {
				term = v
			} else {
				index = v
			}
			data = data[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, data)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		data = data[n:]
	}
	return index, term, nil
}

// plan chooses the record of every raft index some log holds (see the
// package documentation).
func (m *merged) plan() error {
	next := make([]int, len(m.logs))      // each log's next entry
	diverged := make([]bool, len(m.logs)) // its later entries are not the cluster's
	var prev pick                         // the entry chosen last (none while picks is empty)
	for {
		index, found := uint64(0), false
		for k, ml := range m.logs {
			if !diverged[k] && next[k] < len(ml.ents) && (!found || ml.ents[next[k]].index < index) {
				index, found = ml.ents[next[k]].index, true
			}
		}
		if !found {
			return nil
		}
		var cands []pick
		for k, ml := range m.logs {
			if diverged[k] || next[k] >= len(ml.ents) || ml.ents[next[k]].index != index {
				continue
			}
			e := ml.ents[next[k]]
			next[k]++
			// Terms never decrease along a raft log: an entry of a lower
			// term than the one chosen before it is from a history that
			// lost, and so is the rest of its log.
			if len(m.picks) > 0 && e.term < prev.term {
				if ml.commit >= index {
					p := m.logs[prev.log]
					return fmt.Errorf("%w: raft entry %d (term %d) in %s, which that log records committed, follows entry %d of term %d in %s: terms never decrease along a raft log", ErrConflict, index, e.term, ml.path(e.pos), prev.index, prev.term, p.path(p.local(prev.pos)))
				}
				diverged[k] = true
				continue
			}
			cands = append(cands, pick{entryRef: e, log: k})
		}
		if len(cands) == 0 {
			continue
		}
		for i, a := range cands {
			for _, b := range cands[i+1:] {
				if a.term == b.term && (a.sum != b.sum || a.size != b.size) {
					return fmt.Errorf("%w: raft entry %d (term %d) differs between %s and %s: one index and term is one entry in every member's log", ErrConflict, index, a.term, m.logs[a.log].path(a.pos), m.logs[b.log].path(b.pos))
				}
			}
		}
		chosen := -1
		for i, c := range cands {
			if m.logs[c.log].commit < index {
				continue
			}
			if chosen >= 0 && cands[chosen].term != c.term {
				a, b := cands[chosen], c
				return fmt.Errorf("%w: raft entry %d is term %d in %s and term %d in %s, and both logs record it committed: a member diverged", ErrConflict, index, a.term, m.logs[a.log].path(a.pos), b.term, m.logs[b.log].path(b.pos))
			}
			if chosen < 0 {
				chosen = i
			}
		}
		if chosen < 0 {
			// No log records it committed: the entry of the log that is the
			// most up to date, as raft compares logs (the highest last
			// term, then the longest). That log's entries are those of
			// the latest leader of all the logs' terms, who holds every
			// entry committed before its term.
			for i, c := range cands {
				if chosen < 0 || m.logs[c.log].newer(m.logs[cands[chosen].log]) {
					chosen = i
				}
			}
		}
		p := cands[chosen]
		for _, c := range cands {
			if c.term != p.term {
				diverged[c.log] = true
			}
		}
		p.pos = m.logs[p.log].global(p.pos)
		m.picks = append(m.picks, p)
		prev = p
	}
}

// local is pos, a position in the merged Log, in the member's own log.
func (ml *memberLog) local(pos Pos) Pos {
	pos.Segment -= ml.base
	return pos
}

// newer reports whether ml's log is more up to date than o's, as raft
// compares logs: by the term of the last entry, then by its index.
func (ml *memberLog) newer(o *memberLog) bool {
	a, b := ml.ents[len(ml.ents)-1], o.ents[len(o.ents)-1]
	return a.term > b.term || (a.term == b.term && a.index > b.index)
}

// scanMerged is the second pass: the metadata and state records, then
// each chosen entry, read again from its log in order (each log is read
// sequentially; the records not chosen are skipped). An entry that is no
// longer there, or whose data no longer hashes as in the first pass, is an
// error: the file changed.
func (l *Log) scanMerged(fn func(rec *walpb.Record, pos Pos) error) (*Tail, error) {
	m := l.merged
	if err := fn(proto.Clone(m.meta).(*walpb.Record), m.metaPos); err != nil {
		return nil, err
	}
	if m.state != nil {
		if err := fn(proto.Clone(m.state).(*walpb.Record), m.statePos); err != nil {
			return nil, err
		}
	}
	readers := make([]*reader, len(m.logs))
	defer func() {
		for _, r := range readers {
			if r != nil {
				r.close()
			}
		}
	}()
	for _, p := range m.picks {
		r := readers[p.log]
		if r == nil {
			ml := m.logs[p.log]
			r = &reader{segs: ml.log.Segments, base: ml.base}
			readers[p.log] = r
		}
		changed := func(why string) error {
			return fmt.Errorf("%s at offset %d: %s since the log was opened (raft entry %d): read a copy nothing writes to", l.Segments[p.pos.Segment].Path(), p.pos.Offset, why, p.index)
		}
		for {
			rec, pos, _, err := r.next()
			if err != nil {
				return nil, err
			}
			if rec == nil || pos.Segment > p.pos.Segment || (pos.Segment == p.pos.Segment && pos.Offset > p.pos.Offset) {
				return nil, changed("the record is gone")
			}
			if pos != p.pos {
				continue
			}
			if rec.GetType() != EntryType || len(rec.GetData()) != p.size || maphash.Bytes(m.seed, rec.GetData()) != p.sum {
				return nil, changed("the record changed")
			}
			if err := fn(rec, pos); err != nil {
				return nil, err
			}
			break
		}
	}
	return m.tail, nil
}
