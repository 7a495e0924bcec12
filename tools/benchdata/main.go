// Command benchdata makes and measures the offline benchmark data set: a
// real etcd snapshot of a busy Kubernetes keyspace, and the time and memory
// the offline commands take on it.
//
//	benchdata generate [-revisions N] [-dir DIR] [-big-namespace M]
//	benchdata measure  [-revisions N] [-dir DIR] -bin bin/etcdpvc [-cold]
//
// generate starts a real etcd (go.etcd.io/etcd/server/v3/embed) in a
// temporary directory and writes N revisions through clientv3, the way
// kube-apiserver does, one key per transaction: about 30% of N live objects
// of a realistic mix of kinds (the templates are fixtures/corpus/plain, with
// names, namespaces and uids varied), updates (lease heartbeats, status
// changes), deletions, events attached to leases, Terminating
// PersistentVolumeClaims (0.03% of N: about 300 at one million) whose
// earlier revisions are not Terminating, and keys deleted and created
// again (about 30 at one million). It saves the result with the snapshot
// API (`etcdctl snapshot save`) as DIR/bench-N.db and describes it in
// DIR/bench-N.json. DIR defaults to ${XDG_CACHE_HOME:-~/.cache}/etcdpvc-bench,
// outside the git tree. An existing data set is kept. -big-namespace M
// adds namespace bench-big holding M objects that `recover namespace`
// writes (DIR/bench-N-nsM.db), to measure planning and writing a large
// namespace against `ls -A` and one put per value.
//
// measure runs etcdpvc on that file (ls -A, ls -A --terminating, history of
// one key, dump > /dev/null, stats) and a bare bbolt cursor scan of the same
// file, the physical limit, and prints for each seconds, revisions/s, MB/s,
// peak RSS and peak anonymous memory (RssAnon, sampled from
// /proc/PID/status). Warm runs follow a first read of the file; -cold drops
// the page cache first (echo 3 > /proc/sys/vm/drop_caches) where allowed.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchdata generate|measure|scan [flags]")
		os.Exit(2)
	}
	var err error
	ctx := context.Background()
	switch os.Args[1] {
	case "generate":
		err = generateMain(ctx, os.Args[2:])
	case "measure":
		err = measureMain(ctx, os.Args[2:])
	case "scan":
		err = scanMain(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want generate, measure or scan", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchdata: %v\n", err)
		os.Exit(1)
	}
}

// defaultDir is ${XDG_CACHE_HOME:-~/.cache}/etcdpvc-bench.
func defaultDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "etcdpvc-bench")
	}
	return filepath.Join(d, "etcdpvc-bench")
}

// dataset names the files of the data set of n revisions in dir.
func dataset(dir string, n int) (db, manifest string) {
	base := filepath.Join(dir, fmt.Sprintf("bench-%d", n))
	return base + ".db", base + ".json"
}

// walDir is where the data set of db keeps its etcd's write-ahead log:
// the segments the member had not purged when the snapshot was saved, as
// an operator finds them on a node (they start after a raft snapshot).
func walDir(db string) string { return strings.TrimSuffix(db, ".db") + "-wal" }

// olderSnapshot is where the data set of db keeps a snapshot saved before
// the last tenth of its updates, whose consistent index lies inside the
// kept log: the start of a point-in-time snapshot (`etcdpvc --db OLDER
// --wal WAL snapshot --index N`).
func olderSnapshot(db string) string { return strings.TrimSuffix(db, ".db") + "-older.db" }

func exists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, os.ErrNotExist)
}
