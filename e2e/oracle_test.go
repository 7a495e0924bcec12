package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Where the truth-oracle test writes: objects through the apiserver in
// oracleNS, raw etcd writes (ConfigMaps as JSON, which the apiserver
// reads) under oracleRaw.
const (
	oracleNS  = "oracle"
	oracleRaw = "/registry/configmaps/oracle-raw/"
)

// oracleEtcdFlags make the member purge its log as a busy one does: a raft
// snapshot every 50 entries, and only the newest wal file kept once etcd
// has released the older ones (it purges every 30s). A wal file is cut at
// 64 MB (wal.SegmentSizeBytes, not a flag), which the test fills.
var oracleEtcdFlags = []string{"--snapshot-count=50", "--snapshot-catchup-entries=50", "--max-wals=1", "--max-snapshots=1"}

// TestWALTruthOracle checks every claim etcdpvc makes from a member's
// purged write-ahead log against the truth: a clientv3 watch from revision
// 1 of the whole keyspace, started before any traffic, records every event
// etcd made. The traffic is the apiserver's (ConfigMaps and a Secret
// created, updated, deleted, deleted and created again) and the raw etcd
// operations a real cluster's log also holds: puts, deletes, a prefix
// delete of keys created before the log, transactions comparing each
// target (version, create, mod, value, lease) taken and failed, nested
// ones, leases granted before the log and inside it, revoked and expired,
// compactions. etcd itself purges the member's first wal file
// (--max-wals). The log is read over the member's own db (copied once
// etcd stopped), over an older snapshot taken inside the log before most
// of the traffic, over a second one taken after a compaction and before
// the nested transactions, and over the first as --wal-base with the
// member's db as --db. Every claim of ls -A --deleted, history, get
// --rev, get --index, recover (-o json and --dry-run) and snapshot --index
// (over each older snapshot, read back with bbolt) is compared with the
// oracle: a claim that disagrees is wrong and fails the test; "not
// established" is allowed and counted. The table of wrong claims and the
// shares established are logged.
func TestWALTruthOracle(t *testing.T) {
	began := time.Now()
	c := startCluster(t, "oracle", ClusterOptions{EtcdFlags: oracleEtcdFlags})
	orc := startOracle(t, c.Etcd)
	c.EnsureNamespace(t, oracleNS)
	s := &oracleScenario{t: t, c: c, ctx: context.Background()}
	dataDir := filepath.Join(c.Dir, "etcd-data", "member")

	// Before the log.
	for _, name := range []string{"keep", "upd-del", "pre-del", "twice"} {
		s.createCM(name, "0")
	}
	s.createSecret("sec-del")
	for i := range 4 {
		s.put(fmt.Sprintf("pfx-%d", i), "0")
	}
	s.put("single-pre", "0")
	s.put("tv", "one")
	s.put("cmp", "0")
	s.put("twice-raw", "0")
	l1 := s.grant(3600)
	s.put("lease1-a", "0", clientv3.WithLease(l1))
	s.put("lease1-b", "0", clientv3.WithLease(l1))
	// A lease from before the log that expires inside it: kept alive until
	// then.
	l2 := s.grant(4)
	s.put("exp2-a", "0", clientv3.WithLease(l2))
	keepCtx, stopKeep := context.WithCancel(s.ctx)
	defer stopKeep()
	keep, err := c.Etcd.KeepAlive(keepCtx, l2)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range keep {
		}
	}()

	// The first wal file filled, so that etcd cuts the next one: the log
	// that survives the purge starts there.
	walDir := filepath.Join(dataDir, "wal")
	filler := bytes.Repeat([]byte("f"), 1_000_000)
	var fillerRev int64
	for i := 0; walFiles(t, walDir) < 2; i++ {
		if i == 100 {
			t.Fatalf("setup: %d MB written and etcd still writes its first wal file", i)
		}
		resp, err := c.Etcd.Put(s.ctx, "/oracle-filler", string(filler))
		if err != nil {
			t.Fatal(err)
		}
		fillerRev = resp.Header.GetRevision()
	}
	if _, err := c.Etcd.Compact(s.ctx, fillerRev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Etcd.Defragment(s.ctx, c.EtcdURL); err != nil {
		t.Fatal(err)
	}

	// In the log, before the older snapshot.
	s.updateCM("keep", "1")
	s.updateCM("upd-del", "1")
	s.createCM("new-a", "0")
	s.createCM("new-del", "0")
	s.put("pfx-0", "1") // the log names one of the keys the prefix delete deletes
	s.put("in-log-a", "0")
	s.put("tv2", "alpha")
	s.put("cmp", "1")
	l3 := s.grant(3600)
	s.put("lease3-a", "0", clientv3.WithLease(l3))
	l5 := s.grant(3600)
	s.put("lease5-a", "0", clientv3.WithLease(l5))
	cmp := s.get("cmp")
	s.txn("mod compare taken", true, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(oracleRaw+"cmp"), "=", cmp.ModRevision)},
		[]clientv3.Op{s.opPut("cmp", "mod-taken")}, nil)
	s.txn("mod compare failed", false, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(oracleRaw+"cmp"), "=", cmp.ModRevision)},
		[]clientv3.Op{s.opPut("cmp", "mod-wrong")}, []clientv3.Op{s.opPut("cmp-else", "mod-failed")})
	older := saveSnapshot(t, c)

	// In the log, after the older snapshot: replays over it cross all that.
	s.deleteCM("upd-del")
	s.deleteCM("pre-del")
	s.deleteCM("new-del")
	s.deleteSecret("sec-del")
	s.updateCM("keep", "2")
	s.deleteCM("twice")
	s.createCM("twice", "again")
	s.updateCM("twice", "again-1")
	// Compares of each target, taken and failed, on keys from before the
	// log and from inside it.
	tvOne := s.value("tv")
	s.txn("value compare taken (a key from before the log)", true, []clientv3.Cmp{clientv3.Compare(clientv3.Value(oracleRaw+"tv"), "=", tvOne)},
		[]clientv3.Op{s.opPut("tv", "two")}, []clientv3.Op{s.opPut("tv-else", "x")})
	s.txn("value compare failed", false, []clientv3.Cmp{clientv3.Compare(clientv3.Value(oracleRaw+"tv"), "=", tvOne)},
		[]clientv3.Op{s.opPut("tv", "three")}, []clientv3.Op{s.opPut("tv-else", "value-failed")})
	s.txn("value compare != failed", false, []clientv3.Cmp{clientv3.Compare(clientv3.Value(oracleRaw+"tv2"), "!=", s.value("tv2"))},
		[]clientv3.Op{s.opPut("tv2", "beta")}, []clientv3.Op{s.opPut("tv2", "gamma")})
	s.txn("version compare taken", true, []clientv3.Cmp{clientv3.Compare(clientv3.Version(oracleRaw+"cmp"), "=", 3)},
		[]clientv3.Op{s.opPut("cmp", "version-taken")}, nil)
	s.txn("version compare failed (a key from before the log)", false, []clientv3.Cmp{clientv3.Compare(clientv3.Version(oracleRaw+"single-pre"), ">", 1)},
		[]clientv3.Op{s.opPut("single-pre", "version-wrong")}, []clientv3.Op{s.opPut("cmp-else", "version-failed")})
	single := s.get("single-pre")
	s.txn("create compare taken (a key from before the log)", true, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(oracleRaw+"single-pre"), "=", single.CreateRevision)},
		[]clientv3.Op{s.opPut("create-ok", "create-taken")}, nil)
	s.txn("create compare failed, a delete in its else", false, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(oracleRaw+"single-pre"), "=", 0)},
		[]clientv3.Op{s.opPut("single-pre", "create-wrong")}, []clientv3.Op{clientv3.OpDelete(oracleRaw + "single-pre")})
	s.txn("lease compare taken (a lease from before the log)", true, []clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue(oracleRaw+"lease1-a"), "=", l1)},
		[]clientv3.Op{s.opPut("lease-cmp", "lease-taken")}, nil)
	s.txn("lease compare failed", false, []clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue(oracleRaw+"lease5-a"), "=", 0)},
		[]clientv3.Op{s.opPut("lease-cmp", "lease-wrong")}, []clientv3.Op{s.opPut("lease-cmp-else", "lease-failed", clientv3.WithLease(l5))})
	// etcdctl del --prefix of keys created before the log (one of them
	// also written inside it); revokes of a lease from before the log and
	// of one from inside it; a lease from inside the log that expires.
	if resp, err := c.Etcd.Delete(s.ctx, oracleRaw+"pfx-", clientv3.WithPrefix()); err != nil || resp.Deleted != 4 {
		t.Fatalf("setup: delete the prefix: %v, %v", err, resp)
	}
	s.revoke(l1)
	s.revoke(l3)
	l4 := s.grant(3)
	s.put("exp4-a", "0", clientv3.WithLease(l4))
	s.waitExpired(l4)
	stopKeep()
	s.waitExpired(l2)
	// A second older snapshot, taken after a compaction (the apiserver
	// compacts every 5 minutes): before it, the log holds the prefix
	// delete, the revokes and every value compare, and the snapshot no
	// longer holds what they deleted; after it, nested transactions
	// (comparing other targets). Over it the log's first part is worked
	// out back from it, the rest replayed.
	s.compact()
	mid := saveSnapshot(t, c)
	s.txn("nested, taken in taken", true, []clientv3.Cmp{clientv3.Compare(clientv3.Version(oracleRaw+"cmp"), ">", 0)},
		[]clientv3.Op{
			s.opPut("nest-a", "n1"),
			clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Version(oracleRaw+"tv"), "=", 2)},
				[]clientv3.Op{s.opPut("nest-b", "n2")}, []clientv3.Op{s.opPut("nest-b", "n2-else")}),
		}, nil)
	s.txn("nested, failed in failed", false, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(oracleRaw+"tv"), "=", 0)},
		[]clientv3.Op{s.opPut("nest-c", "no")},
		[]clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(oracleRaw+"nest-a"), "=", 0)},
			[]clientv3.Op{s.opPut("nest-c", "inner-then")}, []clientv3.Op{clientv3.OpDelete(oracleRaw + "nest-a"), s.opPut("nest-c", "inner-else")})})
	// The point snapshot --index restores to: etcd's own snapshot.
	point := saveSnapshot(t, c)
	s.deleteRaw("in-log-a")
	s.deleteRaw("twice-raw")
	s.put("twice-raw", "again")
	pointDB := readBoltDB(t, point)
	s.compact()
	s.updateCM("keep", "3")
	s.createCM("late", "0")

	// Writes until etcd has purged the first wal file.
	first := firstWALFile(t, walDir)
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; firstWALFile(t, walDir) == first; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("setup: etcd did not purge %s in 2 minutes", first)
		}
		if _, err := c.Etcd.Put(s.ctx, "/oracle-tick", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The member stopped, as an operator finds it: its own db and log
	// (the apiserver first: it deletes its lease as it stops).
	c.kas.stop(stopGrace)
	last, err := c.Etcd.Get(s.ctx, "/oracle-tick")
	if err != nil {
		t.Fatal(err)
	}
	orc.waitFor(t, c.Etcd, last.Header.GetRevision())
	orc.stop()
	c.Etcd.Close()
	c.Etcd = nil
	c.etcd.stop(stopGrace)
	cur := filepath.Join(t.TempDir(), "db")
	copyFile(t, filepath.Join(dataDir, "snap", "db"), cur)
	wal := copyWALDir(t, walDir)
	t.Logf("traffic done in %s: %d events; the log starts in wal file %s (the first, %s, purged); the filler's last revision %d",
		time.Since(began).Round(time.Second), len(orc.all()), firstWALFile(t, wal), first, fillerRev)

	ch := &oracleCheck{t: t, orc: orc, since: fillerRev, tally: newTally()}
	olderDB, midDB := readBoltDB(t, older), readBoltDB(t, mid)
	curDB := readBoltDB(t, cur)
	t.Logf("consistent index and revision: older snapshot %d, %d; second older snapshot %d, %d; point %d, %d; current db %d, %d, compacted at %d",
		olderDB.ConsistentIndex, olderDB.Revision, midDB.ConsistentIndex, midDB.Revision, pointDB.ConsistentIndex, pointDB.Revision, curDB.ConsistentIndex, curDB.Revision, curDB.CompactRevision)
	modes := []oracleMode{
		{name: "current db", args: []string{"--wal", wal, "--db", cur}, db: curDB},
		{name: "older snapshot", args: []string{"--wal", wal, "--db", older}, db: olderDB},
		{name: "2nd older snapshot", args: []string{"--wal", wal, "--db", mid}, db: midDB},
		{name: "--wal-base older, --db current", args: []string{"--wal", wal, "--wal-base", older, "--db", cur}, db: curDB},
	}
	points := []*boltDB{olderDB, midDB, pointDB, curDB}
	for _, m := range modes {
		ch.lsDeleted(m)
		for _, key := range ch.keys() {
			ch.history(m, key)
			ch.getRev(m, key)
			ch.getIndex(m, key, points)
			ch.recover(m, key)
			ch.recoverDryRun(m, key)
		}
	}
	ch.snapshotIndex(modes[1], pointDB)
	ch.snapshotIndex(modes[2], pointDB)
	ch.snapshotIndex(modes[3], pointDB)
	ch.report(time.Since(began))
}

