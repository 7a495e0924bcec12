package wal

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// TestWALUser reads the etcd user each request carried: none before
// etcd's authentication is enabled, the authenticated user after.
func TestWALUser(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{InProcess: true})
	cli := c.Client(t)
	const key = "/registry/configmaps/demo/who"
	if _, err := cli.Put(ctx, key, "anonymous"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserAdd(ctx, "root", "root-pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	authed, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), Username: "root", Password: "root-pw", DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer authed.Close()
	if _, err := authed.Put(ctx, key, "by root"); err != nil {
		t.Fatal(err)
	}
	c.StopMember(0)
	w, err := OpenWALOver(ctx, filepath.Join(c.DataDir(0), "member", "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	if err := w.KeyWrites(ctx, key, false, func(kw KeyWrite) error {
		u, err := w.User(kw.Entry)
		users = append(users, u)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(users) != 2 || users[0] != "" || users[1] != "root" {
		t.Fatalf("users %q, want [\"\" root]", users)
	}
}
