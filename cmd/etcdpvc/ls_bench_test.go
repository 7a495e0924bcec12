package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// loadObjects writes n objects into etcd, half PVCs and half Pods built
// from corpus values with their names changed; every terminatingEvery-th
// PVC is Terminating. It returns how many are Terminating.
func loadObjects(t testing.TB, cli *clientv3.Client, n, terminatingEvery int) int {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("../../fixtures/corpus/plain", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pvc := read("persistentvolumeclaims__demo__www-web-1__bound.bin")
	pvcTerm := read("persistentvolumeclaims__demo__www-web-0__terminating.bin")
	pod := read("pods__demo__web-0.bin")
	terminating := 0
	ctx := context.Background()
	const batch = 128 // etcd's default --max-txn-ops
	var ops []clientv3.Op
	flush := func() {
		if len(ops) == 0 {
			return
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
		ops = ops[:0]
	}
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("ns-%03d", i%100)
		name := fmt.Sprintf("obj-%07d", i)
		var key string
		var v []byte
		var err error
		switch {
		case i%2 == 1:
			key = "/registry/pods/" + ns + "/" + name
			v, err = rename(pod, ns, name)
		case terminatingEvery > 0 && (i/2)%terminatingEvery == 0:
			key = "/registry/persistentvolumeclaims/" + ns + "/" + name
			v, err = rename(pvcTerm, ns, name)
			terminating++
		default:
			key = "/registry/persistentvolumeclaims/" + ns + "/" + name
			v, err = rename(pvc, ns, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, clientv3.OpPut(key, string(v)))
		if len(ops) == batch {
			flush()
		}
	}
	flush()
	return terminating
}

// rename returns a stored protobuf value with another name and namespace.
func rename(value []byte, ns, name string) ([]byte, error) {
	obj, err := codec.Decode(value)
	if err != nil {
		return nil, err
	}
	obj.Meta.Name, obj.Meta.Namespace = name, ns
	return codec.EncodeTyped(obj.Typed, codec.FormatProtobuf)
}

// buildBinary builds etcdpvc once for tests that run it as a process.
func buildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "etcdpvc")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// runProcess runs the binary and returns stdout, its wall time and its
// peak RSS in bytes. The peak is the child's own VmHWM, polled from /proc:
// rusage's maxrss of a child started by fork+exec is at least the parent's
// RSS at the fork, which here is the test process holding a whole etcd.
func runProcess(t testing.TB, bin string, env []string, args ...string) ([]byte, time.Duration, int64) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var peak int64
	go func() {
		defer close(done)
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			b, err := os.ReadFile(status)
			if err != nil {
				return
			}
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
					if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb*1024 > peak {
						peak = kb * 1024
					}
				}
			}
			if strings.Contains(string(b), "State:\tZ") {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	err := cmd.Wait()
	d := time.Since(start)
	<-done
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.Bytes())
	}
	if os.Getenv("ETCDPVC_SHOW_STDERR") != "" {
		os.Stderr.Write(stderr.Bytes())
	}
	return stdout.Bytes(), d, peak
}

// TestLsCountsEveryObject lists more objects than many pages hold and
// counts them: every object must be there, and only the Terminating ones
// with --terminating.
func TestLsCountsEveryObject(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 6000 objects into etcd")
	}
	c := etcdtest.Start(t, etcdtest.Options{})
	const n = 6000
	terminating := loadObjects(t, c.Client(t), n, 10)
	bin := buildBinary(t)
	env := []string{"ETCDCTL_ENDPOINTS=" + strings.Join(c.Endpoints(), ",")}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"ls", "-A", "-o", "json", "--page-size", "250"}, n},
		{[]string{"ls", "pods", "-A", "-o", "json"}, n / 2},
		// ns-000 holds every 100th object, all of them even-numbered PVCs.
		{[]string{"ls", "pvc", "-n", "ns-000", "-o", "json"}, n / 100},
		{[]string{"ls", "pods", "-n", "ns-000", "-o", "json"}, 0},
		{[]string{"ls", "-A", "--terminating", "-o", "json", "--page-size", "77"}, terminating},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, _, _ := runProcess(t, bin, env, tc.args...)
			if got := bytes.Count(out, []byte(`"key":`)); got != tc.want {
				t.Fatalf("listed %d objects, want %d", got, tc.want)
			}
		})
	}
}

// BenchmarkLs loads ETCDPVC_BENCH_OBJECTS (default 100000) PVCs and Pods
// into a real etcd and times `ls -A --terminating` and `ls pods -A` run as
// a process, reporting objects/s and the process's peak RSS. With
// ETCDPVC_BENCH_ETCDCTL naming an etcdctl binary, `etcdctl get --prefix
// --keys-only` and `etcdctl get --prefix -w protobuf` run side by side on
// the same data as references.
func BenchmarkLs(b *testing.B) {
	n := 100000
	if s := os.Getenv("ETCDPVC_BENCH_OBJECTS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	c := etcdtest.Start(b, etcdtest.Options{})
	loadObjects(b, c.Client(b), n, 100)
	bin := buildBinary(b)
	env := []string{"ETCDCTL_ENDPOINTS=" + strings.Join(c.Endpoints(), ",")}
	type run struct {
		name    string
		bin     string
		objects int
		args    []string
	}
	runs := []run{
		{"terminating-all", bin, n, []string{"ls", "-A", "--terminating"}},
		{"pods-all", bin, n / 2, []string{"ls", "pods", "-A"}},
	}
	if etcdctl := os.Getenv("ETCDPVC_BENCH_ETCDCTL"); etcdctl != "" {
		// etcdctl takes the endpoints from ETCDCTL_ENDPOINTS, as etcdpvc does.
		runs = append(runs,
			run{"etcdctl-keys-only", etcdctl, n, []string{"get", "/registry/", "--prefix", "--keys-only"}},
			run{"etcdctl-protobuf", etcdctl, n, []string{"get", "/registry/", "--prefix", "-w", "protobuf"}})
	}
	for _, tc := range runs {
		b.Run(tc.name, func(b *testing.B) {
			var total time.Duration
			var peak int64
			for i := 0; i < b.N; i++ {
				_, d, rss := runProcess(b, tc.bin, env, tc.args...)
				total += d
				if rss > peak {
					peak = rss
				}
			}
			b.ReportMetric(float64(tc.objects)*float64(b.N)/total.Seconds(), "objects/s")
			b.ReportMetric(float64(peak)/(1<<20), "peakRSS-MiB")
		})
	}
}