// oracleScenario makes the test's traffic, failing the test on any error.
type oracleScenario struct {
	t   *testing.T
	c   *Cluster
	ctx context.Context
	n   int
}

// createCM creates ConfigMap name in oracleNS through the apiserver.
func (s *oracleScenario) createCM(name, v string) {
	s.t.Helper()
	if _, err := s.c.Client.CoreV1().ConfigMaps(oracleNS).Create(s.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": v}}, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("create configmap %s: %v", name, err)
	}
}

// updateCM sets ConfigMap name's data through the apiserver.
func (s *oracleScenario) updateCM(name, v string) {
	s.t.Helper()
	cms := s.c.Client.CoreV1().ConfigMaps(oracleNS)
	cm, err := cms.Get(s.ctx, name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatalf("get configmap %s: %v", name, err)
	}
	cm.Data["v"] = v
	if _, err := cms.Update(s.ctx, cm, metav1.UpdateOptions{}); err != nil {
		s.t.Fatalf("update configmap %s: %v", name, err)
	}
}

// deleteCM deletes ConfigMap name through the apiserver.
func (s *oracleScenario) deleteCM(name string) {
	s.t.Helper()
	if err := s.c.Client.CoreV1().ConfigMaps(oracleNS).Delete(s.ctx, name, metav1.DeleteOptions{}); err != nil {
		s.t.Fatalf("delete configmap %s: %v", name, err)
	}
}

