package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKineOffline reads kine's state.db with --db, offline: a copy of it
// (the file and its -wal, as cp copies them) and the live file while kine
// runs. The ConfigMaps listed and got agree with the apiserver's, uids and
// resourceVersions included; a deleted one has its history and is listed
// deleted with its uid; a write is refused; kine goes on writing.
func TestKineOffline(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "encryption-config.yaml")
	if err := os.WriteFile(cfg, []byte(encryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "kine-offline", ClusterOptions{Kine: true, EncryptionConfig: cfg})
	const ns = "offline"
	want, gone := kineOfflineObjects(t, c, ns)
	cp := filepath.Join(t.TempDir(), "state.db")
	for _, ext := range []string{"", "-wal"} {
		copyFile(t, c.KineDB()+ext, cp+ext)
	}
	for _, src := range []struct{ name, path string }{{"copy", cp}, {"live", c.KineDB()}} {
		t.Run(src.name, func(t *testing.T) {
			checkKineOffline(t, src.path, "", cfg, ns, want, gone)
		})
	}
	// kine went on writing while its file was read.
	cms := c.Client.CoreV1().ConfigMaps(ns)
	ctx := context.Background()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a write through kine after the offline reads: %v", err)
	}
	if got, err := cms.Get(ctx, "keep", metav1.GetOptions{}); err != nil || got.Labels["by"] != "" {
		t.Errorf("keep after the refused writes: %v, %v; want no label", got.Labels, err)
	}
}

