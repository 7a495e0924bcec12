package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKine runs the seed scenarios on a cluster whose etcd is kine on
// SQLite, reached over its unix socket as on a single-server k3s, with
// encryption at rest: a PVC stuck Terminating undeleted, an immutable
// field changed, a deleted ConfigMap recovered with its uid from the
// table's history, each undo restored, and a write that races an
// apiserver update refused with a conflict.
func TestKine(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "encryption-config.yaml")
	if err := os.WriteFile(cfg, []byte(encryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "kine", ClusterOptions{Kine: true, EncryptionConfig: cfg})
	if !strings.HasPrefix(c.EtcdURL, "unix://") {
		t.Fatalf("kine listens on %s, want a unix socket", c.EtcdURL)
	}
	t.Run("--node finds k3s on kine", func(t *testing.T) {
		// A k3s server without embedded etcd, laid out below a test root:
		// its socket is kine's, its encryption config where k3s keeps it.
		root := t.TempDir()
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		layNode(t, root, nodeLayout{files: map[string]string{
			"etc/rancher/k3s/config.yaml":                            "secrets-encryption: true\n",
			"var/lib/rancher/k3s/server/cred/encryption-config.json": string(b),
			"var/lib/rancher/k3s/server/db/state.db":                 "",
		}}, 0o600)
		if err := os.Symlink(strings.TrimPrefix(c.EtcdURL, "unix://"), filepath.Join(root, "var/lib/rancher/k3s/server/kine.sock")); err != nil {
			t.Fatal(err)
		}
		r := runEtcdpvc(t, nil, "--node", root, "get", "ns", "kube-system", "-o", "yaml")
		if r.code != 0 || !strings.Contains(r.stdout, "name: kube-system") {
			t.Errorf("--node on k3s with kine: want kube-system read through the socket:\n%s", r)
		}
		if r := runEtcdpvc(t, nil, "--node", root, "doctor"); r.code != 0 || !strings.Contains(r.stdout, "kine, not etcd") {
			t.Errorf("--node doctor on k3s with kine:\n%s", r)
		}
	})

	kineScenarios(t, c, cfg)
}

