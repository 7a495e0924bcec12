// Package walfile reads an etcd member's write-ahead log (member/wal/*.wal)
// read-only, record by record, with etcd's own decoder.
//
// The log format, as etcd writes it (go.etcd.io/etcd/server/v3/storage/wal):
// a directory of segments named %016x-%016x.wal (sequence number, raft index
// of the first entry), each preallocated to 64 MB and filled with framed
// walpb.Record messages: an 8-byte little-endian length (with the padding
// size in its top byte), the record, zero padding to 8 bytes. Every record
// carries the CRC-32C of all record data since the start of the log; each
// segment starts with a CRC record carrying the previous segment's final
// CRC, then the metadata record (the member and cluster ids). Entry records
// hold a raftpb.Entry whose data is an etcdserverpb.InternalRaftRequest;
// state records a raftpb.HardState (term, vote, commit index); snapshot
// records a walpb.Snapshot (the index and term of a raft snapshot).
//
// Files named *.tmp are segments etcd preallocated and has not started yet;
// they are not part of the log. A log copied from a running member may end
// in a torn record (a write interrupted mid-way, or a copy taken while the
// record was being written): Scan stops there and reports where.
//
// Members of one cluster snapshot and purge their logs at different raft
// indexes, so their logs cover different spans. OpenMerged reads several
// members' logs as one, which Scan yields as a replay consumes one
// member's: one metadata record (the first log's; every log must carry
// the same cluster id), one state record (the one holding the highest
// commit index any log records: a commit index is cluster-wide once a
// member recorded it), then every entry once, in raft index order, from
// whichever log holds it. Each log's own entries are read as etcd reads
// them: an entry replaces those from its index on (a new leader overwrote
// what was not committed). Across logs, one index and term must be the
// same bytes everywhere. Where the logs hold different terms at one
// index, the entry of a log that records that index committed wins (two
// such logs that disagree are a diverged member: an error); where none
// does, that of the most up-to-date log, as raft compares logs (highest
// last term, then longest). A log whose entry lost, or that holds an
// entry of a lower term than the entry chosen before it, has left the
// cluster's history there: its later entries are not taken. An index no
// log holds is left out (a gap the replay reports). Positions name the
// member's segment (Log.Segments lists every log's), so that ReadRecord
// reads a record again from the log it came from.
//
// Only regular files are read: a segment that is a FIFO or a device is
// refused, as reading it could block forever. Nothing here opens a file
// for writing, locks it or repairs it: the log is read through plain
// read-only file handles.
package walfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"

	"github.com/etcdpvc/etcdpvc/internal/regular"
)

// Record types, as etcd's wal package numbers them.
const (
	MetadataType = wal.MetadataType
	EntryType    = wal.EntryType
	StateType    = wal.StateType
	CrcType      = wal.CrcType
	SnapshotType = wal.SnapshotType
)

// ErrNoLog means the directory holds no write-ahead log segment.
var ErrNoLog = errors.New("no write-ahead log segments")

// ErrCorrupt means a record in the middle of the log failed its CRC or could
// not be decoded. The error names the segment and offset.
var ErrCorrupt = errors.New("write-ahead log corrupt")

// Segment is one file of the log.
type Segment struct {
	// Dir is the wal directory holding it.
	Dir string
	// Name is the file name, e.g. 0000000000000000-0000000000000000.wal.
	Name string
	// Seq is the segment's sequence number; Index the raft index its name
	// carries (entries in it have a greater index).
	Seq, Index uint64
	// Size is the file's size in bytes.
	Size int64
}

// Path is the segment's file path.
func (s Segment) Path() string { return filepath.Join(s.Dir, s.Name) }

// Pos locates a record: the segment (an index into Log.Segments), the
// offset of its frame, and the running CRC before it (what the decoder
// needs to validate it again).
type Pos struct {
	Segment int32
	PrevCRC uint32
	Offset  int64
}

// Tail says where a torn log stopped: the last segment's name (its path,
// in a log merged from several members'), the offset after the last valid
// record, and why the rest was not read.
type Tail struct {
	Segment string
	Offset  int64
	Reason  string
}

func (t *Tail) String() string {
	return fmt.Sprintf("%s at offset %d: %s", t.Segment, t.Offset, t.Reason)
}

// Log is an opened log directory, or several members' logs merged into one
// (OpenMerged).
type Log struct {
	// Dir is the wal directory (the directories, joined with ", ", of a
	// merged log).
	Dir string
	// Segments are the segment files in sequence order (those of every
	// member's log in turn, for a merged log).
	Segments []Segment

	// merged, when not nil, is the plan Scan follows for a merged log.
	merged *merged

	// files are the segments ReadRecord opened, kept open (with their
	// size then) until Close: reading the values of thousands of entries
	// again opens each segment once.
	mu    sync.Mutex
	files map[int32]openedSegment
}

