package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spaceQuota is the etcd quota of TestSpaceExceeded: room for the
// apiserver's own objects and a few MiB more.
const spaceQuota = 24 << 20

// TestSpaceExceeded fills a three-member etcd, served over TLS with client
// certificates and under a real kube-apiserver, until its NOSPACE alarm,
// twice.
//
// First with history (ConfigMaps rewritten over and over, and Events):
// creating a ConfigMap fails with "database space exceeded"; `space` names
// the cause with numbers and a plan that gets under the quota; `space
// --reclaim --yes` defragments the members one at a time, the followers
// first and the leader last (as the members' own logs record it),
// disarms the alarm, and the apiserver creates objects again, every object
// it served before still there.
//
// Then with live data (Events with large messages, written as hours old):
// `space` says the live data alone is over the quota and names the Events;
// `space --reclaim --yes` refuses to disarm (exit status 5) and deletes
// nothing; `delete events -A --older-than` deletes them through the one
// executor; `space --reclaim --yes` then disarms, the apiserver creates
// objects again, every other object is unchanged, and the delete's printed
// undo names the Events it deleted.
func TestSpaceExceeded(t *testing.T) {
	start := time.Now()
	c := startCluster(t, "space", ClusterOptions{EtcdMembers: 3, EtcdTLS: true,
		// info: each member logs its defragmentation, with the sizes.
		EtcdFlags: []string{"--quota-backend-bytes=" + strconv.Itoa(spaceQuota), "--log-level=info"}})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cms := c.Client.CoreV1().ConfigMaps("default")
	events := c.Client.CoreV1().Events("default")
	quota := strconv.Itoa(spaceQuota)
	kc := c.writeKubeconfig(t)

	// ConfigMaps rewritten over and over (history), and Events.
	random := make([]byte, 32<<10)
	var full error
	for i := 0; i < 5000 && full == nil; i++ {
		rand.Read(random)
		name := fmt.Sprintf("space-%d", i%10)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"x": hex.EncodeToString(random)}}
		if i < 10 {
			_, full = cms.Create(ctx, cm, metav1.CreateOptions{})
		} else {
			_, full = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		if full == nil && i%5 == 0 {
			ev := newEvent(fmt.Sprintf("space-ev-%d", i))
			ev.InvolvedObject.Namespace = "default"
			_, full = events.Create(ctx, ev, metav1.CreateOptions{})
		}
	}
	if full == nil || !strings.Contains(full.Error(), "database space exceeded") {
		t.Fatalf("the writes ended with %v; want database space exceeded", full)
	}
	c.createRefused(t, ctx, "space-check")
	before, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evBefore, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	r := c.mustEtcdpvc(t, "space", "--quota", quota)
	t.Logf("%s", r)
	for _, want := range []string{
		"alarm:        NOSPACE raised",
		"history:      a compaction at revision ",
		"the plan gets every member under",
		"disarm the NOSPACE alarm",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("space: no %q in its output", want)
		}
	}
	if !regexp.MustCompile(`(?m)^configmaps +default +1[0-9] +[0-9.]+Ki `).MatchString(r.stdout) {
		t.Errorf("space: the ConfigMaps of default are not listed with their bytes")
	}
	planned := plannedDefrags(r.stdout)

	r = c.reclaim(t, planned, 0, "--quota", quota)
	if !strings.Contains(r.stdout, "disarm: the NOSPACE alarm of ") {
		t.Errorf("reclaim: no disarm in its output")
	}
	c.mustCreate(t, ctx, "space-check")
	got, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evAfter, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != len(before.Items)+1 || len(evAfter.Items) != len(evBefore.Items) {
		t.Errorf("after reclaim: %d ConfigMaps, %d Events; want %d (and space-check), %d", len(got.Items), len(evAfter.Items), len(before.Items), len(evBefore.Items))
	}
	byName := map[string]corev1.ConfigMap{}
	for _, cm := range got.Items {
		byName[cm.Name] = cm
	}
	for _, cm := range before.Items {
		a, ok := byName[cm.Name]
		if !ok || a.ResourceVersion != cm.ResourceVersion || a.Data["x"] != cm.Data["x"] {
			t.Errorf("ConfigMap %s: changed or gone after reclaim", cm.Name)
		}
	}
	doctor := c.etcdpvc(t, "doctor")
	if !strings.Contains(doctor.stdout, "alarms") || strings.Contains(doctor.stdout, "NOSPACE raised") {
		t.Errorf("doctor after reclaim:\n%s", doctor)
	}
	t.Logf("first run (history) done after %v", time.Since(start).Round(time.Second))
	if t.Failed() {
		return
	}

	// The second run: live data. Every key the apiserver stored so far,
	// then Events of about 160Ki each (few, so that the delete is quick),
	// written as three hours old, until the alarm. At the alarm the db
	// holds a tenth to a fifth of free pages beside the live data: with
	// the default margin of 10% a defragmentation lands near the line. A
	// margin of 30% puts the line clearly below what the live data takes,
	// as in a db its objects fill.
	kept := c.registryKeys(t, ctx)
	message := strings.Repeat("the disk is full; ", 160<<10/18)
	old := metav1.NewTime(time.Now().Add(-3 * time.Hour))
	full = nil
	for i := 0; i < 1000 && full == nil; i++ {
		ev := newEvent(fmt.Sprintf("flood-%d", i))
		ev.InvolvedObject.Namespace = "default"
		ev.Message, ev.FirstTimestamp, ev.LastTimestamp, ev.Count = message, old, old, 1
		_, full = events.Create(ctx, ev, metav1.CreateOptions{})
	}
	if full == nil || !strings.Contains(full.Error(), "database space exceeded") {
		t.Fatalf("the Events ended with %v; want database space exceeded", full)
	}
	c.createRefused(t, ctx, "space-check-2")
	// etcd applies the write that crosses the quota and answers it with
	// "database space exceeded": the Event the apiserver said failed may
	// be stored. What is stored counts.
	full2 := c.registryKeys(t, ctx)
	flood := 0
	for k := range full2 {
		if strings.HasPrefix(k, "/registry/events/default/flood-") {
			flood++
		}
	}

	margin := []string{"--quota", quota, "--margin", "30"}
	r = c.mustEtcdpvc(t, append([]string{"space"}, margin...)...)
	t.Logf("%s", r)
	for _, want := range []string{
		"alarm:        NOSPACE raised",
		"the plan does NOT get under",
		"live data has to be deleted",
		"etcdpvc delete events",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("space, live data over the quota: no %q in its output", want)
		}
	}
	if m := regexp.MustCompile(`(?m)^events +default +(\d+) +[0-9.]+Mi `).FindStringSubmatch(r.stdout); m == nil || m[1] != strconv.Itoa(flood+len(evBefore.Items)) {
		t.Errorf("space: the Events of default are not listed with their count (%d) and bytes: %v", flood+len(evBefore.Items), m)
	}
	if strings.Contains(r.stdout, "the plan gets every member under") {
		t.Errorf("space: a plan said to get under the quota though the live data is over it")
	}

	refused := c.reclaim(t, plannedDefrags(r.stdout), 5, margin...)
	if !strings.Contains(refused.stderr, "NOSPACE alarm not disarmed") || !strings.Contains(refused.stdout, "live data has to be deleted") {
		t.Errorf("reclaim with the live data over the quota: want exit status 5, not disarmed, naming the live data")
	}
	c.createRefused(t, ctx, "space-check-2")
	if diff := keysChanged(full2, c.registryKeys(t, ctx)); diff != "" {
		t.Errorf("the refused reclaim changed objects: %s", diff)
	}

	backups := t.TempDir()
	began := time.Now()
	del := c.etcdpvc(t, "--kubeconfig", kc, "delete", "events", "-A", "--older-than", "2h", "--yes", "--backup-dir", backups)
	t.Logf("%s", del)
	if del.code != 0 || !strings.Contains(del.stdout, fmt.Sprintf("selected %d of the ", flood)) {
		t.Fatalf("delete events -A --older-than 2h: want exit status 0 and the %d Events written as old selected", flood)
	}
	t.Logf("the delete of %d Events took %v", flood, time.Since(began).Round(time.Second))
	r = c.reclaim(t, nil, 0, margin...)
	if !strings.Contains(r.stdout, "disarm: the NOSPACE alarm of ") {
		t.Errorf("reclaim after the delete: no disarm in its output")
	}
	c.mustCreate(t, ctx, "space-check-2")

	// Every object but the Events deleted is as it was: same keys, same
	// mod revisions (the apiserver's own leases aside: under the alarm it
	// could not renew them).
	after := c.registryKeys(t, ctx)
	var deleted []string
	for k := range full2 {
		if _, ok := kept[k]; !ok && strings.HasPrefix(k, "/registry/events/default/flood-") {
			deleted = append(deleted, k)
			delete(full2, k)
		}
	}
	delete(after, "/registry/configmaps/default/space-check-2")
	if len(deleted) != flood {
		t.Errorf("%d flood Events stored, %d created", len(deleted), flood)
	}
	if diff := keysChanged(full2, after); diff != "" {
		t.Errorf("after delete and reclaim, besides the Events deleted: %s", diff)
	}
	evLeft, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evLeft.Items) != len(evBefore.Items) {
		t.Errorf("%d Events served after the delete; want the %d of before the flood", len(evLeft.Items), len(evBefore.Items))
	}
	if cmsLeft, err := cms.List(ctx, metav1.ListOptions{}); err != nil || len(cmsLeft.Items) != len(got.Items)+1 {
		t.Errorf("ConfigMaps after the second run: %v; want %d", err, len(got.Items)+1)
	}

	// The undo is printed and names the Events deleted. Run, it would
	// put their bytes back and fill the quota again: only a dry run here.
	m := regexp.MustCompile(`(?m)^undo with: etcdpvc restore --operation (\S+) --backup-dir (\S+)$`).FindStringSubmatch(del.stdout)
	if m == nil || m[2] != backups {
		t.Fatalf("delete: no undo line with the backup directory %s", backups)
	}
	undo := c.etcdpvc(t, "restore", "--operation", m[1], "--backup-dir", m[2], "--dry-run")
	named := 0
	for _, k := range deleted {
		if strings.Contains(undo.stdout, k+" ") || strings.Contains(undo.stdout, k+"\n") {
			named++
		}
	}
	if undo.code != 0 || named != len(deleted) || strings.Contains(undo.stdout, "/registry/configmaps/") {
		t.Errorf("the undo's dry run names %d of the %d Events deleted:\n%s", named, len(deleted), undo)
	}
	t.Logf("both runs done after %v", time.Since(start).Round(time.Second))
}

