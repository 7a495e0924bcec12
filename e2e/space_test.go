package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spaceQuota is the etcd quota of TestSpaceExceeded: room for the
// apiserver's own objects and a few MiB more.
const spaceQuota = 24 << 20

// TestSpaceExceeded fills a three-member etcd under a real kube-apiserver
// until its NOSPACE alarm, so that creating a ConfigMap fails with
// "database space exceeded"; `space` names the cause with numbers and a
// plan that gets under the quota; `space --reclaim --yes` defragments the
// members one at a time, the leader last, disarms the alarm, and the
// apiserver creates objects again, every object it served before still
// there. With a quota the live data is over, --reclaim refuses to disarm.
func TestSpaceExceeded(t *testing.T) {
	c := startCluster(t, "space", ClusterOptions{EtcdMembers: 3, EtcdFlags: []string{"--quota-backend-bytes=" + strconv.Itoa(spaceQuota)}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cms := c.Client.CoreV1().ConfigMaps("default")
	events := c.Client.CoreV1().Events("default")

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
	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "space-check"}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "database space exceeded") {
		t.Fatalf("create under the NOSPACE alarm: %v; want database space exceeded", err)
	}
	before, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evBefore, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	quota := strconv.Itoa(spaceQuota)
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

	// A quota the live data is over: compacted and defragmented, the
	// alarm left raised.
	low := c.etcdpvc(t, "space", "--reclaim", "--yes", "--quota", "512Ki")
	t.Logf("%s", low)
	if low.code != 5 || !strings.Contains(low.stderr, "NOSPACE alarm not disarmed") || !strings.Contains(low.stdout, "live data has to be deleted") {
		t.Errorf("reclaim under a quota the live data is over: want exit status 5, not disarmed, naming the live data")
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "space-check"}}, metav1.CreateOptions{}); err == nil {
		t.Fatal("a create worked though the alarm was to stay raised")
	}

	// The real quota, after a fresh fill of history: disarmed.
	r = c.mustEtcdpvc(t, "space", "--reclaim", "--yes", "--quota", quota)
	t.Logf("%s", r)
	if !strings.Contains(r.stdout, "disarm: the NOSPACE alarm of ") {
		t.Errorf("reclaim: no disarm in its output")
	}
	// The first run defragmented; this one's order is what the first
	// printed: followers first, the leader last.
	order := regexp.MustCompile(`(?m)^defragment (\S+) \((leader|follower)\): [0-9.]+[KM]i, `).FindAllStringSubmatch(low.stdout, -1)
	if len(order) != 3 || order[2][2] != "leader" || order[0][2] != "follower" || order[1][2] != "follower" {
		t.Errorf("defragmentations %v: want three, the leader last", order)
	}
	after := map[string]int64{}
	for _, m := range regexp.MustCompile(`(?m)^defragment (\S+): ([0-9.]+[KM]i) → ([0-9.]+[KM]i), answering and caught up$`).FindAllStringSubmatch(low.stdout, -1) {
		after[m[1]]++
		t.Logf("%s: %s → %s", m[1], m[2], m[3])
	}
	if len(after) != 3 {
		t.Errorf("defragmentations done: %v; want each member once", after)
	}

	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "space-check"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after reclaim: %v", err)
	}
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
}
