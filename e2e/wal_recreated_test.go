package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWALRecreated creates a ConfigMap through the API, updates it,
// deletes it and creates it again (a new uid), then compacts etcd. Read
// from the member's log (alone, purged, over the current db or over older
// snapshots): ls --deleted lists the first incarnation as deleted and
// re-created (its uid), never the live one; the history says the second
// create created a new incarnation and never diffs the two; get --index
// and recover --index within the first incarnation read it back, or say
// it is not established, never reading the second; recover without
// --index refuses while the second holds the name; recover of it into
// the live cluster refuses, names the object there, and writes nothing.
func TestWALRecreated(t *testing.T) {
	c := startCluster(t, "walrecreated", ClusterOptions{})
	const ns = "again"
	c.EnsureNamespace(t, ns)
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	logStart := raftIndex(t, c) + 1
	leadWrite(t, c, ns)

	first, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "twice", Labels: map[string]string{"app": "web"}},
		Data:       map[string]string{"mode": "first"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	first.Data["mode"] = "second"
	if first, err = cms.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update configmap: %v", err)
	}
	// A raft index within the first incarnation, after its update.
	within := raftIndex(t, c)
	snapBefore := saveSnapshot(t, c)
	if err := cms.Delete(ctx, "twice", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete configmap: %v", err)
	}
	snapBetween := saveSnapshot(t, c)
	second, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "twice", Labels: map[string]string{"app": "web"}},
		Data:       map[string]string{"mode": "third"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap again: %v", err)
	}
	if first.UID == second.UID {
		t.Fatalf("setup: the re-created configmap has the first one's uid %s", first.UID)
	}
	resp, err := c.Etcd.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Etcd.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	cur := saveSnapshot(t, c)
	wal := copyWAL(t, c)
	purged := purgeWAL(t, wal, logStart)
	t.Logf("first uid %s (revision %s), second uid %s (revision %s), within index %d", first.UID, first.ResourceVersion, second.UID, second.ResourceVersion, within)

	afterCreate := purgeWAL(t, wal, within)
	type source struct {
		args []string
		// exact: the source establishes the first incarnation's last
		// state. A log that starts after the first create, over the
		// current db, leaves the update's outcome unknown (its compare
		// names a revision from before the log): its last state is then
		// not claimed, never taken from the second incarnation.
		exact bool
	}
	sources := map[string]source{
		"log alone":                                {[]string{"--wal", wal}, true},
		"purged log over the current db":           {[]string{"--wal", purged, "--db", cur}, true},
		"log purged after the create, over the db": {[]string{"--wal", afterCreate, "--db", cur}, false},
		"log over a snapshot before the delete":    {[]string{"--wal", wal, "--db", snapBefore}, true},
		"log over a snapshot before the re-create": {[]string{"--wal", wal, "--db", snapBetween}, true},
		"purged log over a snapshot before":        {[]string{"--wal", afterCreate, "--db", snapBefore}, true},
	}
	idx := strconv.FormatUint(within, 10)
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			run := func(args ...string) result {
				return runEtcdpvc(t, nil, append(append([]string{}, src.args...), args...)...)
			}
			// The first incarnation is listed as deleted and re-created;
			// the second, live, is not listed as deleted.
			r := run("ls", "cm", "--deleted", "-n", ns)
			switch {
			case strings.Contains(r.stdout, string(second.UID)):
				t.Errorf("ls --deleted lists the live incarnation %s as deleted:\n%s", second.UID, r)
			case src.exact && (r.code != 0 || !strings.Contains(r.stdout, "twice") || !strings.Contains(r.stdout, string(first.UID)) || !strings.Contains(r.stdout, "re-created@"+second.ResourceVersion)):
				t.Errorf("ls --deleted: want the first incarnation, uid %s, re-created at %s:\n%s", first.UID, second.ResourceVersion, r)
			case !src.exact && (r.code != 10 || !(strings.Contains(r.stdout, "re-created@"+second.ResourceVersion) && strings.Contains(r.stderr, "without its last state") || strings.Contains(r.stderr, "whose outcome it does not establish"))):
				// The log starts with the deletion: its compare, and the
				// re-create's, may both have been stale (the object
				// deleted and created again before the log), which the
				// compacted db does not tell.
				t.Errorf("ls --deleted: want the first incarnation re-created at %s, without its last state, or the deletion not established, exit 10:\n%s", second.ResourceVersion, r)
			}
			r = run("ls", "cm", "-n", ns)
			if r.code != 0 || !strings.Contains(r.stdout, "twice") {
				t.Errorf("ls: want the live configmap:\n%s", r)
			}

			// The history: the second create is a new incarnation, never
			// a diff against the first.
			r = run("history", "cm", "twice", "-n", ns)
			newIncarnation := strings.Contains(r.stdout, "created (new incarnation, uid "+string(second.UID)+")")
			// Exit 10 when rows are unknown.
			unknown := strings.Contains(r.stdout, "unknown")
			if r.code != 0 && !(r.code == 10 && unknown) || !newIncarnation && (src.exact || !unknown) {
				t.Errorf("history: want the second create as a new incarnation, uid %s (or, from a log that starts with the deletion, unknown):\n%s", second.UID, r)
			}
			if strings.Contains(r.stdout, "first→third") || strings.Contains(r.stdout, "second→third") || strings.Contains(r.stdout, "third→") || strings.Contains(r.stdout, string(first.UID)+"→") || strings.Contains(r.stdout, string(second.UID)+"→") {
				t.Errorf("history compares the two incarnations:\n%s", r)
			}

			// get --index and recover --index within the first
			// incarnation read it back (or, where not established, say
			// so): never the second.
			for _, args := range [][]string{{"get", "cm", "twice", "-n", ns, "--index", idx}, {"recover", "cm", "twice", "-n", ns, "--index", idx, "-o", "yaml"}} {
				r = run(args...)
				switch {
				case strings.Contains(r.stdout, string(second.UID)):
					t.Errorf("%s --index %d reads the second incarnation:\n%s", args[0], within, r)
				case src.exact && (r.code != 0 || !strings.Contains(r.stdout, string(first.UID)) || !strings.Contains(r.stdout, "mode: second")):
					t.Errorf("%s --index %d: want the first incarnation (uid %s, mode second):\n%s", args[0], within, first.UID, r)
				case !src.exact && r.code != 0 && (r.code != 10 || !strings.Contains(r.stderr, "not established")):
					t.Errorf("%s --index %d: want the first incarnation, or exit 10 saying it is not established:\n%s", args[0], within, r)
				}
			}

			// Without --index: the first incarnation's last value, refused
			// while the second holds the name (never "recovered before").
			r = run("recover", "cm", "twice", "-n", ns, "--dry-run")
			switch {
			case strings.Contains(r.stdout, string(second.UID)) || r.code == 0:
				t.Errorf("recover --dry-run takes the second incarnation %s:\n%s", second.UID, r)
			case src.exact && (r.code != 5 || !strings.Contains(r.stderr, "the key holds another object, uid "+string(second.UID)) || !strings.Contains(r.stderr, "not the one deleted at revision ")):
				t.Errorf("recover --dry-run: want exit 5 naming the object that holds the name (uid %s):\n%s", second.UID, r)
			case !src.exact && r.code != 5 && r.code != 10:
				t.Errorf("recover --dry-run: want exit 5 naming the object that holds the name, or 10:\n%s", r)
			}

			// Into the live cluster, where the second incarnation exists:
			// refused, nothing written, and it says which object is there.
			r = runEtcdpvc(t, nil, append(append([]string{"--endpoints", c.EtcdURL}, src.args...),
				"recover", "cm", "twice", "-n", ns, "--index", idx, "--yes", "--backup-dir", t.TempDir())...)
			switch {
			case r.code == 0:
				t.Errorf("recover --index %d into the live cluster: want a refusal:\n%s", within, r)
			case src.exact && (r.code != 5 || !strings.Contains(r.stderr, "nothing written: the key holds another object, uid "+string(second.UID))):
				t.Errorf("recover --index %d into the live cluster: want exit 5 naming the object there (uid %s):\n%s", within, second.UID, r)
			}
			got, err := cms.Get(ctx, "twice", metav1.GetOptions{})
			if err != nil || got.UID != second.UID || got.Data["mode"] != "third" {
				t.Errorf("after the refused recover: %v, uid %s, data %v; want the second incarnation untouched", err, got.UID, got.Data)
			}
		})
	}
}
