package wal

import (
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// TestForeignDBCounting: a plain put without a lease certainly made a
// revision, so a db whose newest revision holds a key the log never
// writes is refused; made under etcd authentication, the same put may have
// been refused when applied, and nothing is concluded.
func TestForeignDBCounting(t *testing.T) {
	keys := newPxKeys()
	put := pxEntry{index: 10, kind: walfile.KindPut, succ: []pxOp{{key: keys.id([]byte("/registry/configmaps/demo/a")), hash: valueHash([]byte("v"))}}}
	// The db's revision 7 holds a key the log does not name.
	x := &dbIndex{lo: 7, hi: 7, off: []int32{0, 1}, items: []dbItem{{key: -1, hash: 1}}}
	if why := foreignDB([]pxEntry{put}, keys, x, 7); !strings.Contains(why, "revision 7 writes a key none of the log's entries") {
		t.Errorf("a plain put and a foreign revision: %q, want a refusal", why)
	}
	authed := put
	authed.authed = true
	if why := foreignDB([]pxEntry{authed}, keys, x, 7); why != "" {
		t.Errorf("the put made under authentication: refused (%q), want nothing concluded", why)
	}
	// The db's revision holds the put itself: not refused.
	own := &dbIndex{lo: 7, hi: 7, off: []int32{0, 1}, items: []dbItem{{key: put.succ[0].key, hash: put.succ[0].hash}}}
	if why := foreignDB([]pxEntry{put}, keys, own, 7); why != "" {
		t.Errorf("the db holding the log's own put: refused (%q)", why)
	}
}

// TestForeignDBUnnamedTombstone: the db's revision the log's put made
// deletes a key the log never names, and no entry revokes a lease or
// deletes a range: refused, naming no key it cannot name.
func TestForeignDBUnnamedTombstone(t *testing.T) {
	keys := newPxKeys()
	put := pxEntry{index: 10, kind: walfile.KindPut, succ: []pxOp{{key: keys.id([]byte("/registry/configmaps/demo/a")), hash: valueHash([]byte("v"))}}}
	x := &dbIndex{lo: 7, hi: 7, off: []int32{0, 1}, items: []dbItem{{key: -1, tomb: true}}}
	if why := foreignDB([]pxEntry{put}, keys, x, 7); !strings.Contains(why, "revision 7 deletes a key none of the log's entries") {
		t.Errorf("a plain put and a foreign deletion: %q, want a refusal", why)
	}
}