// kineOfflineObjects creates the ConfigMaps keep and gone in namespace ns
// of c and deletes gone; it returns the apiserver's list of ns, each
// "name uid resourceVersion", and gone as it was.
func kineOfflineObjects(t *testing.T, c *Cluster, ns string) (want []string, gone *corev1.ConfigMap) {
	t.Helper()
	c.EnsureNamespace(t, ns)
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	for _, name := range []string{"keep", "gone"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone, err := cms.Get(ctx, "gone", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		want = append(want, cm.Name+" "+string(cm.UID)+" "+cm.ResourceVersion)
	}
	sort.Strings(want)
	return want, gone
}

// checkKineOffline reads kine's database db with --db and the encryption
// config cfg: the ConfigMaps of ns listed and got agree with want, the
// apiserver's; gone's history ends in its delete and it is listed
// deleted with its uid; stats, dump, report and diff read it; writes are
// refused; secret, the database's password, is never printed.
func checkKineOffline(t *testing.T, db, secret, cfg, ns string, want []string, gone *corev1.ConfigMap) {
	t.Helper()
	run := func(a ...string) result {
		t.Helper()
		r := runEtcdpvc(t, nil, append([]string{"--db", db, "--encryption-config", cfg}, a...)...)
		if secret != "" && strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("etcdpvc %s printed the password", a[0])
		}
		return r
	}
	r := run("ls", "cm", "-A", "-o", "json")
	if r.code != 0 {
		t.Fatalf("ls -A: want exit status 0:\n%s", r)
	}
	var l struct {
		Items []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		t.Fatalf("ls -o json: %v\n%s", err, r)
	}
	var got []string
	for _, it := range l.Items {
		if it.Metadata.Namespace == ns {
			got = append(got, it.Metadata.Name+" "+string(it.Metadata.UID)+" "+it.Metadata.ResourceVersion)
		}
	}
	sort.Strings(got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ls -A against the apiserver's list (-apiserver +etcdpvc):\n%s", d)
	}

	r = run("get", "cm", "keep", "-n", ns, "-o", "json")
	var cm corev1.ConfigMap
	if err := json.Unmarshal([]byte(r.stdout), &cm); r.code != 0 || err != nil {
		t.Fatalf("get: %v\n%s", err, r)
	}
	if g := cm.Name + " " + string(cm.UID) + " " + cm.ResourceVersion; len(want) != 1 || g != want[0] || cm.Data["n"] != "keep" {
		t.Errorf("get keep: %s %v, want %v", g, cm.Data, want)
	}

	r = run("history", "cm", "gone", "-n", ns, "-o", "json")
	var h struct {
		Events []struct {
			Revision int64 `json:"revision"`
			Deleted  bool  `json:"deleted"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &h); r.code != 0 || err != nil {
		t.Fatalf("history: %v\n%s", err, r)
	}
	if n := len(h.Events); n < 2 || h.Events[0].Deleted || !h.Events[n-1].Deleted || gone.ResourceVersion != strconv.FormatInt(h.Events[0].Revision, 10) {
		t.Errorf("history of the deleted configmap: want its create at %s first and its delete last:\n%s", gone.ResourceVersion, r.stdout)
	}

	r = run("ls", "cm", "-n", ns, "--deleted", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, string(gone.UID)) {
		t.Errorf("ls --deleted: want the deleted configmap's uid %s:\n%s", gone.UID, r)
	}
	r = run("recover", "cm", "gone", "-n", ns, "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, string(gone.UID)) {
		t.Errorf("recover --dry-run: want exit status 0 and the uid:\n%s", r)
	}
	for _, cmd := range [][]string{{"stats"}, {"dump", "cm", "-n", ns}} {
		if r := run(cmd...); r.code != 0 || !strings.Contains(r.stdout, "configmaps") && !strings.Contains(r.stdout, "keep") {
			t.Errorf("%s: want exit status 0 and the configmaps:\n%s", cmd[0], r)
		}
	}
	// stats names the database kine keeps its table in.
	database := "SQLite"
	if strings.HasPrefix(db, "postgres") {
		database = "PostgreSQL"
	} else if strings.HasPrefix(db, "mysql") {
		database = "MySQL"
	}
	if r := run("stats"); !strings.Contains(r.stdout, "kine's "+database+" database") {
		t.Errorf("stats: want its snapshot line to name kine's %s database:\n%s", database, r)
	}
	report := filepath.Join(t.TempDir(), "report.html")
	if r := run("report", "-o", report); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "report written") {
		t.Errorf("report: want exit status 0 and the page written:\n%s", r)
	}
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "configmaps") || secret != "" && strings.Contains(string(b), secret) {
		t.Errorf("report: %v; want a page naming configmaps and no password", err)
	}
	// Between gone's create and its delete, diff sees it deleted.
	deletedAt := strconv.FormatInt(h.Events[len(h.Events)-1].Revision, 10)
	r = run("diff", "rev:"+gone.ResourceVersion, "rev:"+deletedAt, "cm", "-n", ns)
	if r.code != 11 || !strings.Contains(r.stdout, "DELETED") || !strings.Contains(r.stdout, "gone") {
		t.Errorf("diff rev:%s rev:%s: want exit status 11 and gone DELETED:\n%s", gone.ResourceVersion, deletedAt, r)
	}
	r = run("label", "cm", "keep", "-n", ns, "by=etcdpvc", "--yes", "--backup-dir", t.TempDir())
	if r.code == 0 || !strings.Contains(r.stderr, "read-only") {
		t.Errorf("label with --db kine's database: want a refusal:\n%s", r)
	}
	r = run("--out", filepath.Join(t.TempDir(), "new.db"), "label", "cm", "keep", "-n", ns, "by=etcdpvc", "--yes")
	if r.code == 0 || !strings.Contains(r.stderr, "kine's database") {
		t.Errorf("--out with kine's database: want a refusal naming it:\n%s", r)
	}
}

// TestKineOfflineCompacting reads the live state.db of a kine that
// compacts every second, keeping 10 revisions, while a writer updates 20
// ConfigMaps: each ls either lists all 20 or is refused because the
// compaction passed the revision it read at; none lists fewer. A dump
// whose reader stalls for 3 seconds, while kine compacts past the
// revision it reads at, prints all 20. kine goes on writing and
// compacting. It logs what it saw.
func TestKineOfflineCompacting(t *testing.T) {
	c := startCluster(t, "kine-compacting", ClusterOptions{Kine: true, EtcdOnly: true,
		KineFlags: []string{"--compact-interval", "1s", "--compact-min-retain", "10"}})
	const ns, keys = "compact", 20
	// Values of 8 KiB: a dump of the 20 fills a pipe's buffer.
	pad := strings.Repeat("x", 8<<10)
	cm := func(i, n int) (string, string) {
		name := fmt.Sprintf("k%02d", i)
		return "/registry/configmaps/" + ns + "/" + name, fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"uid":"u-%s"},"data":{"n":"%d","pad":%q}}`, name, ns, name, n, pad)
	}
	for i := 0; i < keys; i++ {
		k, v := cm(i, 0)
		c.put(t, k, []byte(v))
	}
	stop := make(chan struct{})
	var writes atomic.Int64
	var writeErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			k, v := cm(n%keys, n)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := c.Etcd.Put(ctx, k, v)
			cancel()
			if err != nil {
				writeErr.Store(err)
				return
			}
			writes.Add(1)
			// About 200 writes a second: each compaction then reaches to
			// within a few hundred revisions of the newest, past what a
			// read that began before it was pinned to.
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var listed, refused int
	var compacted int64
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r := runEtcdpvc(t, nil, "--db", c.KineDB(), "ls", "cm", "-n", ns, "-o", "json")
		var l struct {
			Items []json.RawMessage `json:"items"`
		}
		switch {
		case r.code == 0 && json.Unmarshal([]byte(r.stdout), &l) == nil && len(l.Items) == keys:
			listed++
		case r.code != 0 && strings.Contains(r.stderr, "compacted its table past revision"):
			refused++
		default:
			t.Fatalf("ls of the live state.db while kine compacts: want all %d configmaps or a refusal naming the compaction:\n%s", keys, r)
		}
		r = runEtcdpvc(t, nil, "--db", c.KineDB(), "history", "cm", "k00", "-n", ns, "-o", "json")
		var h struct {
			CompactRevision int64 `json:"compactRevision"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &h) != nil {
			t.Fatalf("history of the live state.db while kine compacts:\n%s", r)
		}
		compacted = max(compacted, h.CompactRevision)
	}
	// A dump that stalls on its output while kine compacts: its query
	// reads one snapshot of the table, which kine's compaction does not
	// change under it.
	stalled := exec.Command(suite.etcdpvc, "--db", c.KineDB(), "dump", "cm", "-n", ns)
	stalled.Env = append(cleanEnv(), "XDG_STATE_HOME="+t.TempDir(), "NO_COLOR=1")
	var stalledErr strings.Builder
	stalled.Stderr = &stalledErr
	out, err := stalled.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	before := writes.Load()
	head, err := c.Etcd.Get(context.Background(), "/registry/configmaps/"+ns+"/k00")
	if err != nil {
		t.Fatal(err)
	}
	if err := stalled.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	dumped, _ := io.ReadAll(out)
	if err := stalled.Wait(); err != nil {
		t.Errorf("a dump stalled while kine compacted: %v\n%s", err, stalledErr.String())
	}
	for i := 0; i < keys; i++ {
		if uid := fmt.Sprintf("u-k%02d", i); !strings.Contains(string(dumped), uid) {
			t.Errorf("the stalled dump lacks %s", uid)
		}
	}
	stalledWrites := writes.Load() - before
	r := runEtcdpvc(t, nil, "--db", c.KineDB(), "history", "cm", "k00", "-n", ns, "-o", "json")
	var h struct {
		CompactRevision int64 `json:"compactRevision"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &h) != nil {
		t.Fatalf("history after the stalled dump:\n%s", r)
	}
	close(stop)
	<-done
	if err, _ := writeErr.Load().(error); err != nil {
		t.Fatalf("kine's writes failed while its file was read: %v", err)
	}
	if compacted == 0 {
		t.Errorf("kine never compacted in 20 seconds (%d writes)", writes.Load())
	}
	t.Logf("while kine compacted (to revision %d) under %d writes: %d reads listed all %d configmaps, %d were refused as compacted past their revision; a dump opened at revision %d or after stalled 3s, kine wrote %d revisions meanwhile and compacted to %d", compacted, writes.Load(), listed, keys, refused, head.Header.Revision, stalledWrites, h.CompactRevision)
}
