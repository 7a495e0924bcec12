package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writerPause is how long the client-go writer waits after each update.
const writerPause = 20 * time.Millisecond

// TestCompareAndSwapUnderTheAPIServer labels a ConfigMap with etcdpvc 50
// times while a client-go loop keeps updating it through the apiserver.
// Every etcdpvc run must either succeed or report a conflict, and no
// update is lost on either side: the counter the loop increments equals
// its number of successful Updates, and the last label etcdpvc wrote is
// still there.
func TestCompareAndSwapUnderTheAPIServer(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	const ns, name, runs = "demo", "counter", 50
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"count": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}

	// The writer increments data.count with Get and Update until stop is
	// closed. It checks stop only between requests, never cancelling one:
	// the outcome of every Update must be known to count it.
	stop := make(chan struct{})
	stopWriter := sync.OnceFunc(func() { close(stop) })
	var (
		wg                       sync.WaitGroup
		apiUpdates, apiConflicts int
		writerErr                error
		firstUpdate              = make(chan struct{})
		firstUpdateOnce          sync.Once
	)
	writerDone := make(chan struct{})
	defer func() { stopWriter(); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(writerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				writerErr = fmt.Errorf("get: %w", err)
				return
			}
			n, err := strconv.Atoi(cm.Data["count"])
			if err != nil {
				writerErr = fmt.Errorf("data.count %q: %w", cm.Data["count"], err)
				return
			}
			cm.Data["count"] = strconv.Itoa(n + 1)
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			switch {
			case err == nil:
				apiUpdates++
				firstUpdateOnce.Do(func() { close(firstUpdate) })
				// A short pause leaves etcdpvc room to win some races;
				// without it nearly every run conflicts.
				time.Sleep(writerPause)
			case apierrors.IsConflict(err):
				apiConflicts++
			default:
				writerErr = fmt.Errorf("update: %w", err)
				return
			}
		}
	}()
	select {
	case <-firstUpdate:
	case <-writerDone:
		t.Fatalf("the client-go writer stopped before its first update: %v", writerErr)
	}

	backups := t.TempDir()
	var written, conflicts int
	lastLabel := ""
	for i := range runs {
		label := fmt.Sprintf("round=%d", i)
		r := c.etcdpvc(t, "label", "cm", name, "-n", ns, label, "--overwrite", "--yes", "--backup-dir", backups)
		switch {
		case r.code == 0:
			written++
			lastLabel = strings.TrimPrefix(label, "round=")
		case r.code == 4 && strings.Contains(r.stderr, "object changed since it was read"):
			conflicts++
		default:
			t.Errorf("run %d: want exit status 0, or 4 with \"object changed since it was read\":\n%s", i, r)
		}
	}
	stopWriter()
	wg.Wait()
	if writerErr != nil {
		t.Fatalf("the client-go writer failed: %v", writerErr)
	}
	t.Logf("etcdpvc: %d written, %d conflicts; client-go: %d updates, %d conflicts", written, conflicts, apiUpdates, apiConflicts)
	if written == 0 {
		t.Fatalf("no etcdpvc label run succeeded in %d tries", runs)
	}

	got, err := cms.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get configmap: %v", err)
	}
	stored := c.etcdGet(t, "/registry/configmaps/"+ns+"/"+name)
	if got.ResourceVersion != strconv.FormatInt(stored.ModRevision, 10) {
		// The watch cache may lag a moment; read again at etcd's revision.
		eventually(t, "the apiserver serves the last revision", func() error {
			got, err = cms.Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.ResourceVersion != strconv.FormatInt(stored.ModRevision, 10) {
				return fmt.Errorf("resourceVersion %s, want %d", got.ResourceVersion, stored.ModRevision)
			}
			return nil
		})
	}
	if want := strconv.Itoa(apiUpdates); got.Data["count"] != want {
		t.Errorf("data.count is %s after %d successful client-go Updates: an update was lost", got.Data["count"], apiUpdates)
	}
	if got.Labels["round"] != lastLabel {
		t.Errorf("label round=%s, want %s, the last one etcdpvc wrote: a label was lost", got.Labels["round"], lastLabel)
	}
	c.capture(t, "plain", "after-cas", stored)
}
