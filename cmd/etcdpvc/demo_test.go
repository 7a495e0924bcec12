package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/internal/exitcode"
)

// TestDemo runs `etcdpvc demo` as a newcomer would and checks that every
// step ran and that it leaves nothing behind.
func TestDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("NO_COLOR", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"demo"}, strings.NewReader(""), &stdout, &stderr); code != exitcode.OK {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, re := range []string{
		`(?m)^\$ etcdpvc ls -A --terminating\nNAMESPACE .*\ndemo +www-web-0 +PersistentVolumeClaim .* Terminating `,
		`(?m)^demo +www-web-1 +Bound +pv-www-web-1 +5Gi +RWO +local-disks +\S+ +Retain +- `,
		`(?m)^\$ etcdpvc get pvc www-web-0 -n demo\napiVersion: v1\n`,
		`(?m)^  deletionTimestamp: "2026-11-30T00:35:10Z"$`,
		`(?m)^\$ etcdpvc get secret web-secret -n demo\napiVersion: v1\ndata:\n  password: '<redacted: 12 bytes>'$`,
		`(?m)^\$ etcdpvc undelete pvc www-web-0 -n demo --dry-run\n--- /registry/persistentvolumeclaims/demo/www-web-0 \(revision 5\)$`,
		`(?m)^-  deletionTimestamp: "2026-11-30T00:35:10Z"$`,
		`(?m)^written: /registry/persistentvolumeclaims/demo/www-web-0 revision 5 → 10 \(etcd \S+\)$`,
		`(?m)^10 +\S.* +2 +5 +- +- +-deletionGracePeriodSeconds, -deletionTimestamp$`,
		`(?m)^\$ etcdpvc restore \S+-r5\.json --yes --backup-dir \S+$`,
		`(?m)^written: /registry/persistentvolumeclaims/demo/www-web-0 revision 10 → 11 \(etcd \S+\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("demo output does not match %s", re)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr.String())
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("demo left %d entries in TMPDIR, e.g. %s", len(left), left[0].Name())
	}
}
