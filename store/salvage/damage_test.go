package salvage_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store/salvage"
)

// etcdDB is a member db and a snapshot written by a real etcd.
type etcdDB struct {
	memberDB, snapshot string
	// deletedBeforeCompaction are keys deleted before the compaction:
	// their tombstones and puts are gone from the tree, and freed pages
	// may still hold their puts.
	deletedBeforeCompaction []string
	leaseID                 int64
	leased                  []string
}

// writeEtcdDB starts a real etcd and writes keys keys with several
// revisions each, some of them large (overflow pages), some attached to a
// lease, some deleted (before and after a compaction), some deleted and
// created again; then it saves a snapshot and stops etcd.
func writeEtcdDB(t testing.TB, keys int) *etcdDB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	lease, err := cli.Grant(ctx, 7200)
	if err != nil {
		t.Fatal(err)
	}
	out := &etcdDB{leaseID: int64(lease.ID)}
	key := func(i int) string { return fmt.Sprintf("/registry/configmaps/ns-%d/cm-%05d", i%7, i) }
	value := func(i, round int) string {
		n := 50 + i%300
		if i%97 == 0 {
			n = 9000 + i // spans overflow pages
		}
		return strings.Repeat(fmt.Sprintf("%d.%d;", i, round), n/8+1)
	}
	run := func(n int, fn func(i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < n; i += 8 {
					if err := fn(i); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		run(keys, func(i int) error {
			var opts []clientv3.OpOption
			if i%13 == 0 {
				opts = append(opts, clientv3.WithLease(lease.ID))
			}
			_, err := cli.Put(ctx, key(i), value(i, round), opts...)
			return err
		})
	}
	for i := 0; i < keys; i += 13 {
		out.leased = append(out.leased, key(i))
	}
	// Deleted before the compaction.
	run(keys/20, func(i int) error {
		k := key(i*20 + 1)
		_, err := cli.Delete(ctx, k)
		return err
	})
	for i := range keys / 20 {
		if (i*20+1)%3 != 0 { // the others are written again below
			out.deletedBeforeCompaction = append(out.deletedBeforeCompaction, key(i*20+1))
		}
	}
	resp, err := cli.Put(ctx, "/registry/marker", "m")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	// After it: deletions, re-creations, more writes.
	run(keys/20, func(i int) error {
		_, err := cli.Delete(ctx, key(i*20+2))
		return err
	})
	run(keys/40, func(i int) error {
		_, err := cli.Put(ctx, key(i*40+2), "recreated")
		return err
	})
	run(keys/3, func(i int) error {
		_, err := cli.Put(ctx, key(i*3), value(i*3, 9))
		return err
	})
	out.snapshot = filepath.Join(t.TempDir(), "snapshot.db")
	cfg := clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, out.snapshot); err != nil {
		t.Fatal(err)
	}
	member := filepath.Join(c.DataDir(0), "member", "snap", "db")
	c.Stop()
	out.memberDB = copyFile(t, member, t.TempDir(), "member.db")
	return out
}

// damage is one way to damage a copy of a db.
type damage struct {
	name string
	// apply damages the file at path, described by d, and returns the
	// key bucket leaf pages it destroyed.
	apply func(t *testing.T, path string, d *dbPages) map[uint64]bool
	// partial: the damage loses data (the report must not be complete).
	partial bool
}

func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// newestMeta returns the meta page (0 or 1) with the higher txid.
func newestMeta(t *testing.T, path string, ps int) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint64(raw[ps+16+48:]) > binary.LittleEndian.Uint64(raw[16+48:]) {
		return 1
	}
	return 0
}