// createRefused checks that creating ConfigMap name fails with "database
// space exceeded".
func (c *Cluster) createRefused(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	_, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "database space exceeded") {
		t.Fatalf("create %s under the NOSPACE alarm: %v; want database space exceeded", name, err)
	}
}

// mustCreate creates ConfigMap name.
func (c *Cluster) mustCreate(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if _, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s after reclaim: %v", name, err)
	}
}

// reclaim runs `space --reclaim --yes` and checks, from the members' own
// logs, that it defragmented each member once, one at a time, the
// followers first and the leader (read before the run) last, and each
// under the quota unless code is 5 (the live data over it); flags are
// space's (--quota); planned are the sizes `space` planned for each (nil:
// none to compare). It logs each member's sizes.
func (c *Cluster) reclaim(t *testing.T, planned map[string]string, code int, flags ...string) result {
	t.Helper()
	offsets := map[string]int64{}
	for _, m := range c.Members {
		if fi, err := os.Stat(m.logPath); err == nil {
			offsets[m.Name] = fi.Size()
		}
	}
	leader := c.leader(t).Name
	r := c.etcdpvc(t, append([]string{"space", "--reclaim", "--yes"}, flags...)...)
	t.Logf("%s", r)
	if r.code != code {
		t.Fatalf("space --reclaim --yes: exit status %d, want %d", r.code, code)
	}
	got := c.defrags(t, offsets)
	// A member the run says it skipped (its free pages too few to return
	// much) is not defragmented; every other member is, once.
	skipped := map[string]bool{}
	for _, m := range c.Members {
		if regexp.MustCompile(`(?m)^defragment ` + regexp.QuoteMeta(m.Name) + ` \([a-z]+\): skipped, `).MatchString(r.stdout) {
			skipped[m.Name] = true
		}
	}
	if len(got) != len(c.Members)-len(skipped) {
		t.Errorf("%d defragmentations in the members' logs; want each member's once but the %d the run says it skipped", len(got), len(skipped))
	}
	for _, d := range got {
		if skipped[d.member] {
			t.Errorf("%s defragmented, but the run says it skipped it", d.member)
		}
	}
	for i, d := range got {
		role := "follower"
		if d.member == leader {
			role = "leader"
		}
		t.Logf("defragmentation %d: %s (%s): %d → %d bytes in %v; planned %s", i+1, d.member, role, d.before, d.after, d.end.Sub(d.start).Round(time.Millisecond), planned[d.member])
		if i > 0 && d.start.Before(got[i-1].end) {
			t.Errorf("%s's defragmentation began before %s's ended", d.member, got[i-1].member)
		}
		if d.after > spaceQuota && code == 0 {
			t.Errorf("%s: %d bytes after its defragmentation, over the quota", d.member, d.after)
		}
		if seen := got[:i]; slicesContains(seen, d.member) {
			t.Errorf("%s defragmented twice", d.member)
		}
	}
	if len(got) == len(c.Members)-len(skipped) && len(got) > 0 && !skipped[leader] && got[len(got)-1].member != leader {
		t.Errorf("the last defragmentation was %s's, not the leader %s's (the leader now: %s)", got[len(got)-1].member, leader, c.leader(t).Name)
	}
	return r
}

