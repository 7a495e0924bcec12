package walfile

import (
	"errors"

	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
)

// errStopped stops a scan whose consumer failed.
var errStopped = errors.New("stopped")

// ScanDecoded reads and decodes the log's records in a goroutine of its
// own and hands them to fn in the caller's, in batches, so that the two
// use two cores, as Scan does not. fn gets them in log order, an entry record with its
// entry decoded or why it does not decode, others with e nil.
func (l *Log) ScanDecoded(fn func(typ int64, data []byte, pos Pos, e *Entry, decErr error) error) (*Tail, error) {
	type rawRecord struct {
		typ    int64
		data   []byte
		pos    Pos
		entry  Entry
		decErr error
	}
	const batch = 256
	ch := make(chan []rawRecord, 8)
	stop := make(chan struct{})
	var tail *Tail
	var scanErr error
	go func() {
		defer close(ch)
		buf := make([]rawRecord, 0, batch)
		tail, scanErr = l.Scan(func(rec *walpb.Record, pos Pos) error {
			// The decoder gives every record a new Data slice: no copy.
			x := rawRecord{typ: rec.GetType(), data: rec.GetData(), pos: pos}
			if x.typ == EntryType {
				x.entry, x.decErr = DecodeEntry(x.data)
			}
			buf = append(buf, x)
			if len(buf) < batch {
				return nil
			}
			select {
			case ch <- buf:
			case <-stop:
				return errStopped
			}
			buf = make([]rawRecord, 0, batch)
			return nil
		})
		if scanErr == nil && len(buf) > 0 {
			select {
			case ch <- buf:
			case <-stop:
			}
		}
	}()
	var err error
	for b := range ch {
		if err != nil {
			continue
		}
		for i := range b {
			x := &b[i]
			var e *Entry
			if x.typ == EntryType {
				e = &x.entry
			}
			if err = fn(x.typ, x.data, x.pos, e, x.decErr); err != nil {
				close(stop)
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return tail, scanErr
}
