// Package walread reads an etcd member's write-ahead log (member/wal/*.wal)
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
// Nothing here opens a file for writing, locks it or repairs it: the log is
// read through plain read-only file handles.
package walread

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
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
	// Name is the file name, e.g. 0000000000000000-0000000000000000.wal.
	Name string
	// Seq is the segment's sequence number; Index the raft index its name
	// carries (entries in it have a greater index).
	Seq, Index uint64
	// Size is the file's size in bytes.
	Size int64
}

// Pos locates a record: the segment (an index into Log.Segments), the
// offset of its frame, and the running CRC before it (what the decoder
// needs to validate it again).
type Pos struct {
	Segment int32
	PrevCRC uint32
	Offset  int64
}

// Tail says where a torn log stopped: the last segment's name, the offset
// after the last valid record, and why the rest was not read.
type Tail struct {
	Segment string
	Offset  int64
	Reason  string
}

func (t *Tail) String() string {
	return fmt.Sprintf("%s at offset %d: %s", t.Segment, t.Offset, t.Reason)
}

// Log is an opened log directory.
type Log struct {
	// Dir is the wal directory.
	Dir string
	// Segments are the segment files in sequence order.
	Segments []Segment
}

// Open finds the log in dir: dir itself when it holds *.wal files, else
// dir/member/wal (a member's data directory) or dir/wal (its member
// directory). It reads nothing but the directory listing.
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
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read write-ahead log directory: %w", err)
	}
	var segs []Segment
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".wal") {
			continue
		}
		var s Segment
		if _, err := fmt.Sscanf(name, "%016x-%016x.wal", &s.Seq, &s.Index); err != nil || len(name) != 16+1+16+4 {
			return nil, fmt.Errorf("%s: not a write-ahead log segment name (want %%016x-%%016x.wal)", filepath.Join(dir, name))
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
		s.Name, s.Size = name, info.Size()
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
func (l *Log) Scan(fn func(rec *walpb.Record, pos Pos) error) (*Tail, error) {
	var prevCRC uint32
	var rec walpb.Record
	for i, seg := range l.Segments {
		path := filepath.Join(l.Dir, seg.Name)
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open write-ahead log segment: %w", err)
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		dec := wal.NewDecoder(fileReader{Reader: f, info: info})
		last := i == len(l.Segments)-1
		first := true
		for {
			off := dec.LastOffset()
			before := dec.LastCRC()
			err := dec.Decode(&rec)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				if errors.Is(err, io.ErrUnexpectedEOF) {
					// A write cut short, or a copy taken while it was
					// being written: the log ends here.
					t := &Tail{Segment: seg.Name, Offset: off, Reason: "torn or incomplete record"}
					if !last {
						t.Reason += fmt.Sprintf("; %d later segment(s) not read", len(l.Segments)-1-i)
					}
					return t, nil
				}
				return nil, fmt.Errorf("%s at offset %d: %w: %w", path, off, ErrCorrupt, err)
			}
			if rec.GetType() == CrcType {
				// The segment's first record carries the CRC the previous
				// segment ended with: the chain must match.
				if first && i > 0 && rec.GetCrc() != prevCRC {
					f.Close()
					return nil, fmt.Errorf("%s at offset %d: %w: segment starts with CRC %x, previous segment ended with %x", path, off, ErrCorrupt, rec.GetCrc(), prevCRC)
				}
				dec.UpdateCRC(rec.GetCrc())
			}
			first = false
			if err := fn(&rec, Pos{Segment: int32(i), PrevCRC: before, Offset: off}); err != nil {
				f.Close()
				return nil, err
			}
		}
		prevCRC = dec.LastCRC()
		f.Close()
	}
	return nil, nil
}

// ReadRecord reads the record at pos again, checking its CRC.
func (l *Log) ReadRecord(pos Pos) (*walpb.Record, error) {
	if pos.Segment < 0 || int(pos.Segment) >= len(l.Segments) {
		return nil, fmt.Errorf("write-ahead log: no segment %d", pos.Segment)
	}
	path := filepath.Join(l.Dir, l.Segments[pos.Segment].Name)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open write-ahead log segment: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
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