// openedSegment is a segment file ReadRecord keeps open.
type openedSegment struct {
	f    *os.File
	info fs.FileInfo
}

// Close closes the segment files ReadRecord opened. The log can be read
// again after it.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first error
	for _, o := range l.files {
		if err := o.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	l.files = nil
	return first
}

// segmentFile returns segment i, opened once.
func (l *Log) segmentFile(i int32) (openedSegment, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o, ok := l.files[i]; ok {
		return o, nil
	}
	f, info, err := openSegment(l.Segments[i].Path())
	if err != nil {
		return openedSegment{}, err
	}
	if l.files == nil {
		l.files = map[int32]openedSegment{}
	}
	o := openedSegment{f: f, info: info}
	l.files[i] = o
	return o, nil
}

// Open finds the log in dir: dir itself when it holds *.wal files, else
// dir/member/wal (a member's data directory) or dir/wal (its member
// directory). It reads nothing but the directory listing. A segment that
// is not a regular file (a FIFO, a device) is refused, never opened.
func Open(dir string) (*Log, error) {
	for _, d := range []string{dir, filepath.Join(dir, "member", "wal"), filepath.Join(dir, "wal")} {
		segs, err := listSegments(d)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && d != dir {
				continue
			}
			return nil, err
		}
		if len(segs) > 0 {
			return &Log{Dir: d, Segments: segs}, nil
		}
	}
	return nil, fmt.Errorf("%s (nor member/wal inside it): %w", dir, ErrNoLog)
}

func listSegments(dir string) ([]Segment, error) {
	ents, err := regular.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read write-ahead log directory: %w", err)
	}
	var segs []Segment
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".wal") {
			continue
		}
		path := filepath.Join(dir, name)
		s := Segment{Dir: dir, Name: name}
		if _, err := fmt.Sscanf(name, "%016x-%016x.wal", &s.Seq, &s.Index); err != nil || len(name) != 16+1+16+4 {
			return nil, fmt.Errorf("%s: not a write-ahead log segment name (want %%016x-%%016x.wal)", path)
		}
		info, err := os.Lstat(path)
		if err == nil && info.Mode()&fs.ModeSymlink != 0 {
			info, err = os.Stat(path) // a link to a segment: what it names
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !info.Mode().IsRegular() {
			return nil, notRegular(path, info)
		}
		s.Size = info.Size()
		segs = append(segs, s)
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].Seq < segs[j].Seq })
	for i := 1; i < len(segs); i++ {
		if segs[i].Seq != segs[i-1].Seq+1 {
			return nil, fmt.Errorf("%s: segment %s follows %s: a segment is missing between them", dir, segs[i].Name, segs[i-1].Name)
		}
	}
	return segs, nil
}

// notRegular is the error for a segment that is not a regular file:
// reading a FIFO or a device could block forever or never end.
func notRegular(path string, info fs.FileInfo) error {
	return fmt.Errorf("%s: not a regular file (%v): a write-ahead log segment is a plain file", path, info.Mode().Type())
}

// openSegment opens a segment read-only through regular.Open: without
// blocking (a FIFO put in a segment's place after the listing would
// otherwise wait for a writer), refusing what is not a regular file.
func openSegment(path string) (*os.File, fs.FileInfo, error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open write-ahead log segment (a plain file): %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, info, nil
}

// fileReader gives etcd's decoder a file (or the part of it from an offset).
type fileReader struct {
	io.Reader
	info fs.FileInfo
}

func (f fileReader) FileInfo() (fs.FileInfo, error) { return f.info, nil }

// sizedInfo reports a smaller size, for a reader that starts at an offset.
type sizedInfo struct {
	fs.FileInfo
	size int64
}

func (s sizedInfo) Size() int64 { return s.size }

// Scan calls fn for every valid record in log order, with its position.
// rec is reused between calls: fn must copy what it keeps. A torn or
// incomplete record (normally at the end of the last segment; in an
// earlier one when the copy raced a segment switch) ends the scan without
// error; the returned Tail says where, and how many segments were not read
// (nil when the log ends cleanly). A CRC mismatch or an undecodable record
// is an error wrapping ErrCorrupt that names the segment and offset.
//
// A merged log (OpenMerged) yields its metadata record, its state record
// and its entries in raft index order (see the package documentation);
// its Tail is that of the first member's log that ended torn.
func (l *Log) Scan(fn func(rec *walpb.Record, pos Pos) error) (*Tail, error) {
	if l.merged != nil {
		return l.scanMerged(fn)
	}
	r := &reader{segs: l.Segments}
	defer r.close()
	for {
		rec, pos, tail, err := r.next()
		if err != nil || rec == nil {
			return tail, err
		}
		if err := fn(rec, pos); err != nil {
			return nil, err
		}
	}
}

