package inspect

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/internal/embedetcd"
	"github.com/etcdpvc/etcdpvc/store"
)

// Keys the member tests write and alter.
const (
	memberChanged = "/registry/configmaps/demo/changed"
	memberRemoved = "/registry/configmaps/demo/removed"
	memberExtra   = "/registry/configmaps/demo/extra"
	memberSecret  = "/registry/secrets/demo/s"
)

// TestMembersDiverged runs a real 3-member etcd: writes (updates, a
// delete, a compaction), reads each member live through its own endpoint
// (they agree, and etcd's hashkv is equal on all), then stops the members,
// copies their db files and alters one offline with bbolt: a value changed,
// a key removed, a key added. Members names that member, each key and how,
// and the whole-range hash of each unaltered member equals the hashkv etcd
// answered before it stopped.
func TestMembersDiverged(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Members: 3})
	ctx := context.Background()
	cli := c.Client(t)
	put := func(k, v string) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, k, v)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	for i := range 20 {
		put(fmt.Sprintf("/registry/pods/demo/p%02d", i), fmt.Sprint("pod ", i))
	}
	put(memberChanged, "v1")
	rev := put(memberChanged, "v2")
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "/registry/pods/demo/p00"); err != nil {
		t.Fatal(err)
	}
	put(memberRemoved, "soon gone on one member")
	rev = put(memberSecret, "secret")

	// Live: each member read through its own endpoint, at one revision.
	var live []MemberSource
	want := map[string]store.HashKV{}
	for i := range 3 {
		ep := c.ClientURL(i)
		e, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: []string{ep}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		live = append(live, MemberSource{Name: ep, Reader: e})
		h, err := e.HashKV(ctx, rev)
		if err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprint(i)] = h
	}
	sum, recs := runMembers(t, live, MembersOptions{StorePrefix: "/registry", Rev: rev})
	if sum.Outcome != MembersAgree || !sum.HashesEqual || len(recs) != 0 || sum.Keys != 22 {
		t.Fatalf("live: outcome %s, hashes equal %v, %d records, %d keys: %s", sum.Outcome, sum.HashesEqual, len(recs), sum.Keys, MembersVerdict(sum))
	}
	for _, m := range sum.Members {
		if m.Keys != 22 || m.HashKV == nil || *m.HashKV != want["0"] {
			t.Errorf("live member %+v, want 22 keys and hash %+v", m, want["0"])
		}
	}

	c.Stop()
	dir := t.TempDir()
	var paths []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("m%d.db", i))
		copyFile(t, filepath.Join(c.DataDir(i), "member", "snap", "db"), p)
		paths = append(paths, p)
	}
	alterMember(t, paths[2], rev)

	open := func(ps ...string) []MemberSource {
		var srcs []MemberSource
		for _, p := range ps {
			b, err := store.OpenBolt(p, store.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			srcs = append(srcs, MemberSource{Name: filepath.Base(p), Reader: b})
		}
		return srcs
	}
	sum, recs = runMembers(t, open(paths...), MembersOptions{StorePrefix: "/registry", Rev: rev})
	if sum.Outcome != MembersDiverged || !cmp.Equal(sum.Diverged, []string{"m2.db"}) {
		t.Fatalf("files: outcome %s, diverged %v: %s", sum.Outcome, sum.Diverged, MembersVerdict(sum))
	}
	type got struct{ Key, Member, How string }
	var gots []got
	for _, r := range recs {
		if r.Majority != 2 || r.Members != 3 {
			t.Errorf("%s: majority %d of %d, want 2 of 3", r.Key, r.Majority, r.Members)
		}
		for _, d := range r.Diverged {
			gots = append(gots, got{r.Key, d.Member, d.How})
		}
	}
	wantRecs := []got{
		{memberChanged, "m2.db", MemberChanged},
		{memberExtra, "m2.db", MemberExtra},
		{memberRemoved, "m2.db", MemberMissing},
	}
	if d := cmp.Diff(wantRecs, gots); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	for i, m := range sum.Members {
		if i < 2 {
			if m.HashKV == nil || *m.HashKV != want[fmt.Sprint(i)] {
				t.Errorf("%s: HashKV %+v, etcd answered %+v before it stopped", m.Member, m.HashKV, want[fmt.Sprint(i)])
			}
			if m.Minority != 0 {
				t.Errorf("%s: minority on %d keys", m.Member, m.Minority)
			}
		} else if m.HashKV == nil || m.HashKV.Hash == want["2"].Hash || m.Minority != 3 {
			t.Errorf("altered %s: HashKV %+v (etcd answered %+v), minority %d: want another hash and 3 keys", m.Member, m.HashKV, want["2"], m.Minority)
		}
	}
	var pods, cms *MemberResourceTotal
	for _, tt := range sum.Totals {
		switch tt.Resource {
		case "configmaps":
			cms = tt
		case "pods":
			pods = tt
		}
	}
	if cms == nil || cms.Differ != 3 || !cms.HashesDiffer || pods != nil {
		t.Errorf("totals %+v: want configmaps with 3 keys and its hashes differing, pods not listed", sum.Totals)
	}
	var text bytes.Buffer
	w := MembersWriter{W: &text}
	for _, r := range recs {
		if err := w.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Summary(sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("text output:\n%s", text.String())
	for _, re := range []string{
		"CHANGED  m2.db  configmaps demo changed  value 28 bytes",
		"MISSING  m2.db  configmaps demo removed  absent; 2 of 3 hold it at mod revision",
		"EXTRA    m2.db  configmaps demo extra  held at mod revision",
		"diverged: m2.db differs from the majority on 3 keys; m0.db, m1.db (2 of 3) agree with each other on every one of the 23 keys",
	} {
		if !strings.Contains(text.String(), re) {
			t.Errorf("text output lacks %q:\n%s", re, text.String())
		}
	}

	// Two members: the keys, no majority named.
	sum, recs = runMembers(t, open(paths[0], paths[2]), MembersOptions{StorePrefix: "/registry", Rev: rev})
	if sum.Outcome != MembersDiffer || sum.Differ != 3 || sum.NoMajority != 3 || len(sum.Diverged) != 0 || !strings.Contains(MembersVerdict(sum), "no majority") {
		t.Errorf("two members: outcome %s, %d differ, %d without majority, diverged %v: %s", sum.Outcome, sum.Differ, sum.NoMajority, sum.Diverged, MembersVerdict(sum))
	}
	if len(recs) != 3 || !strings.HasPrefix(recs[0].Lines()[0], "DIFFERS  -  configmaps demo changed  m0.db: mod revision") {
		t.Errorf("two members: records %v", recs)
	}

	// The unaltered two agree.
	sum, _ = runMembers(t, open(paths[0], paths[1]), MembersOptions{StorePrefix: "/registry", Rev: rev})
	if sum.Outcome != MembersAgree || !sum.HashesEqual {
		t.Errorf("unaltered members: %s: %s", sum.Outcome, MembersVerdict(sum))
	}

	// An empty scope compares nothing: no verdict, never "agree".
	sum, _ = runMembers(t, open(paths...), MembersOptions{StorePrefix: "/registry", ListPrefix: "/registry/nothing/", Rev: rev})
	if sum.Outcome != MembersNothingCompared || sum.Keys != 0 || strings.Contains(MembersVerdict(sum), "agree") {
		t.Errorf("empty scope: %s: %s", sum.Outcome, MembersVerdict(sum))
	}

	// A member that cannot be opened, or read at the revision: incomplete.
	srcs := append(open(paths[0], paths[1]), MemberSource{Name: "gone.db", Err: errors.New("open gone.db: no such file")})
	sum, _ = runMembers(t, srcs, MembersOptions{StorePrefix: "/registry", Rev: rev})
	if sum.Outcome != MembersIncomplete || !strings.Contains(MembersVerdict(sum), "gone.db (open gone.db: no such file)") {
		t.Errorf("unopened member: %s: %s", sum.Outcome, MembersVerdict(sum))
	}
	sum, _ = runMembers(t, open(paths...), MembersOptions{StorePrefix: "/registry", Rev: 3})
	if sum.Outcome != MembersNothingCompared && sum.Outcome != MembersIncomplete || sum.Keys != 0 {
		t.Errorf("compacted revision: %s, %d keys: %s", sum.Outcome, sum.Keys, MembersVerdict(sum))
	}
	for _, m := range sum.Members {
		if !strings.Contains(m.Error, "compacted") {
			t.Errorf("compacted revision: %s: error %q", m.Member, m.Error)
		}
	}
}

// runMembers runs Members and collects its records.
func runMembers(t *testing.T, srcs []MemberSource, o MembersOptions) (*MembersSummary, []MemberRecord) {
	t.Helper()
	var recs []MemberRecord
	sum, err := Members(context.Background(), srcs, o, func(r MemberRecord) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatalf("Members: %v", err)
	}
	var out bytes.Buffer
	if err := (MembersWriter{W: &out, JSON: true}).Summary(sum); err != nil {
		t.Fatal(err)
	}
	return sum, recs
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// alterMember edits the db at path as a bad disk or a bug might: the
// newest value of memberChanged replaced, memberRemoved's only revision
// removed, memberExtra added as a second change of revision rev. The file
// stays a valid bbolt database.
func alterMember(t *testing.T, path string, rev int64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		kb := tx.Bucket([]byte("key"))
		var changed, removed []byte
		var changedKV *mvccpb.KeyValue
		if err := kb.ForEach(func(k, v []byte) error {
			kv := &mvccpb.KeyValue{}
			if err := proto.Unmarshal(v, kv); err != nil {
				return err
			}
			switch string(kv.Key) {
			case memberChanged:
				changed, changedKV = bytes.Clone(k), kv
			case memberRemoved:
				removed = bytes.Clone(k)
			}
			return nil
		}); err != nil {
			return err
		}
		if changed == nil || removed == nil {
			return errors.New("keys to alter not found")
		}
		changedKV.Value = []byte("altered by a bad disk, v3")
		changedKV.Value = append(changedKV.Value, 'x', 'y', 'z')
		v, err := proto.Marshal(changedKV)
		if err != nil {
			return err
		}
		if err := kb.Put(changed, v); err != nil {
			return err
		}
		if err := kb.Delete(removed); err != nil {
			return err
		}
		extra := &mvccpb.KeyValue{Key: []byte(memberExtra), Value: []byte("extra"), CreateRevision: rev, ModRevision: rev, Version: 1}
		ev, err := proto.Marshal(extra)
		if err != nil {
			return err
		}
		k := make([]byte, 17)
		binary.BigEndian.PutUint64(k, uint64(rev))
		k[8] = '_'
		binary.BigEndian.PutUint64(k[9:], 1)
		return kb.Put(k, ev)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMembersLiveAltered reads live members through their own endpoints
// after one was altered offline and restarted: three single-member etcds
// given the same writes (so the same revisions, values and hashkv, as the
// members of one cluster; a restarted member of a multi-member cluster
// needs its peers' configuration, which etcdtest does not expose), the
// third stopped, its db altered as in TestMembersDiverged, and started
// again on its data. The report names it, from live reads and etcd's own
// hashkv.
func TestMembersLiveAltered(t *testing.T) {
	ctx := context.Background()
	var servers []*liveMember
	for i := range 3 {
		m := &liveMember{dir: filepath.Join(t.TempDir(), fmt.Sprint("m", i)), name: fmt.Sprint("m", i)}
		m.start(t)
		servers = append(servers, m)
	}
	var rev int64
	for _, m := range servers {
		cli := m.client(t)
		for _, kv := range [][2]string{{memberChanged, "v1"}, {memberRemoved, "r"}, {"/registry/pods/demo/p", "pod"}, {memberChanged, "v2"}, {memberSecret, "s"}} {
			resp, err := cli.Put(ctx, kv[0], kv[1])
			if err != nil {
				t.Fatal(err)
			}
			rev = resp.Header.Revision
		}
	}
	bad := servers[2]
	bad.stop()
	alterMember(t, filepath.Join(bad.dir, "member", "snap", "db"), rev)
	bad.start(t)

	var srcs []MemberSource
	for _, m := range servers {
		e, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: []string{m.endpoint}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		srcs = append(srcs, MemberSource{Name: m.name, Reader: e})
	}
	sum, recs := runMembers(t, srcs, MembersOptions{StorePrefix: "/registry", Rev: rev})
	if sum.Outcome != MembersDiverged || !cmp.Equal(sum.Diverged, []string{"m2"}) || len(recs) != 3 {
		t.Fatalf("outcome %s, diverged %v, %d records: %s", sum.Outcome, sum.Diverged, len(recs), MembersVerdict(sum))
	}
	h0, h2 := sum.Members[0].HashKV, sum.Members[2].HashKV
	if h0 == nil || h2 == nil || !h0.Comparable(*h2) || h0.Hash == h2.Hash || *sum.Members[1].HashKV != *h0 {
		t.Errorf("hashes %+v, %+v, %+v: want the first two equal, the third another", h0, sum.Members[1].HashKV, h2)
	}
}

// liveMember is a single-member etcd on a data directory that outlives it.
type liveMember struct {
	name, dir, endpoint string
	client0, peer       url.URL
	e                   *embed.Etcd
}

// start starts (or starts again, on its data and at its URLs) the member.
func (m *liveMember) start(t *testing.T) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		if m.endpoint == "" || attempt > 0 {
			ports, err := embedetcd.FreePorts(2)
			if err != nil {
				t.Fatal(err)
			}
			m.client0 = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
			m.peer = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
			m.endpoint = m.client0.String()
		}
		cfg := embed.NewConfig()
		cfg.Name, cfg.Dir = m.name, m.dir
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{m.client0}, []url.URL{m.client0}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{m.peer}, []url.URL{m.peer}
		cfg.InitialCluster = m.name + "=" + m.peer.String()
		cfg.Logger, cfg.LogLevel = "zap", "error"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.EnableGRPCGateway = false
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			if embedetcd.AddrInUse(err) && attempt < 4 {
				continue
			}
			t.Fatal(err)
		}
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			e.Close()
			t.Fatal(err)
		case <-time.After(30 * time.Second):
			e.Close()
			t.Fatal("etcd not ready")
		}
		m.e = e
		t.Cleanup(m.stop)
		return
	}
}

func (m *liveMember) stop() {
	if m.e != nil {
		m.e.Close()
		m.e = nil
	}
}

func (m *liveMember) client(t *testing.T) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
