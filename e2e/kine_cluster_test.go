package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// startKine starts kine on a SQLite database in c.Dir/db/state.db, where
// k3s keeps it, or on the datastore of ClusterOptions.KineEndpoint, listening on c.Dir/kine.sock (or, with KineTCP, a port of
// 127.0.0.1), and waits until it answers. kine's own compaction is off, as
// the apiserver's is, so that the table keeps every revision.
func (c *Cluster) startKine() error {
	if err := os.MkdirAll(filepath.Join(c.Dir, "db"), 0o700); err != nil {
		return err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		listen := "unix://" + filepath.Join(c.Dir, "kine.sock")
		c.EtcdURL = listen
		if c.opts.KineTCP {
			listen = fmt.Sprintf("127.0.0.1:%d", freePort())
			c.EtcdURL = "http://" + listen
		}
		endpoint := c.opts.KineEndpoint
		if endpoint == "" {
			endpoint = "sqlite://" + c.KineDB() + "?_journal_mode=WAL&_busy_timeout=30000&_synchronous=NORMAL&_txlock=immediate&cache=shared"
		}
		args := append([]string{"--endpoint", endpoint, "--listen-address", listen, "--compact-interval", "0"}, c.opts.KineFlags...)
		p, err := startProc("kine", filepath.Join(c.Dir, fmt.Sprintf("kine-%d-%d.log", time.Now().UnixNano(), attempt)), suite.kine, args...)
		if err != nil {
			return err
		}
		c.etcd = p
		if lastErr = c.waitEtcd(); lastErr == nil {
			return nil
		}
		p.stop(stopGrace)
		if !strings.Contains(p.tail(20), "address already in use") {
			break
		}
	}
	return lastErr
}

// KineDB is the SQLite database of a cluster started with Kine.
func (c *Cluster) KineDB() string {
	return filepath.Join(c.Dir, "db", "state.db")
}