// reader reads one member's log record by record, checking every CRC and
// the chain between segments.
type reader struct {
	segs []Segment
	// base is the index of segs[0] in the Log's Segments (for Pos).
	base int32

	i       int // the segment being read; len(segs): done
	f       *os.File
	dec     wal.Decoder
	first   bool
	prevCRC uint32
	rec     walpb.Record
}

// next returns the next record (reused by the next call) and its
// position; at the end of the log it returns a nil record, and the Tail
// of a torn log.
func (r *reader) next() (*walpb.Record, Pos, *Tail, error) {
	for r.i < len(r.segs) {
		seg := r.segs[r.i]
		if r.f == nil {
			f, info, err := openSegment(seg.Path())
			if err != nil {
				r.i = len(r.segs)
				return nil, Pos{}, nil, err
			}
			r.f, r.first = f, true
			r.dec = wal.NewDecoder(fileReader{Reader: f, info: info})
		}
		off := r.dec.LastOffset()
		before := r.dec.LastCRC()
		err := r.dec.Decode(&r.rec)
		if errors.Is(err, io.EOF) {
			r.prevCRC = r.dec.LastCRC()
			r.closeSegment()
			r.i++
			continue
		}
		if err != nil {
			r.close()
			if errors.Is(err, io.ErrUnexpectedEOF) {
				// A write cut short, or a copy taken while it was being
				// written: the log ends here.
				t := &Tail{Segment: seg.Name, Offset: off, Reason: "torn or incomplete record"}
				if later := len(r.segs) - 1 - r.i; later > 0 {
					t.Reason += fmt.Sprintf("; %d later segment(s) not read", later)
				}
				r.i = len(r.segs)
				return nil, Pos{}, t, nil
			}
			r.i = len(r.segs)
			return nil, Pos{}, nil, fmt.Errorf("%s at offset %d: %w: %w", seg.Path(), off, ErrCorrupt, err)
		}
		if r.rec.GetType() == CrcType {
			// The segment's first record carries the CRC the previous
			// segment ended with: the chain must match.
			if r.first && r.i > 0 && r.rec.GetCrc() != r.prevCRC {
				crc := r.rec.GetCrc()
				r.close()
				r.i = len(r.segs)
				return nil, Pos{}, nil, fmt.Errorf("%s at offset %d: %w: segment starts with CRC %x, previous segment ended with %x", seg.Path(), off, ErrCorrupt, crc, r.prevCRC)
			}
			r.dec.UpdateCRC(r.rec.GetCrc())
		}
		r.first = false
		return &r.rec, Pos{Segment: r.base + int32(r.i), PrevCRC: before, Offset: off}, nil, nil
	}
	return nil, Pos{}, nil, nil
}

func (r *reader) closeSegment() {
	if r.f != nil {
		r.f.Close()
		r.f, r.dec = nil, nil
	}
}

func (r *reader) close() { r.closeSegment() }

// ReadRecord reads the record at pos again, checking its CRC.
func (l *Log) ReadRecord(pos Pos) (*walpb.Record, error) {
	if pos.Segment < 0 || int(pos.Segment) >= len(l.Segments) {
		return nil, fmt.Errorf("write-ahead log: no segment %d", pos.Segment)
	}
	path := l.Segments[pos.Segment].Path()
	o, err := l.segmentFile(pos.Segment)
	if err != nil {
		return nil, err
	}
	f, info := o.f, o.info
	if pos.Offset < 0 || pos.Offset > info.Size() {
		return nil, fmt.Errorf("%s: offset %d beyond the file", path, pos.Offset)
	}
	r := io.NewSectionReader(f, pos.Offset, info.Size()-pos.Offset)
	dec := wal.NewDecoder(fileReader{Reader: r, info: sizedInfo{FileInfo: info, size: info.Size() - pos.Offset}})
	dec.UpdateCRC(pos.PrevCRC)
	var rec walpb.Record
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("%s at offset %d: %w", path, pos.Offset, err)
	}
	return &rec, nil
}

var _ fileutil.FileReader = fileReader{}