func damages() []damage {
	smashMeta := func(which func(newest int) []int) func(t *testing.T, path string, d *dbPages) map[uint64]bool {
		return func(t *testing.T, path string, d *dbPages) map[uint64]bool {
			for _, m := range which(newestMeta(t, path, d.pageSize)) {
				overwrite(t, path, int64(m*d.pageSize)+16+56, []byte("checksum"))
			}
			return nil
		}
	}
	return []damage{
		{name: "newest meta page", apply: smashMeta(func(n int) []int { return []int{n} })},
		{name: "older meta page", apply: smashMeta(func(n int) []int { return []int{1 - n} })},
		{name: "both meta pages", apply: smashMeta(func(int) []int { return []int{0, 1} })},
		{name: "freelist page", apply: func(t *testing.T, path string, d *dbPages) map[uint64]bool {
			if d.freelist >= uint64(d.size/int64(d.pageSize)) {
				t.Skip("no freelist page (written with NoFreelistSync)")
			}
			overwrite(t, path, int64(d.freelist)*int64(d.pageSize), randomBytes(1, d.pageSize))
			return nil
		}},
		{name: "key bucket branch page", apply: func(t *testing.T, path string, d *dbPages) map[uint64]bool {
			if len(d.branches) == 0 {
				t.Skip("the key bucket has no branch page")
			}
			overwrite(t, path, int64(d.branches[len(d.branches)/2])*int64(d.pageSize), randomBytes(2, d.pageSize))
			return nil
		}, partial: true},
		{name: "random leaf pages", apply: func(t *testing.T, path string, d *dbPages) map[uint64]bool {
			r := rand.New(rand.NewPCG(3, 3))
			lost := map[uint64]bool{}
			for range 4 {
				id := d.leaves[r.IntN(len(d.leaves))]
				lost[id] = true
				overwrite(t, path, int64(id)*int64(d.pageSize), randomBytes(uint64(id), d.pageSize))
			}
			return lost
		}, partial: true},
		{name: "leaf page items", apply: func(t *testing.T, path string, d *dbPages) map[uint64]bool {
			// The header and the elements survive; the second half of the
			// items' keys and values does not.
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range d.leaves[len(d.leaves)/3:] {
				p := raw[int(id)*d.pageSize:]
				count := int(binary.LittleEndian.Uint16(p[10:]))
				if d.overflow[id] != 0 || count < 4 {
					continue
				}
				end := 0
				for i := range count {
					e := p[16+i*16:]
					end = max(end, 16+i*16+int(binary.LittleEndian.Uint32(e[4:])+binary.LittleEndian.Uint32(e[8:])+binary.LittleEndian.Uint32(e[12:])))
				}
				from := (16 + count*16 + end) / 2
				overwrite(t, path, int64(id)*int64(d.pageSize)+int64(from), randomBytes(4, end-from))
				return map[uint64]bool{id: true}
			}
			t.Skip("no leaf page of 4 items without overflow")
			return nil
		}, partial: true},
		{name: "truncated", apply: func(t *testing.T, path string, d *dbPages) map[uint64]bool {
			cut := d.dataSize * 6 / 10
			cut -= cut % int64(d.pageSize)
			cut += 100 // inside a page
			if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}
			lost := map[uint64]bool{}
			for _, id := range d.leaves {
				end := (int64(id) + 1 + int64(d.overflow[id])) * int64(d.pageSize)
				if end > cut {
					lost[id] = true
				}
			}
			return lost
		}, partial: true},
	}
}

// checkSalvage compares the salvage of a damaged copy with the original.
func checkSalvage(t *testing.T, d *dbPages, rep *salvage.Report, out string, lost map[uint64]bool, partial bool, deletedBeforeCompaction []string) {
	t.Helper()
	var text strings.Builder
	_ = rep.WriteText(&text)
	defer func() {
		if t.Failed() {
			t.Logf("report:\n%s", text.String())
		}
	}()
	want, affected := d.expectLatest(lost)
	all := map[string]bool{} // every revision key of the original
	byRev := map[string][]byte{}
	newest := map[string]revEntry{}
	for _, r := range d.revs {
		all[r.revKey()] = true
		byRev[r.revKey()] = r.enc
		newest[r.key] = r
	}
	got := map[string]revEntry{}
	for rk, enc := range rawRevs(t, out) {
		var m mvccpb.KeyValue
		if err := proto.Unmarshal(enc, &m); err != nil {
			t.Fatalf("salvaged %x: %v", rk, err)
		}
		got[string(m.Key)] = revEntry{main: m.ModRevision, key: string(m.Key), enc: enc}
		if orig, ok := byRev[rk]; ok && !bytes.Equal(orig, enc) {
			t.Errorf("%s at %x: bytes differ from the original's", m.Key, rk)
		}
	}
	if rep.Keys != len(got) {
		t.Errorf("report: %d keys, the file holds %d", rep.Keys, len(got))
	}
	uncertain := map[string]bool{} // reported uncertain, or possibly stale
	for _, u := range rep.Uncertain {
		uncertain[u.Key] = true
	}
	if len(rep.PossiblyStaleKeys) != min(rep.PossiblyStale, salvage.MaxListed) {
		t.Errorf("%d possibly stale keys listed of %d", len(rep.PossiblyStaleKeys), rep.PossiblyStale)
	}
	for _, k := range rep.PossiblyStaleKeys {
		uncertain[k] = true
	}
	// Every key whose newest revision's page survived: byte for byte.
	for k, w := range want {
		if affected[k] {
			continue
		}
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: not recovered (newest revision %d_%d survived)", k, w.main, w.sub)
			continue
		}
		if !bytes.Equal(g.enc, w.enc) {
			t.Errorf("%s: recovered at %d, want %d", k, g.main, w.main)
		}
	}
	// Nothing invented, nothing resurrected unless reported.
	staleKept := 0
	for k, g := range got {
		n, known := newest[k]
		switch {
		case !known:
			// Only on a freed page: a key compaction removed entirely.
			if !uncertain[k] {
				t.Errorf("%s: recovered at %d but not in the original's tree, and not reported uncertain or possibly stale", k, g.main)
			}
		case affected[k]:
			if g.main != n.main {
				staleKept++
			}
		case n.tomb:
			if !uncertain[k] {
				t.Errorf("%s: deleted in the original, recovered at %d, not reported uncertain", k, g.main)
			}
		}
	}
	for _, k := range deletedBeforeCompaction {
		if _, ok := got[k]; ok && !uncertain[k] {
			t.Errorf("%s: deleted before the compaction, resurrected without being reported uncertain", k)
		}
	}
	if staleKept > rep.PossiblyStale {
		t.Errorf("%d keys kept at an older revision than the original's newest (its page lost), report says %d possibly stale", staleKept, rep.PossiblyStale)
	}
	if partial && rep.Complete {
		t.Errorf("damaged file reported complete")
	}
	if len(lost) > 0 && len(rep.LostRanges) == 0 && rep.Tree != "" {
		t.Errorf("%d key pages lost, no lost range reported", len(lost))
	}
	t.Logf("lost %d leaf pages, %d keys affected; recovered %d, dropped %d, uncertain %d, possibly stale %d, lost ranges %d, unreadable pages %d",
		len(lost), len(affected), rep.Keys, len(rep.Dropped), len(rep.Uncertain), rep.PossiblyStale, len(rep.LostRanges), rep.PagesUnreadable)
}

