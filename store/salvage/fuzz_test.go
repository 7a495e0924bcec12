package salvage_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/server/v3/lease/leasepb"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/store/salvage"
)

// op is one write of smallDB: a put (value) or a delete (del) of key;
// sameRev gives it the main revision of the op before it (which etcd
// never writes).
type op struct {
	key, value string
	del        bool
	sameRev    bool
}

// smallDB writes ops as etcd would store them, one main revision each,
// into a new bbolt file with 1 KiB pages (so that a few dozen revisions
// take several pages, a branch page and an overflow page), with a lease
// and a compaction in "meta", and returns its bytes.
func smallDB(t testing.TB, ops []op) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "small.db")
	db, err := bolt.Open(p, 0o600, &bolt.Options{PageSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		kb, _ := tx.CreateBucket([]byte("key"))
		mb, _ := tx.CreateBucket([]byte("meta"))
		lb, _ := tx.CreateBucket([]byte("lease"))
		if _, err := tx.CreateBucket([]byte("members")); err != nil {
			return err
		}
		created, version := map[string]int64{}, map[string]int64{}
		rev := int64(1)
		for _, o := range ops {
			if !o.sameRev {
				rev++
			}
			k := make([]byte, 17, 18)
			binary.BigEndian.PutUint64(k, uint64(rev))
			k[8] = '_'
			m := &mvccpb.KeyValue{Key: []byte(o.key)}
			if o.del {
				k = append(k, 't')
				delete(created, o.key)
				version[o.key] = 0
			} else {
				if created[o.key] == 0 {
					created[o.key] = rev
				}
				version[o.key]++
				m = &mvccpb.KeyValue{Key: []byte(o.key), Value: []byte(o.value), CreateRevision: created[o.key], ModRevision: rev, Version: version[o.key], Lease: 0x1234}
			}
			enc, err := proto.Marshal(m)
			if err != nil {
				return err
			}
			if err := kb.Put(k, enc); err != nil {
				return err
			}
		}
		rk := make([]byte, 17)
		binary.BigEndian.PutUint64(rk, 2)
		rk[8] = '_'
		if err := mb.Put([]byte("finishedCompactRev"), rk); err != nil {
			return err
		}
		if err := mb.Put([]byte("scheduledCompactRev"), rk); err != nil {
			return err
		}
		lv, _ := proto.Marshal(&leasepb.Lease{ID: 0x1234, TTL: 60})
		lk := make([]byte, 8)
		binary.BigEndian.PutUint64(lk, 0x1234)
		return lb.Put(lk, lv)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// smallOps is a history with several revisions per key, deletions, a
// re-creation, values the test's Readable refuses ("bad") and one value
// larger than a page.
func smallOps() []op {
	var ops []op
	for i := range 12 {
		k := "/registry/configmaps/demo/cm-" + string(rune('a'+i))
		ops = append(ops, op{key: k, value: strings.Repeat("v1.", 10+i)})
	}
	ops = append(ops,
		op{key: "/registry/configmaps/demo/cm-a", value: "bad newer"},                 // fall back to v1
		op{key: "/registry/configmaps/demo/cm-b", del: true},                          // deleted
		op{key: "/registry/configmaps/demo/cm-c", del: true},                          //
		op{key: "/registry/configmaps/demo/cm-c", value: "bad recreated"},             // dropped: never across a deletion
		op{key: "/registry/configmaps/demo/cm-d", value: strings.Repeat("big.", 600)}, // overflow
		op{key: "/registry/configmaps/demo/cm-e", del: true},
		op{key: "/registry/configmaps/demo/cm-e", value: "recreated"},
	)
	for i := range 30 {
		ops = append(ops, op{key: "/registry/pods/demo/p-" + string(rune('a'+i%10)), value: strings.Repeat("pod.", 5+i)})
	}
	return ops
}

func badReadable(_ string, v []byte) error {
	if bytes.HasPrefix(v, []byte("bad")) {
		return errors.New("cannot decode")
	}
	return nil
}

func TestSalvageReadable(t *testing.T) {
	b := smallDB(t, smallOps())
	res, err := salvage.Scan(context.Background(), bytes.NewReader(b), int64(len(b)), salvage.Options{Readable: badReadable})
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report
	if rep.PageSize != 1024 || rep.Tree == "" || rep.Complete {
		t.Errorf("page size %d tree %q complete %v (keys were dropped)", rep.PageSize, rep.Tree, rep.Complete)
	}
	dropped := map[string]salvage.Drop{}
	for _, d := range rep.Dropped {
		dropped[d.Key] = d
	}
	if d, ok := dropped["/registry/configmaps/demo/cm-a"]; !ok || d.Kept.Main != 2 || d.Revision.Main != 14 {
		t.Errorf("cm-a: %+v, want revision 14 unreadable, 2 kept", d)
	}
	if d, ok := dropped["/registry/configmaps/demo/cm-c"]; !ok || d.Kept.Main != 0 {
		t.Errorf("cm-c: %+v, want dropped with nothing kept (its readable revision is before a deletion)", d)
	}
	if len(rep.Dropped) != 2 {
		t.Errorf("dropped %+v", rep.Dropped)
	}
	// 12 configmaps + 10 pods; cm-b deleted, cm-c dropped.
	if rep.Keys != 20 || rep.Deleted != 1 {
		t.Errorf("keys %d deleted %d, want 20 and 1", rep.Keys, rep.Deleted)
	}
	if rep.Leases != 1 || rep.LeasesMissing != 0 || rep.CompactRevision != 2 {
		t.Errorf("leases %d missing %d compaction %d", rep.Leases, rep.LeasesMissing, rep.CompactRevision)
	}
	if rep.PagesOverflow == 0 {
		t.Error("no overflow page read")
	}
}

func TestScanRejectsNonBolt(t *testing.T) {
	for _, in := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte{0}, 1<<16), bytes.Repeat([]byte("etcd"), 1<<14)} {
		if _, err := salvage.Scan(context.Background(), bytes.NewReader(in), int64(len(in)), salvage.Options{}); !errors.Is(err, salvage.ErrNotBolt) {
			t.Errorf("%d bytes: %v, want ErrNotBolt", len(in), err)
		}
	}
}