func slicesContains(ds []defrag, member string) bool {
	for _, d := range ds {
		if d.member == member {
			return true
		}
	}
	return false
}

// plannedDefrags are the sizes space's plan expects for each member's
// defragmentation ("24Mi → 3.1Mi").
func plannedDefrags(out string) map[string]string {
	planned := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\d+\. defragment (\S+) \(\w+\): about (\S+ → \S+)$`).FindAllStringSubmatch(out, -1) {
		planned[m[1]] = m[2]
	}
	return planned
}

// defrag is one defragmentation a member's log records.
type defrag struct {
	member        string
	start, end    time.Time
	before, after int64
}

// defrags reads the defragmentations the members logged after offsets
// (each log's size before), in the order they began.
func (c *Cluster) defrags(t *testing.T, offsets map[string]int64) []defrag {
	t.Helper()
	var out []defrag
	for _, m := range c.Members {
		f, err := os.Open(m.logPath)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(offsets[m.Name], 0); err != nil {
			t.Fatal(err)
		}
		var cur *defrag
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct {
				TS     string `json:"ts"`
				Msg    string `json:"msg"`
				DBSize int64  `json:"current-db-size-bytes"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			ts, _ := time.Parse(time.RFC3339Nano, line.TS)
			switch line.Msg {
			case "defragmenting":
				cur = &defrag{member: m.Name, start: ts, before: line.DBSize}
			case "finished defragmenting directory":
				if cur == nil {
					t.Fatalf("%s's log: a defragmentation finished that did not begin", m.Name)
				}
				cur.end, cur.after = ts, line.DBSize
				out = append(out, *cur)
				cur = nil
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if cur != nil {
			t.Errorf("%s's log: a defragmentation began and did not finish", m.Name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// registryKeys are the keys under /registry/ and their mod revisions, the
// apiserver's leases aside (it renews its own every few seconds, and lets
// its peer server lease expire when it cannot).
func (c *Cluster) registryKeys(t *testing.T, ctx context.Context) map[string]int64 {
	t.Helper()
	resp, err := c.Etcd.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int64{}
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); !strings.HasPrefix(k, "/registry/leases/") && !strings.HasPrefix(k, "/registry/peerserverleases/") {
			keys[k] = kv.ModRevision
		}
	}
	return keys
}

// keysChanged says which keys of want are gone or at another revision in
// got, and which got has more ("" when none).
func keysChanged(want, got map[string]int64) string {
	var diffs []string
	for k, rev := range want {
		switch g, ok := got[k]; {
		case !ok:
			diffs = append(diffs, k+" gone")
		case g != rev:
			diffs = append(diffs, fmt.Sprintf("%s at revision %d, was %d", k, g, rev))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, k+" new")
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 10 {
		diffs = append(diffs[:10], fmt.Sprintf("and %d more", len(diffs)-10))
	}
	return strings.Join(diffs, "; ")
}