func TestSalvageDamaged(t *testing.T) {
	var db *etcdDB
	sources := []struct{ name, path string }{
		{name: "corpus snapshot", path: corpusSnapshot},
		{name: "corpus with freelist", path: withFreelist(t, corpusSnapshot)},
	}
	if !testing.Short() {
		db = writeEtcdDB(t, 3000)
		sources = append(sources, struct{ name, path string }{"etcd member db", db.memberDB}, struct{ name, path string }{"etcd snapshot", db.snapshot})
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			orig := copyFile(t, src.path, t.TempDir(), "orig.db")
			d := describe(t, orig)
			var deleted []string
			if db != nil {
				deleted = db.deletedBeforeCompaction
			}
			t.Run("undamaged", func(t *testing.T) {
				rep, out := salvageFile(t, orig, salvage.Options{})
				if !rep.Complete {
					t.Error("undamaged file not complete")
				}
				if diff := cmpLatest(latest(t, orig), latest(t, out)); diff != "" {
					t.Errorf("newest state (-original +salvaged):\n%s", diff)
				}
				checkSalvage(t, d, rep, out, nil, false, deleted)
			})
			for _, dm := range damages() {
				t.Run(dm.name, func(t *testing.T) {
					p := copyFile(t, orig, t.TempDir(), "damaged.db")
					lost := dm.apply(t, p, d)
					before, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					rep, out := salvageFile(t, p, salvage.Options{})
					if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
						t.Fatal("the input was written")
					}
					checkSalvage(t, d, rep, out, lost, dm.partial, deleted)
				})
			}
		})
	}
}

// withFreelist returns a copy of the db at path that bbolt has written a
// freelist page to: one transaction rewriting a meta item unchanged, with
// the freelist synced (etcd itself writes none).
func withFreelist(t *testing.T, path string) string {
	t.Helper()
	p := copyFile(t, path, t.TempDir(), "freelist.db")
	if fi, _ := os.Stat(p); fi.Size()%512 == 32 {
		if err := os.Truncate(p, fi.Size()-32); err != nil {
			t.Fatal(err)
		}
	}
	db, err := bolt.Open(p, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		mb := tx.Bucket([]byte("meta"))
		k, v := mb.Cursor().First()
		return mb.Put(bytes.Clone(k), bytes.Clone(v))
	}); err != nil {
		t.Fatal(err)
	}
	return p
}

// cmpLatest compares two newest states, key for key.
func cmpLatest(a, b map[string]storeKV) string {
	var diffs []string
	for k, v := range a {
		w, ok := b[k]
		switch {
		case !ok:
			diffs = append(diffs, "-"+k)
		case !kvEqual(v, w):
			diffs = append(diffs, fmt.Sprintf("~%s: %d → %d", k, v.ModRevision, w.ModRevision))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, "+"+k)
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "\n")
}