func TestScanCancelled(t *testing.T) {
	b := smallDB(t, smallOps())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := salvage.Scan(ctx, bytes.NewReader(b), int64(len(b)), salvage.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled scan: %v", err)
	}
}

// fuzzSeeds are small real dbs and damaged variants of them.
func fuzzSeeds(t testing.TB) [][]byte {
	b := smallDB(t, smallOps())
	ps := 1024
	variant := func(f func(c []byte) []byte) []byte { return f(bytes.Clone(b)) }
	seeds := [][]byte{
		b,
		variant(func(c []byte) []byte { copy(c[16+56:], "xxxxxxxx"); return c }),                                 // meta 0
		variant(func(c []byte) []byte { copy(c[16+56:], "xxxxxxxx"); copy(c[ps+16+56:], "xxxxxxxx"); return c }), // both metas
		variant(func(c []byte) []byte { return c[:len(c)*2/3+100] }),                                             // truncated
		variant(func(c []byte) []byte { // a page in the middle
			copy(c[len(c)/2/ps*ps:], bytes.Repeat([]byte{0xa5}, ps))
			return c
		}),
		variant(func(c []byte) []byte { // every element's position
			for off := 2 * ps; off+32 < len(c); off += ps {
				binary.LittleEndian.PutUint32(c[off+16+4:], 0xfffffff0)
			}
			return c
		}),
		variant(func(c []byte) []byte { // overflow counts
			for off := 2 * ps; off+16 < len(c); off += ps {
				binary.LittleEndian.PutUint32(c[off+12:], 0xffffffff)
			}
			return c
		}),
		variant(func(c []byte) []byte { // element counts
			for off := 2 * ps; off+16 < len(c); off += ps {
				binary.LittleEndian.PutUint16(c[off+10:], 0xffff)
			}
			return c
		}),
	}
	return seeds
}

func TestScanSeeds(t *testing.T) {
	for i, s := range fuzzSeeds(t) {
		res, err := salvage.Scan(context.Background(), bytes.NewReader(s), int64(len(s)), salvage.Options{Readable: badReadable})
		if err != nil {
			t.Errorf("seed %d: %v", i, err)
			continue
		}
		out := filepath.Join(t.TempDir(), "out.db")
		if _, err := res.WriteSnapshot(context.Background(), out); err != nil {
			t.Errorf("seed %d: write: %v", i, err)
		}
	}
}

// FuzzScan scans damaged files: no panic, no hang, and no allocation out
// of proportion to the input.
func FuzzScan(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := salvage.Scan(context.Background(), bytes.NewReader(in), int64(len(in)), salvage.Options{Readable: badReadable})
		runtime.ReadMemStats(&after)
		if err != nil {
			if !errors.Is(err, salvage.ErrNotBolt) {
				t.Fatalf("scan: %v", err)
			}
			return
		}
		if err := res.Report.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(64*len(in)+(8<<20)); got > limit {
			t.Fatalf("allocated %d bytes for a %d-byte input", got, len(in))
		}
	})
}