// createSecret creates Secret name in oracleNS through the apiserver.
func (s *oracleScenario) createSecret(name string) {
	s.t.Helper()
	if _, err := s.c.Client.CoreV1().Secrets(oracleNS).Create(s.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"k": []byte("oracle-test-value")}}, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("create secret %s: %v", name, err)
	}
}

// deleteSecret deletes Secret name through the apiserver.
func (s *oracleScenario) deleteSecret(name string) {
	s.t.Helper()
	if err := s.c.Client.CoreV1().Secrets(oracleNS).Delete(s.ctx, name, metav1.DeleteOptions{}); err != nil {
		s.t.Fatalf("delete secret %s: %v", name, err)
	}
}

// rawCM is a ConfigMap NAME under oracleRaw as JSON, with a uid of its
// own for each value written with a new incarnation.
func (s *oracleScenario) rawCM(name, v string) string {
	s.n++
	b, err := json.Marshal(&corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "oracle-raw",
			UID:               types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", s.n)),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		},
		Data: map[string]string{"v": v},
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

// opPut is a put of the raw ConfigMap name with data v.
func (s *oracleScenario) opPut(name, v string, opts ...clientv3.OpOption) clientv3.Op {
	return clientv3.OpPut(oracleRaw+name, s.rawCM(name, v), opts...)
}

// put writes the raw ConfigMap name with data v straight to etcd.
func (s *oracleScenario) put(name, v string, opts ...clientv3.OpOption) {
	s.t.Helper()
	if _, err := s.c.Etcd.Do(s.ctx, s.opPut(name, v, opts...)); err != nil {
		s.t.Fatalf("put %s: %v", name, err)
	}
}

// deleteRaw deletes the raw key name straight from etcd.
func (s *oracleScenario) deleteRaw(name string) {
	s.t.Helper()
	if resp, err := s.c.Etcd.Delete(s.ctx, oracleRaw+name); err != nil || resp.Deleted != 1 {
		s.t.Fatalf("delete %s: %v, %v", name, err, resp)
	}
}

// get reads the raw key name from etcd.
func (s *oracleScenario) get(name string) *mvccKV {
	s.t.Helper()
	return s.c.etcdGet(s.t, oracleRaw+name)
}

// value is the raw key name's value now, for a value compare.
func (s *oracleScenario) value(name string) string {
	s.t.Helper()
	return string(s.get(name).Value)
}

// txn commits a transaction and checks that it took the branch meant.
func (s *oracleScenario) txn(what string, taken bool, cmps []clientv3.Cmp, then, els []clientv3.Op) {
	s.t.Helper()
	resp, err := s.c.Etcd.Txn(s.ctx).If(cmps...).Then(then...).Else(els...).Commit()
	if err != nil {
		s.t.Fatalf("txn %s: %v", what, err)
	}
	if resp.Succeeded != taken {
		s.t.Fatalf("setup: txn %s: succeeded %v", what, resp.Succeeded)
	}
}

// grant grants a lease of ttl seconds.
func (s *oracleScenario) grant(ttl int64) clientv3.LeaseID {
	s.t.Helper()
	resp, err := s.c.Etcd.Grant(s.ctx, ttl)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.ID
}

// revoke revokes lease id.
func (s *oracleScenario) revoke(id clientv3.LeaseID) {
	s.t.Helper()
	if _, err := s.c.Etcd.Revoke(s.ctx, id); err != nil {
		s.t.Fatal(err)
	}
}

// waitExpired waits until etcd's lessor has revoked the expired lease id.
func (s *oracleScenario) waitExpired(id clientv3.LeaseID) {
	s.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for leaseTTL(s.t, s.c, int64(id)) >= 0 {
		if time.Now().After(deadline) {
			s.t.Fatalf("setup: lease %x not revoked in a minute", id)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// compact compacts etcd at its current revision.
func (s *oracleScenario) compact() {
	s.t.Helper()
	resp, err := s.c.Etcd.Get(s.ctx, "compact-probe")
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.c.Etcd.Compact(s.ctx, resp.Header.GetRevision()); err != nil {
		s.t.Fatal(err)
	}
}

// walFiles counts the wal files in dir.
func walFiles(t *testing.T, dir string) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// firstWALFile is the name of the oldest wal file in dir.
func firstWALFile(t *testing.T, dir string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no wal file in %s: %v", dir, err)
	}
	return filepath.Base(slices.Min(names))
}

// copyFile copies src to a new file dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
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