// kineScenarios runs TestKine's seed scenarios on c, a cluster on kine
// with the encryption config cfg, through its etcd API and the apiserver.
func kineScenarios(t *testing.T, c *Cluster, cfg string) {
	const ns = "demo"
	c.EnsureNamespace(t, ns)
	ctx := context.Background()
	enc := []string{"--encryption-config", cfg}

	t.Run("doctor names kine", func(t *testing.T) {
		r := c.etcdpvc(t, append([]string{"doctor"}, enc...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "kine, not etcd") {
			t.Errorf("doctor: want exit status 0 and the endpoint named as kine:\n%s", r)
		}
	})

	t.Run("reads", func(t *testing.T) {
		dir := t.TempDir()
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"ls", "-A"}, 0, "kube-system"},
			{[]string{"get", "ns", "kube-system", "-o", "yaml"}, 0, "kube-system"},
			{[]string{"history", "ns", "kube-system"}, 0, "created"},
			{[]string{"stats"}, 0, "namespaces"},
			{[]string{"report", "-o", filepath.Join(dir, "report.html")}, 0, "report written"},
			{[]string{"dump", "ns"}, 0, "kube-system"},
			// Revision 1 held no namespace yet: they differ.
			{[]string{"diff", "live", "rev:1", "ns"}, 11, "kube-system"},
		} {
			if r := c.etcdpvc(t, append(tc.args, enc...)...); r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Errorf("want exit status %d and %q:\n%s", tc.code, tc.want, r)
			}
		}
		// etcd's maintenance is refused, naming kine.
		if r := c.etcdpvc(t, "space"); r.code == 0 || !strings.Contains(r.stderr, "kine (k3s's datastore) serves no alarms") {
			t.Errorf("space over kine: want a refusal naming kine:\n%s", r)
		}
	})

	t.Run("undelete terminating pvc", func(t *testing.T) {
		const name = "www-web-0"
		key := "/registry/persistentvolumeclaims/" + ns + "/" + name
		terminatingPVC(t, c, ns, name)
		if p := storedPrefix(c.etcdGet(t, key).Value); p != secretboxPrefix {
			t.Fatalf("the pvc is stored as %s, want %s", p, secretboxPrefix)
		}
		backups := t.TempDir()
		r := c.mustEtcdpvc(t, append([]string{"undelete", "pvc", name, "-n", ns, "--yes", "--backup-dir", backups}, enc...)...)
		backup := backupPath(t, r)
		stored := c.etcdGet(t, key)
		if p := storedPrefix(stored.Value); p != secretboxPrefix {
			t.Errorf("undelete stored %s, want %s", p, secretboxPrefix)
		}
		eventually(t, "the apiserver serves the undeleted pvc", func() error {
			p, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.DeletionTimestamp != nil {
				return fmt.Errorf("still Terminating")
			}
			if p.ResourceVersion != strconv.FormatInt(stored.ModRevision, 10) {
				return fmt.Errorf("resourceVersion %s, want kine's mod revision %d", p.ResourceVersion, stored.ModRevision)
			}
			return nil
		})
		if strings.Contains(r.stderr, "cannot record the cluster") {
			t.Errorf("the backup records no identity of the cluster:\n%s", r)
		}
		var b struct {
			Source struct {
				ClusterID     string `json:"clusterID"`
				KubeSystemUID string `json:"kubeSystemUID"`
			} `json:"source"`
		}
		data, err := os.ReadFile(backup)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &b); err != nil {
			t.Fatal(err)
		}
		ks, err := c.Client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b.Source.ClusterID != "" || b.Source.KubeSystemUID != string(ks.UID) {
			t.Errorf("the backup records cluster ID %q and kube-system uid %q, want none and the apiserver's %q", b.Source.ClusterID, b.Source.KubeSystemUID, ks.UID)
		}
		r = c.mustEtcdpvc(t, append([]string{"restore", backup, "--yes"}, enc...)...)
		eventually(t, "the apiserver serves the restored, Terminating pvc", func() error {
			p, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.DeletionTimestamp == nil {
				return fmt.Errorf("not Terminating after restore")
			}
			return nil
		})
	})

	t.Run("immutable field", func(t *testing.T) {
		pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)
		if _, err := pvcs.Create(ctx, newPVC("data-db-0", "slow", "5Gi"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		backups := t.TempDir()
		r := c.mustEtcdpvc(t, append([]string{"patch", "pvc", "data-db-0", "-n", ns, "-p", `{"spec":{"storageClassName":"fast"}}`, "--yes", "--backup-dir", backups}, enc...)...)
		backup := backupPath(t, r)
		eventually(t, "the apiserver serves the changed class", func() error {
			p, err := pvcs.Get(ctx, "data-db-0", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := deref(p.Spec.StorageClassName); got != "fast" {
				return fmt.Errorf("storageClassName %q", got)
			}
			return nil
		})
		c.mustEtcdpvc(t, append([]string{"restore", backup, "--yes"}, enc...)...)
		eventually(t, "the apiserver serves the class restored", func() error {
			p, err := pvcs.Get(ctx, "data-db-0", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := deref(p.Spec.StorageClassName); got != "slow" {
				return fmt.Errorf("storageClassName %q", got)
			}
			return nil
		})
	})

	t.Run("recover deleted configmap", func(t *testing.T) {
		cms := c.Client.CoreV1().ConfigMaps(ns)
		created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "v1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		r := c.mustEtcdpvc(t, append([]string{"history", "configmap", "settings", "-n", ns}, enc...)...)
		if !strings.Contains(r.stdout, "deleted") {
			t.Errorf("history does not show the delete:\n%s", r)
		}
		backups := t.TempDir()
		r = c.mustEtcdpvc(t, append([]string{"recover", "configmap", "settings", "-n", ns, "--yes", "--backup-dir", backups}, enc...)...)
		backup := backupPath(t, r)
		var got *corev1.ConfigMap
		eventually(t, "the apiserver serves the recovered configmap", func() error {
			got, err = cms.Get(ctx, "settings", metav1.GetOptions{})
			return err
		})
		if got.UID != created.UID || got.Data["mode"] != "v1" {
			t.Errorf("recovered uid %s data %v, want uid %s data mode=v1", got.UID, got.Data, created.UID)
		}
		if p := storedPrefix(c.etcdGet(t, "/registry/configmaps/"+ns+"/settings").Value); p != aesgcmPrefix {
			t.Errorf("recover stored %s, want %s", p, aesgcmPrefix)
		}
		c.mustEtcdpvc(t, append([]string{"restore", backup, "--yes"}, enc...)...)
		eventually(t, "the configmap is gone again after the undo", func() error {
			_, err := cms.Get(ctx, "settings", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still served (%v)", err)
		})
	})

	t.Run("several keys", func(t *testing.T) {
		// kine refuses a transaction of several keys: a delete of a
		// selection, its undo and recover namespace write one key a
		// transaction, as for keys kept in different etcd clusters.
		const sel = "kine-batch"
		cms := c.Client.CoreV1().ConfigMaps(ns)
		for _, name := range []string{"batch-a", "batch-b"} {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"set": sel}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		served := func() int {
			l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "set=" + sel})
			if err != nil {
				t.Fatal(err)
			}
			return len(l.Items)
		}
		dir := t.TempDir()
		c.mustEtcdpvc(t, append([]string{"delete", "configmaps", "-n", ns, "-l", "set=" + sel, "--yes", "--backup-dir", dir}, enc...)...)
		eventually(t, "both configmaps deleted", func() error {
			if n := served(); n != 0 {
				return fmt.Errorf("%d served", n)
			}
			return nil
		})
		lines := auditLines(t, dir)
		c.mustEtcdpvc(t, append([]string{"restore", "--operation", lines[len(lines)-1].OperationID, "--backup-dir", dir, "--yes"}, enc...)...)
		eventually(t, "both configmaps restored", func() error {
			if n := served(); n != 2 {
				return fmt.Errorf("%d served", n)
			}
			return nil
		})

		const gone = "kine-gone"
		c.EnsureNamespace(t, gone)
		rev := ""
		for _, name := range []string{"one", "two"} {
			cm, err := c.Client.CoreV1().ConfigMaps(gone).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rev = cm.ResourceVersion
		}
		for _, name := range []string{"one", "two"} {
			if err := c.Client.CoreV1().ConfigMaps(gone).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		r := c.etcdpvc(t, append([]string{"recover", "namespace", gone, "--rev", rev, "--yes", "--backup-dir", t.TempDir()}, enc...)...)
		if r.code != 0 {
			t.Fatalf("recover namespace over kine: want exit status 0:\n%s", r)
		}
		for _, name := range []string{"one", "two"} {
			eventually(t, "the recovered configmap "+name+" served", func() error {
				_, err := c.Client.CoreV1().ConfigMaps(gone).Get(ctx, name, metav1.GetOptions{})
				return err
			})
		}
	})

	t.Run("watch", func(t *testing.T) {
		// watch replays from the create, then follows kine's watch live:
		// the update and the delete made while it runs are printed.
		cms := c.Client.CoreV1().ConfigMaps(ns)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(suite.etcdpvc, append([]string{"--endpoints", c.EtcdURL, "watch", "cm", "watched", "-n", ns, "--rev", cm.ResourceVersion, "-o", "json"}, enc...)...)
		cmd.Env = append(cleanEnv(), "XDG_STATE_HOME="+t.TempDir(), "NO_COLOR=1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		// next reads the next line: want at revision rev ("": any).
		next := func(want, rev string) {
			t.Helper()
			select {
			case line, ok := <-lines:
				var w struct {
					Type     string `json:"type"`
					Revision int64  `json:"revision"`
				}
				if !ok || json.Unmarshal([]byte(line), &w) != nil || w.Type != want || rev != "" && strconv.FormatInt(w.Revision, 10) != rev {
					t.Fatalf("watch: got %q, want %s at revision %s\n%s", line, want, rev, stderr.String())
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("watch: no %s line in 2 minutes\n%s", want, stderr.String())
			}
		}
		next("ADDED", cm.ResourceVersion)
		cm.Data["n"] = "1"
		updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		next("MODIFIED", updated.ResourceVersion)
		if err := cms.Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		next("DELETED", "")
	})

	t.Run("write racing the apiserver", func(t *testing.T) {
		cms := c.Client.CoreV1().ConfigMaps(ns)
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "raced"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(suite.etcdpvc, append([]string{"--endpoints", c.EtcdURL, "label", "cm", "raced", "-n", ns, "by=etcdpvc", "--yes", "--backup-dir", t.TempDir()}, enc...)...)
		cmd.Env = append(cleanEnv(), "XDG_STATE_HOME="+t.TempDir(), "NO_COLOR=1", holdBeforeSend+"=5s")
		var stdout, stderr strings.Builder
		cmd.Stdout = &stdout
		pipe, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		held, ended := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(ended)
			sc := bufio.NewScanner(pipe)
			once := false
			for sc.Scan() {
				stderr.WriteString(sc.Text() + "\n")
				if !once && strings.Contains(sc.Text(), "test hook "+holdBeforeSend) {
					once = true
					close(held)
				}
			}
		}()
		select {
		case <-held:
		case <-ended:
			t.Fatalf("the label ended before its transaction:\n%s%s", stdout.String(), stderr.String())
		case <-time.After(2 * time.Minute):
			t.Fatal("the label never reached its transaction")
		}
		cm, err := cms.Get(ctx, "raced", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["n"] = "1"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("the apiserver's update: %v", err)
		}
		<-ended
		werr := cmd.Wait()
		code := 0
		if ee, ok := werr.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		out := stdout.String() + stderr.String()
		if code != 4 || !strings.Contains(out, "object changed since it was read") {
			t.Fatalf("a label racing an apiserver update: want exit 4 and a conflict; got %d:\n%s", code, out)
		}
		got, err := cms.Get(ctx, "raced", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Data["n"] != "1" || got.Labels["by"] != "" {
			t.Errorf("after the refused label: data %v labels %v, want n=1 and no label", got.Data, got.Labels)
		}
	})

}

// holdBeforeSend is the test hook that holds a write between its intent
// line and its transaction.
const holdBeforeSend = "ETCDPVC_TEST_HOLD_BEFORE_SEND"

// TestKineTCP reaches kine over its TCP listener, kine alone with no
// kube-apiserver: doctor names it, get reads a key put through kine's etcd
// API, and a write with no kube-system namespace to record warns that
// restore cannot check the cluster, then is undone by its restore.
func TestKineTCP(t *testing.T) {
	c := startCluster(t, "kine-tcp", ClusterOptions{Kine: true, KineTCP: true, EtcdOnly: true})
	if !strings.HasPrefix(c.EtcdURL, "http://127.0.0.1:") {
		t.Fatalf("kine listens on %s, want a port of 127.0.0.1", c.EtcdURL)
	}
	const key = "/registry/configmaps/demo/tcp"
	c.put(t, key, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"tcp","namespace":"demo","uid":"u-tcp"},"data":{"a":"1"}}`))
	if r := c.etcdpvc(t, "doctor"); r.code != 0 || !strings.Contains(r.stdout, "kine, not etcd") {
		t.Errorf("doctor: want exit status 0 and the endpoint named as kine:\n%s", r)
	}
	if r := c.etcdpvc(t, "get", "cm", "tcp", "-n", "demo", "-o", "yaml"); r.code != 0 || !strings.Contains(r.stdout, "u-tcp") {
		t.Errorf("get over kine's TCP listener:\n%s", r)
	}
	dir := t.TempDir()
	r := c.mustEtcdpvc(t, "--verify=never", "label", "cm", "tcp", "-n", "demo", "via=tcp", "--yes", "--backup-dir", dir)
	if !strings.Contains(r.stderr, "kube-system") {
		t.Errorf("a write through kine with no kube-system namespace does not say the backup cannot record the cluster:\n%s", r)
	}
	c.mustEtcdpvc(t, "--verify=never", "restore", backupPath(t, r), "--yes")
	if v := c.etcdGet(t, key).Value; strings.Contains(string(v), "via") {
		t.Errorf("the label is still stored after its restore: %s", v)
	}
}
