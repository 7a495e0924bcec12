package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// clockInterval is a TIME interval as -o json gives it.
type clockInterval struct {
	Earliest *time.Time `json:"earliest"`
	Latest   *time.Time `json:"latest"`
}

// truthWrite is a write the test made: the wall-clock time before the API
// call and after its answer (the write happened in between), its
// revision (0 for a deletion, whose answer carries none).
type truthWrite struct {
	name, what     string
	before, after  time.Time
	revision       int64
	deleteRevision bool
}

// TestClockTimes places a log's writes in time (history, ls --deleted),
// and the revisions a db copied from the member and the live etcd hold, and
// recovers to a time (snapshot --before-time), against a real
// kube-apiserver whose own identity Lease renewal every 10 s is the
// backbone, on a member purging its log. ConfigMaps are created, updated
// and deleted seconds apart at recorded times; every interval printed
// must hold the true time, and the point before a time between two
// writes, restored with etcdutl, holds the first and not the second.
func TestClockTimes(t *testing.T) {
	c := startCluster(t, "clock", ClusterOptions{EtcdFlags: oracleEtcdFlags})
	ctx := context.Background()
	const ns = "clock"
	c.EnsureNamespace(t, ns)
	old := saveSnapshot(t, c)
	cms := c.Client.CoreV1().ConfigMaps(ns)
	gap := 7 * time.Second
	var writes []truthWrite
	record := func(name, what string, f func() (int64, error)) {
		time.Sleep(gap)
		b := time.Now()
		rev, err := f()
		if err != nil {
			t.Fatalf("%s %s: %v", what, name, err)
		}
		writes = append(writes, truthWrite{name: name, what: what, before: b, after: time.Now(), revision: rev})
	}
	for _, name := range []string{"a", "b"} {
		record(name, "create", func() (int64, error) {
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
			if err != nil {
				return 0, err
			}
			return rv(t, cm.ResourceVersion), nil
		})
		record(name, "update", func() (int64, error) {
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return 0, err
			}
			cm.Data["v"] = "2"
			cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			if err != nil {
				return 0, err
			}
			return rv(t, cm.ResourceVersion), nil
		})
		record(name, "delete", func() (int64, error) { return 0, cms.Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	time.Sleep(12 * time.Second) // a renewal after the last write
	log := copyWAL(t, c)
	db := filepath.Join(t.TempDir(), "member.db")
	copyFile(t, filepath.Join(c.Dir, "etcd-data", "member", "snap", "db"), db)

	// Every interval holds the true time of its write.
	// widths are the intervals' widths by where they were read: the log,
	// the db, the live etcd.
	widths := map[string][]time.Duration{}
	check := func(what string, w truthWrite, iv clockInterval) {
		t.Helper()
		if iv.Earliest == nil || iv.Latest == nil {
			t.Errorf("%s: %s %s at %s: interval %+v, want both bounds", what, w.what, w.name, w.before.Format(time.RFC3339Nano), iv)
			return
		}
		// The write happened between before and after: an interval that
		// holds its true time meets that span.
		if iv.Earliest.After(w.after) || iv.Latest.Before(w.before) {
			t.Errorf("%s: %s %s between %s and %s: interval %s to %s does not hold it", what, w.what, w.name,
				w.before.Format(time.RFC3339Nano), w.after.Format(time.RFC3339Nano), iv.Earliest.Format(time.RFC3339Nano), iv.Latest.Format(time.RFC3339Nano))
		}
		from, _, _ := strings.Cut(what, " ")
		if from != "db" && from != "live" {
			from = "log"
		}
		widths[from] = append(widths[from], iv.Latest.Sub(*iv.Earliest))
		t.Logf("%s: %s %s at %s: %s to %s (%s wide)", what, w.what, w.name, w.before.Format("15:04:05.000"),
			iv.Earliest.Format("15:04:05.000"), iv.Latest.Format("15:04:05.000"), iv.Latest.Sub(*iv.Earliest).Round(time.Millisecond))
	}
	// history, from the log, and without it from the revisions the
	// member's db (copied as it runs) and the live etcd still hold: the
	// log holds every write, the others those not compacted away.
	for _, src := range []struct {
		what string
		all  bool
		args []string
	}{
		{"history", true, []string{"--wal", log, "--db", old}},
		{"db history", false, []string{"--db", db}},
		{"live history", false, append([]string{"--endpoints", c.EtcdURL}, c.etcdTLSArgs()...)},
	} {
		for _, name := range []string{"a", "b"} {
			r := runEtcdpvc(t, nil, append(slices.Clone(src.args), "history", "cm", name, "-n", ns, "-o", "json")...)
			if r.code != 0 {
				t.Fatalf("%s %s: want exit status 0:\n%s", src.what, name, r)
			}
			var h struct {
				Events []struct {
					Revision int64         `json:"revision"`
					Deleted  bool          `json:"deleted"`
					Time     clockInterval `json:"time"`
				} `json:"events"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || len(h.Events) == 0 {
				t.Fatalf("%s -o json: %v, want events\n%s", src.what, err, r)
			}
			if mine := slices.DeleteFunc(slices.Clone(writes), func(w truthWrite) bool { return w.name != name }); src.all && len(h.Events) != len(mine) {
				t.Fatalf("%s %s: %d rows, want %d:\n%s", src.what, name, len(h.Events), len(mine), r.stdout)
			}
			for _, e := range h.Events {
				i := slices.IndexFunc(writes, func(w truthWrite) bool {
					return w.name == name && (w.revision != 0 && w.revision == e.Revision || w.revision == 0 && e.Deleted)
				})
				if i < 0 {
					t.Fatalf("%s %s: revision %d is none of the test's writes:\n%s", src.what, name, e.Revision, r.stdout)
				}
				check(src.what, writes[i], e.Time)
			}
		}
	}
	// ls --deleted, from the log and from the db: the deletions' times.
	for _, src := range []struct {
		what string
		args []string
	}{{"ls --deleted", []string{"--wal", log, "--db", old}}, {"db ls --deleted", []string{"--db", db}}} {
		r := runEtcdpvc(t, nil, append(slices.Clone(src.args), "ls", "cm", "-n", ns, "--deleted", "-o", "json")...)
		var l struct {
			Items []struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Etcd struct {
					DeleteTime clockInterval `json:"deleteTime"`
				} `json:"etcd"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &l); r.code != 0 || err != nil || len(l.Items) != 2 {
			t.Fatalf("%s -o json: %v, want exit status 0 and 2 items:\n%s", src.what, err, r)
		}
		for _, it := range l.Items {
			for _, w := range writes {
				if w.name == it.Metadata.Name && w.what == "delete" {
					check(src.what, w, it.Etcd.DeleteTime)
				}
			}
		}
	}

	for _, from := range []string{"log", "db", "live"} {
		w := widths[from]
		slices.Sort(w)
		median := w[len(w)/2]
		t.Logf("TIME intervals read from the %s: %d, median width %s, widest %s (writes %s apart)", from, len(w), median.Round(time.Millisecond), w[len(w)-1].Round(time.Millisecond), gap)
		if median > 12*time.Second {
			t.Errorf("median interval width read from the %s: %s, want at most 12s", from, median)
		}
	}

	// The point before a time between a's update and its deletion holds
	// the update and not the deletion.
	upd, del := writes[1], writes[2]
	at := upd.after.Add(del.before.Sub(upd.after) / 2)
	dir := t.TempDir()
	pit := filepath.Join(dir, "pit.db")
	r := runEtcdpvc(t, nil, "--db", old, "--wal", log, "snapshot", "--before-time", at.Format(time.RFC3339Nano), "--out", pit)
	if r.code != 0 {
		t.Fatalf("snapshot --before-time %s: want exit status 0:\n%s", at.Format(time.RFC3339Nano), r)
	}
	t.Logf("snapshot --before-time %s:\n%s", at.Format(time.RFC3339Nano), strings.SplitN(r.stdout, "\n", 2)[0])
	restored := filepath.Join(dir, "restored")
	runTool(t, suite.etcdutl, "snapshot", "restore", pit, "--data-dir", restored, "--bump-revision", "1000000", "--mark-compacted")
	g := runEtcdpvc(t, nil, "--db", filepath.Join(restored, "member", "snap", "db"), "get", "cm", "a", "-n", ns, "-o", "json")
	if g.code != 0 || !strings.Contains(g.stdout, `"v": "2"`) {
		t.Errorf("the restored point: configmap a, want it as updated (v 2), not deleted:\n%s", g)
	}
	if g := runEtcdpvc(t, nil, "--db", filepath.Join(restored, "member", "snap", "db"), "get", "cm", "b", "-n", ns); g.code != 3 {
		t.Errorf("the restored point: configmap b, created after it: want not found (3):\n%s", g)
	}
}
