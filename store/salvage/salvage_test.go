package salvage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/salvage"
)

const corpusSnapshot = "../../fixtures/corpus/etcd-snapshot.db"

// copyFile copies src into dir and returns the copy's path.
func copyFile(t testing.TB, src, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// latest is a db's newest state: key → its newest live revision, as
// store.OpenBolt reads it.
func latest(t testing.TB, path string) map[string]store.KeyValue {
	t.Helper()
	b, err := store.OpenBolt(path, store.BoltOptions{SkipHashCheck: true})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer b.Close()
	out := map[string]store.KeyValue{}
	if err := b.ScanLatest(context.Background(), "", false, func(kv *store.KeyValue, _ bool, _ int64) error {
		out[kv.Key] = *kv
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// revEntry is one item of a db's "key" bucket.
type revEntry struct {
	main, sub int64
	tomb      bool
	key       string
	enc       []byte
}

// dbPages describes an undamaged db as bbolt sees it: its page size,
// every "key" bucket entry, and which page holds each entry.
type dbPages struct {
	pageSize int
	revs     []revEntry
	// pageOf maps a revision key to the leaf page holding it.
	pageOf map[string]uint64
	// leaves, branches: the key bucket's pages; other: every other page
	// in use (meta, freelist, other buckets).
	leaves, branches []uint64
	overflow         map[uint64]uint32
	freelist         uint64
	// size is the file's size, dataSize without a snapshot trailer.
	size, dataSize int64
}

// storeKV is a key's newest revision as store reads it.
type storeKV = store.KeyValue

func kvEqual(a, b storeKV) bool {
	return a.Key == b.Key && bytes.Equal(a.Value, b.Value) && a.CreateRevision == b.CreateRevision &&
		a.ModRevision == b.ModRevision && a.Version == b.Version && a.Lease == b.Lease
}

// describe reads path (undamaged) with bbolt.
func describe(t testing.TB, path string) *dbPages {
	t.Helper()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := &dbPages{pageSize: db.Info().PageSize, pageOf: map[string]uint64{}, overflow: map[uint64]uint32{}}
	err = db.View(func(tx *bolt.Tx) error {
		kb := tx.Bucket([]byte("key"))
		if err := kb.ForEach(func(k, v []byte) error {
			var m mvccpb.KeyValue
			if err := proto.Unmarshal(v, &m); err != nil {
				return err
			}
			d.revs = append(d.revs, revEntry{
				main: int64(binary.BigEndian.Uint64(k[:8])), sub: int64(binary.BigEndian.Uint64(k[9:17])),
				tomb: len(k) == 18, key: string(m.Key), enc: bytes.Clone(v),
			})
			return nil
		}); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Page ownership from the raw file: follow the key bucket's tree.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := d.pageSize
	d.size, d.dataSize = int64(len(raw)), int64(len(raw))
	if d.size%512 == 32 {
		d.dataSize -= 32
	}
	page := func(id uint64) []byte { return raw[int(id)*ps:] }
	hdr := func(b []byte) (flags, count uint16, overflow uint32) {
		return binary.LittleEndian.Uint16(b[8:]), binary.LittleEndian.Uint16(b[10:]), binary.LittleEndian.Uint32(b[12:])
	}
	m0, m1 := page(0)[16:], page(1)[16:]
	m := m0
	if binary.LittleEndian.Uint64(m1[48:]) > binary.LittleEndian.Uint64(m0[48:]) {
		m = m1
	}
	d.freelist = binary.LittleEndian.Uint64(m[32:])
	root := binary.LittleEndian.Uint64(m[16:])
	var keyRoot uint64
	{
		p := page(root)
		flags, count, _ := hdr(p)
		if flags != 2 {
			t.Fatalf("root page %d is not a leaf", root)
		}
		for i := range int(count) {
			e := p[16+i*16:]
			pos, ks := binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:])
			k := e[pos : pos+ks]
			if string(k) == "key" {
				keyRoot = binary.LittleEndian.Uint64(e[pos+ks:])
			}
		}
	}
	if keyRoot == 0 {
		t.Fatal("key bucket is inline: the test needs a db with a key bucket of its own")
	}
	var walk func(id uint64)
	walk = func(id uint64) {
		p := page(id)
		flags, count, _ := hdr(p)
		switch flags {
		case 1:
			d.branches = append(d.branches, id)
			for i := range int(count) {
				e := p[16+i*16:]
				walk(binary.LittleEndian.Uint64(e[8:]))
			}
		case 2:
			d.leaves = append(d.leaves, id)
			_, _, d.overflow[id] = hdr(p)
			for i := range int(count) {
				e := p[16+i*16:]
				pos, ks := binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:])
				d.pageOf[string(e[pos:pos+ks])] = id
			}
		default:
			t.Fatalf("key bucket page %d has flags %#x", id, flags)
		}
	}
	walk(keyRoot)
	return d
}

// revKey is the key bucket key of an entry.
func (r revEntry) revKey() string {
	k := make([]byte, 17, 18)
	binary.BigEndian.PutUint64(k, uint64(r.main))
	k[8] = '_'
	binary.BigEndian.PutUint64(k[9:], uint64(r.sub))
	if r.tomb {
		k = append(k, 't')
	}
	return string(k)
}

// expectLatest is the newest state a salvage should recover when the
// pages in lost are gone: for each key, its newest entry among those not
// on a lost page; a key whose newest surviving entry is a tombstone is
// absent. It also returns the keys whose newest entry was lost (they may
// be recovered at an older revision, or not at all).
func (d *dbPages) expectLatest(lost map[uint64]bool) (want map[string]revEntry, affected map[string]bool) {
	newest := map[string]revEntry{}
	trueNewest := map[string]revEntry{}
	for _, r := range d.revs {
		trueNewest[r.key] = r
		if lost[d.pageOf[r.revKey()]] {
			continue
		}
		newest[r.key] = r
	}
	want, affected = map[string]revEntry{}, map[string]bool{}
	for k, r := range newest {
		if !r.tomb {
			want[k] = r
		}
	}
	for k, r := range trueNewest {
		if n, ok := newest[k]; !ok || n.main != r.main || n.sub != r.sub {
			affected[k] = true
		}
	}
	return want, affected
}

// salvageFile scans path and writes the result; it returns the report
// and the salvaged file's newest state (nil when nothing was written).
func salvageFile(t testing.TB, path string, opts salvage.Options) (*salvage.Report, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "salvaged.db")
	res, w, err := salvage.SalvageFile(context.Background(), path, out, opts)
	if err != nil {
		t.Fatalf("salvage %s: %v", path, err)
	}
	if w.Revisions != res.Report.Keys {
		t.Errorf("wrote %d revisions for %d keys", w.Revisions, res.Report.Keys)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("output mode %v, want 0600", fi.Mode().Perm())
	}
	if fi.Size()%512 != 32 {
		t.Errorf("output size %d: no sha256 trailer", fi.Size())
	}
	return res.Report, out
}

// rawRevs reads a salvaged db's key bucket: revision key → KeyValue bytes.
func rawRevs(t testing.TB, path string) map[string][]byte {
	t.Helper()
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatalf("open salvaged %s: %v", path, err)
	}
	b.Close()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string][]byte{}
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("key")).ForEach(func(k, v []byte) error {
			out[string(k)] = bytes.Clone(v)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSalvageUndamagedCorpus(t *testing.T) {
	in := copyFile(t, corpusSnapshot, t.TempDir(), "snap.db")
	rep, out := salvageFile(t, in, salvage.Options{})
	if !rep.Complete {
		var b strings.Builder
		_ = rep.WriteText(&b)
		t.Errorf("undamaged file not complete:\n%s", b.String())
	}
	if rep.Trailer != "matches" {
		t.Errorf("trailer %q, want matches", rep.Trailer)
	}
	want, got := latest(t, in), latest(t, out)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("salvaged newest state (-original +salvaged):\n%s", diff)
	}
	if rep.Keys != len(want) {
		t.Errorf("report: %d keys, want %d", rep.Keys, len(want))
	}
	d := describe(t, in)
	wantRevs, _ := d.expectLatest(nil)
	gotRevs := rawRevs(t, out)
	if len(gotRevs) != len(wantRevs) {
		t.Errorf("%d revisions written, want %d", len(gotRevs), len(wantRevs))
	}
	for _, r := range wantRevs {
		if !bytes.Equal(gotRevs[r.revKey()], r.enc) {
			t.Errorf("%s at %d_%d: not byte for byte", r.key, r.main, r.sub)
		}
	}
	var buf strings.Builder
	_ = rep.WriteText(&buf)
	t.Logf("report:\n%s", buf.String())
}

func TestSalvageRefusesExistingOutput(t *testing.T) {
	dir := t.TempDir()
	in := copyFile(t, corpusSnapshot, dir, "snap.db")
	out := filepath.Join(dir, "exists.db")
	if err := os.WriteFile(out, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := salvage.SalvageFile(context.Background(), in, out, salvage.Options{})
	if !errors.Is(err, store.ErrOutputExists) {
		t.Fatalf("err %v, want ErrOutputExists", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep me" {
		t.Fatal("existing output changed")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// TestSalvageHashCache: a salvage that verifies the trailer records it;
// the next one of the same unchanged file takes the record instead of
// hashing again, and a record of a file the scan finds damaged is not
// taken: the file is hashed after all.
func TestSalvageHashCache(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	in := copyFile(t, corpusSnapshot, dir, "snap.db")
	opts := salvage.Options{HashCacheDir: cache}
	rep, _ := salvageFile(t, in, opts)
	if rep.Trailer != "matches" || rep.TrailerVerifiedEarlier {
		t.Fatalf("first salvage: trailer %q, verified earlier %v; want matches, hashed", rep.Trailer, rep.TrailerVerifiedEarlier)
	}
	// The record is the one store.OpenBolt keeps.
	b, err := store.OpenBolt(in, store.BoltOptions{HashCacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	snap := b.Snapshot()
	b.Close()
	if !snap.VerifiedEarlier {
		t.Error("store.OpenBolt did not take the salvage's record")
	}
	if whole, err := os.ReadFile(in); err != nil {
		t.Fatal(err)
	} else if sum := sha256.Sum256(whole); hex.EncodeToString(sum[:]) != snap.FileSHA256 {
		t.Errorf("file sha256 from the salvage's record %q, want %x", snap.FileSHA256, sum)
	}
	rep, out := salvageFile(t, in, opts)
	if rep.Trailer != "matches" || !rep.TrailerVerifiedEarlier || !rep.Complete {
		t.Fatalf("second salvage: trailer %q, verified earlier %v, complete %v; want matches from the record", rep.Trailer, rep.TrailerVerifiedEarlier, rep.Complete)
	}
	var text strings.Builder
	_ = rep.WriteText(&text)
	if !strings.Contains(text.String(), "verified by an earlier run") {
		t.Errorf("the report does not say the trailer was verified earlier:\n%s", text.String())
	}
	if diff := cmp.Diff(latest(t, in), latest(t, out)); diff != "" {
		t.Errorf("salvaged newest state (-original +salvaged):\n%s", diff)
	}

	// A leaf page damaged, and a record that (wrongly) says the damaged
	// file was verified, as if it had rotted unchanged in place.
	d := describe(t, in)
	id := d.leaves[len(d.leaves)/2]
	overwrite(t, in, int64(id)*int64(d.pageSize), randomBytes(9, d.pageSize))
	fi, err := os.Stat(in)
	if err != nil {
		t.Fatal(err)
	}
	store.RememberTrailerVerified(cache, in, fi, snap.SHA256, snap.FileSHA256)
	rep, _ = salvageFile(t, in, opts)
	if rep.Trailer != "mismatch" || rep.TrailerVerifiedEarlier || rep.Complete {
		t.Errorf("damaged: trailer %q, verified earlier %v, complete %v; want mismatch, hashed, incomplete", rep.Trailer, rep.TrailerVerifiedEarlier, rep.Complete)
	}
}

// TestSalvageFileAsScan: SalvageFile, which writes while finish runs,
// writes byte for byte the file and the report Scan and WriteSnapshot
// make, whether every newest revision is kept, a value fails the judge,
// or what finish keeps is not what was written first (a deletion at a
// put's own revision), on undamaged and damaged files.
func TestSalvageFileAsScan(t *testing.T) {
	sameRev := append(smallOps(), op{key: "/registry/configmaps/demo/cm-f", value: "put"}, op{key: "/registry/configmaps/demo/cm-f", del: true, sameRev: true})
	inputs := map[string][]byte{"same revision": smallDB(t, sameRev)}
	for i, s := range fuzzSeeds(t) {
		inputs[fmt.Sprintf("seed %d", i)] = s
	}
	checks := map[string]func(string, []byte) error{"none": nil, "bad": badReadable}
	for name, in := range inputs {
		for cname, readable := range checks {
			t.Run(name+", readable "+cname, func(t *testing.T) {
				opts := salvage.Options{Readable: readable}
				ctx := context.Background()
				dir := t.TempDir()
				want, err := salvage.Scan(ctx, bytes.NewReader(in), int64(len(in)), opts)
				if err != nil {
					t.Fatal(err)
				}
				wantW, err := want.WriteSnapshot(ctx, filepath.Join(dir, "want.db"))
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(dir, "in.db")
				if err := os.WriteFile(p, in, 0o600); err != nil {
					t.Fatal(err)
				}
				got, gotW, err := salvage.SalvageFile(ctx, p, filepath.Join(dir, "got.db"), opts)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want.Report, got.Report); diff != "" {
					t.Errorf("report (-Scan +SalvageFile):\n%s", diff)
				}
				wantW.Path, gotW.Path = "", ""
				if diff := cmp.Diff(wantW, gotW); diff != "" {
					t.Errorf("written (-WriteSnapshot +SalvageFile):\n%s", diff)
				}
				a, _ := os.ReadFile(filepath.Join(dir, "want.db"))
				b, _ := os.ReadFile(filepath.Join(dir, "got.db"))
				if !bytes.Equal(a, b) {
					t.Errorf("SalvageFile wrote %d bytes, not the %d WriteSnapshot writes", len(b), len(a))
				}
				ents, _ := os.ReadDir(dir)
				if len(ents) != 3 {
					t.Errorf("files left: %v", ents)
				}
			})
		}
	}
}
