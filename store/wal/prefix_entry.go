package wal

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// pxKeys numbers the keys of the prefix's entries.
type pxKeys struct {
	names []string
	ids   map[string]int32
	// sorted holds the keys' numbers in key order, made by inRange.
	sorted []int32
}

func newPxKeys() *pxKeys { return &pxKeys{ids: map[string]int32{}} }

// id returns key's number, given on first use.
func (t *pxKeys) id(key []byte) int32 {
	if id, ok := t.ids[string(key)]; ok {
		return id
	}
	id := int32(len(t.names))
	k := string(key)
	t.names = append(t.names, k)
	t.ids[k] = id
	return id
}

// inRange lists, in key order, the keys in etcd's range [from, end), end
// "\x00" meaning every key from from on.
func (t *pxKeys) inRange(from, end string) []int32 {
	if len(t.sorted) != len(t.names) {
		t.sorted = make([]int32, len(t.names))
		for i := range t.sorted {
			t.sorted[i] = int32(i)
		}
		slices.SortFunc(t.sorted, func(a, b int32) int { return strings.Compare(t.names[a], t.names[b]) })
	}
	i := sort.Search(len(t.sorted), func(i int) bool { return t.names[t.sorted[i]] >= from })
	j := i
	for j < len(t.sorted) && (end == "\x00" || t.names[t.sorted[j]] < end) {
		j++
	}
	return t.sorted[i:j]
}

// pxCmp is one compare of a prefix entry.
type pxCmp struct {
	key    int32
	target pb.Compare_CompareTarget
	result pb.Compare_CompareResult
	// ranged: the compare is over a range from key on.
	ranged bool
	// value is what it compares with; for a value, its hash.
	value int64
}

// pxOp is one write a prefix entry asks for.
type pxOp struct {
	key   int32
	del   bool
	lease int64
	hash  uint64 // a put's value hash
	// path is the op's branchIndex in its transaction, inTxn false for a
	// plain request; deep is its whole path in a nested transaction.
	path  int32
	inTxn bool
	deep  []int32
}

// pxEntry is a prefix entry as settle keeps it: values hashed, keys by
// number, so that memory is bounded by the number of writes. request
// rebuilds what step needs of it.
type pxEntry struct {
	index, term uint64
	kind        walfile.Kind
	other       string
	pos         walfile.Pos
	// id is a lease grant's or revoke's lease, a compaction's revision.
	id         int64
	cmps       []pxCmp
	succ, fail []pxOp
	// unmodelled says what of the entry settle does not model: the
	// prefix is then left unresolved.
	unmodelled string
	// nested: the transaction holds transactions; succ and fail hold the
	// writes of every branch under each of its own.
	nested bool
	// authed: made under authentication, whose check may refuse it.
	authed bool
	// ranged marks a range delete of [from, end) outside a transaction.
	// Its keys are not in succ.
	ranged    bool
	from, end string
}

// compactEntry turns a decoded entry into a pxEntry.
func compactEntry(e walfile.Entry, pos walfile.Pos, keys *pxKeys) pxEntry {
	pe := pxEntry{index: e.Index, term: e.Term, kind: e.Kind, other: e.Other, pos: pos}
	req := e.Request
	if req == nil {
		return pe
	}
	pe.authed = req.Header != nil && (req.Header.Username != "" || req.Header.AuthRevision != 0)
	put := func(p *pb.PutRequest, path int32, inTxn bool) pxOp {
		if p.IgnoreValue || p.IgnoreLease {
			pe.unmodelled = "a put keeping the value or lease"
		}
		return pxOp{key: keys.id(p.Key), lease: p.Lease, hash: valueHash(p.Value), path: path, inTxn: inTxn}
	}
	// A range delete in a transaction is not modelled.
	del := func(out []pxOp, d *pb.DeleteRangeRequest, path int32, inTxn bool) []pxOp {
		if len(d.RangeEnd) != 0 {
			pe.unmodelled = "a range delete"
			return out
		}
		return append(out, pxOp{key: keys.id(d.Key), del: true, path: path, inTxn: inTxn})
	}
	// txnOps lists a transaction's writes by the branch they are under.
	txnOps := func(t *pb.TxnRequest) {
		for _, o := range requestOps(t, nil) {
			n := len(o.path)
			var out []pxOp
			switch {
			case o.rng != nil && o.rng.Revision != 0:
				pe.unmodelled = "a range at a revision in a transaction"
			case o.put != nil:
				out = []pxOp{put(o.put, o.path[n-1], true)}
			case o.del != nil:
				out = del(nil, o.del, o.path[n-1], true)
			}
			if n > 1 {
				pe.nested = true
				for i := range out {
					out[i].deep = o.path
				}
			}
			if o.path[0] >= 0 {
				pe.succ = append(pe.succ, out...)
			} else {
				pe.fail = append(pe.fail, out...)
			}
		}
	}
	switch {
	case req.Put != nil:
		pe.succ = []pxOp{put(req.Put, 0, false)}
	case req.DeleteRange != nil && len(req.DeleteRange.RangeEnd) != 0:
		d := req.DeleteRange
		pe.ranged, pe.from, pe.end = true, string(d.Key), string(d.RangeEnd)
	case req.DeleteRange != nil:
		pe.succ = del(nil, req.DeleteRange, 0, false)
	case req.Txn != nil:
		for _, c := range req.Txn.Compare {
			pc := pxCmp{key: keys.id(c.Key), target: c.Target, result: c.Result, ranged: len(c.RangeEnd) != 0, value: compareOperand(c)}
			if c.Target == pb.Compare_VALUE {
				pc.value = int64(valueHash(c.GetValue()))
			}
			pe.cmps = append(pe.cmps, pc)
		}
		txnOps(req.Txn)
	case req.LeaseGrant != nil:
		pe.id = req.LeaseGrant.ID
	case req.LeaseRevoke != nil:
		pe.id = req.LeaseRevoke.ID
	case req.Compaction != nil:
		pe.id = req.Compaction.Revision
	case req.AuthEnable != nil:
		pe.unmodelled = "authentication enabled: permission checks are not modelled"
	case req.Alarm != nil && req.Alarm.Action == pb.AlarmRequest_ACTIVATE:
		pe.unmodelled = fmt.Sprintf("the %v alarm raised: writes refused under it are not modelled", req.Alarm.Alarm)
	}
	return pe
}

// opPath is an op's path in its entry's request (see walWrite.path).
func opPath(o pxOp) []int32 {
	switch {
	case o.deep != nil:
		return o.deep
	case !o.inTxn:
		return nil
	}
	return []int32{o.path}
}
