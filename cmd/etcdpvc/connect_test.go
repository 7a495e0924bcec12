package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
)

// TestUserPassword: --user user:password and ETCDCTL_USER=user:password
// work as in etcdctl (split on the first colon, unless --password is
// given) against a real etcd with authentication enabled.
func TestUserPassword(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	value, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "corpus", "plain", "persistentvolumeclaims__demo__www-web-0__terminating.bin"))
	if err != nil {
		t.Fatal(err)
	}
	c.Put(t, "/registry/persistentvolumeclaims/demo/www-web-0", value)
	cli := c.Client(t)
	ctx := context.Background()
	const password = "s3:cr3t" // a colon in the password: only the first one splits
	if _, err := cli.UserAdd(ctx, "root", password); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	get := []string{"get", "pvc", "www-web-0", "-n", "demo", "--endpoints", c.Endpoints()[0], "--dial-timeout", "5s"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		ok   bool
	}{
		{"--user user:password", []string{"--user", "root:" + password}, nil, true},
		{"--user and --password", []string{"--user", "root", "--password", password}, nil, true},
		{"ETCDCTL_USER=user:password", nil, map[string]string{"ETCDCTL_USER": "root:" + password}, true},
		{"ETCDCTL_USER and ETCDCTL_PASSWORD", nil, map[string]string{"ETCDCTL_USER": "root", "ETCDCTL_PASSWORD": password}, true},
		// With --password, --user is the whole user name, as in etcdctl.
		{"--password wins", []string{"--user", "root:wrong", "--password", password}, nil, false},
		{"wrong password", []string{"--user", "root:wrong"}, nil, false},
		{"no credentials", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"ETCDCTL_USER", "ETCDCTL_PASSWORD", "ETCDCTL_ENDPOINTS"} {
				t.Setenv(k, tc.env[k])
			}
			var stdout, stderr bytes.Buffer
			code := run(ctx, append(append([]string{}, get...), tc.args...), strings.NewReader(""), &stdout, &stderr)
			if tc.ok && (code != exitcode.OK || !strings.Contains(stdout.String(), "name: www-web-0")) {
				t.Errorf("exit status %d, stderr %s", code, stderr.String())
			}
			t.Logf("exit %d: %s", code, stderr.String())
			if !tc.ok && code == exitcode.OK {
				t.Errorf("succeeded without the right credentials")
			}
			if strings.Contains(stderr.String(), password) {
				t.Errorf("the password is printed: %s", stderr.String())
			}
		})
	}
}
