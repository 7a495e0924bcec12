package wal

import (
	"fmt"

	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// foreignDB says why the db cannot be the one the prefix's entries lead
// to, "" when nothing refutes it. It rests on counting alone: every entry
// certain to make a revision made one, so the db's revisions from
// dbRev-certain+1 on are all the prefix's, and each item the db holds
// there must be one of its writes, in any branch: a put of that key and
// value, a tombstone of a key it deletes, or of any key where it revokes
// a lease or deletes a range. A db of another cluster that shares the
// member's id fails this as soon as the log holds a few puts. With an
// entry settle does not model, the check is not made.
func foreignDB(entries []pxEntry, keys *pxKeys, x *dbIndex, dbRev int64) string {
	certain := int64(0)
	for i := range entries {
		if entries[i].unmodelled != "" {
			return ""
		}
		certain += int64(b2i(certainRevision(&entries[i], keys)))
	}
	return notTheLogs(entries, keys, x, dbRev-certain+1, dbRev)
}

// certainRevision reports whether pe makes a revision whatever the state
// before the log: step over a state that knows nothing says it changed a
// key. A request made under authentication, whose check step does not
// model, is not certain.
func certainRevision(pe *pxEntry, keys *pxKeys) bool {
	if pe.authed {
		return false
	}
	req := pe.request(keys.names)
	if req == nil {
		return false
	}
	res := step(newPxState(keys), req, pe.index)
	return res.outcome == OutcomeApplied && res.changed
}

// notTheLogs says why an item the db holds at a revision from from to
// dbRev, which the prefix's entries made, is none of their writes ("":
// each is).
func notTheLogs(entries []pxEntry, keys *pxKeys, x *dbIndex, from, dbRev int64) string {
	if x == nil {
		return ""
	}
	revokes := false
	type write struct {
		key  int32
		hash uint64
	}
	puts := map[write]bool{}
	dels := map[int32]bool{}
	for i := range entries {
		pe := &entries[i]
		if pe.kind == walfile.KindLeaseRevoke || pe.ranged {
			// Either may delete keys the log never names.
			revokes = true
		}
		for _, ops := range [][]pxOp{pe.succ, pe.fail} {
			for _, o := range ops {
				if o.del {
					dels[o.key] = true
					continue
				}
				puts[write{o.key, o.hash}] = true
			}
		}
	}
	for rev := max(from, x.lo); rev <= dbRev && rev <= x.hi; rev++ {
		for _, it := range x.at(rev) {
			switch {
			case it.tomb && (revokes || it.key >= 0 && dels[it.key]):
			case it.key < 0:
				return fmt.Sprintf("the db's revision %d %s a key none of the log's entries up to its consistent index writes, yet those entries made every revision from %d on", rev, map[bool]string{false: "writes", true: "deletes"}[it.tomb], from)
			case it.tomb:
				return fmt.Sprintf("the db's revision %d deletes %s, which none of the log's entries up to its consistent index deletes, yet those entries made every revision from %d on", rev, keys.names[it.key], from)
			case !puts[write{it.key, it.hash}]:
				return fmt.Sprintf("the db's revision %d holds a value of %s that none of the log's entries up to its consistent index puts, yet those entries made every revision from %d on", rev, keys.names[it.key], from)
			}
		}
	}
	return ""
}
