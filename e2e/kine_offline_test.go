package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

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
	var want []string
	for _, cm := range list.Items {
		want = append(want, cm.Name+" "+string(cm.UID)+" "+cm.ResourceVersion)
	}
	sort.Strings(want)

	cp := filepath.Join(t.TempDir(), "state.db")
	for _, ext := range []string{"", "-wal"} {
		copyFile(t, c.KineDB()+ext, cp+ext)
	}
	enc := []string{"--encryption-config", cfg}
	for _, src := range []struct{ name, path string }{{"copy", cp}, {"live", c.KineDB()}} {
		t.Run(src.name, func(t *testing.T) {
			db := append([]string{"--db", src.path}, enc...)
			r := runEtcdpvc(t, nil, append(db, "ls", "cm", "-A", "-o", "json")...)
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
				t.Errorf("ls -A of %s against the apiserver's list (-apiserver +etcdpvc):\n%s", src.name, d)
			}

			r = runEtcdpvc(t, nil, append(db, "get", "cm", "keep", "-n", ns, "-o", "json")...)
			var cm corev1.ConfigMap
			if err := json.Unmarshal([]byte(r.stdout), &cm); r.code != 0 || err != nil {
				t.Fatalf("get: %v\n%s", err, r)
			}
			if g := cm.Name + " " + string(cm.UID) + " " + cm.ResourceVersion; len(want) != 1 || g != want[0] || cm.Data["n"] != "keep" {
				t.Errorf("get keep: %s %v, want %v", g, cm.Data, want)
			}

			r = runEtcdpvc(t, nil, append(db, "history", "cm", "gone", "-n", ns, "-o", "json")...)
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

			r = runEtcdpvc(t, nil, append(db, "ls", "cm", "-n", ns, "--deleted", "-o", "json")...)
			if r.code != 0 || !strings.Contains(r.stdout, string(gone.UID)) {
				t.Errorf("ls --deleted: want the deleted configmap's uid %s:\n%s", gone.UID, r)
			}
			r = runEtcdpvc(t, nil, append(db, "recover", "cm", "gone", "-n", ns, "--dry-run")...)
			if r.code != 0 || !strings.Contains(r.stdout+r.stderr, string(gone.UID)) {
				t.Errorf("recover --dry-run: want exit status 0 and the uid:\n%s", r)
			}
			for _, args := range [][]string{{"stats"}, {"dump", "cm", "-n", ns}} {
				if r := runEtcdpvc(t, nil, append(db, args...)...); r.code != 0 || !strings.Contains(r.stdout, "configmaps") && !strings.Contains(r.stdout, "keep") {
					t.Errorf("%s: want exit status 0 and the configmaps:\n%s", args[0], r)
				}
			}
			r = runEtcdpvc(t, nil, append(db, "label", "cm", "keep", "-n", ns, "by=etcdpvc", "--yes", "--backup-dir", t.TempDir())...)
			if r.code == 0 || !strings.Contains(r.stderr, "read-only") {
				t.Errorf("label with --db kine's database: want a refusal:\n%s", r)
			}
			r = runEtcdpvc(t, nil, append(db, "--out", filepath.Join(t.TempDir(), "new.db"), "label", "cm", "keep", "-n", ns, "by=etcdpvc", "--yes")...)
			if r.code == 0 || !strings.Contains(r.stderr, "kine's SQLite database") {
				t.Errorf("--out with kine's database: want a refusal naming it:\n%s", r)
			}
		})
	}
	// kine went on writing while its file was read.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a write through kine after the offline reads: %v", err)
	}
	if got, err := cms.Get(ctx, "keep", metav1.GetOptions{}); err != nil || got.Labels["by"] != "" {
		t.Errorf("keep after the refused writes: %v, %v; want no label", got.Labels, err)
	}
}
