package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

var update = flag.Bool("update", false, "rewrite the cmp files of the txtar scripts")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"etcdpvc": func() {
			ctx, stop := context.WithCancel(context.Background())
			code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		},
		// etcdpvc-main is the real main, with its signal handling.
		"etcdpvc-main": main,
		// The kubectl plugin's names: the same main, named by argv[0].
		kubectlPlugin:     main,
		kubectlCompletion: main,
	})
}

// TestScripts runs the CLI end-to-end scripts in testdata/script against
// real in-process etcd servers.
func TestScripts(t *testing.T) {
	corpus, err := filepath.Abs("../../fixtures/corpus")
	if err != nil {
		t.Fatal(err)
	}
	peer, _ := filepath.Abs("../../fixtures/peer")
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("CORPUS", corpus)
			e.Setenv("PEER", peer)
			e.Setenv("ETCDPVC_NOW", "2026-12-03T00:35:10Z")
			e.Setenv("NO_COLOR", "1")
			e.Setenv("XDG_STATE_HOME", filepath.Join(e.WorkDir, ".state"))
			e.Setenv("XDG_CACHE_HOME", filepath.Join(e.WorkDir, ".cache"))
			tb, ok := e.T().(testing.TB)
			if !ok {
				return fmt.Errorf("script T %T is not a testing.TB", e.T())
			}
			scripts.register(e.WorkDir, tb)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"etcd":        cmdEtcd,
			"sha256":      cmdSHA256,
			"mode":        cmdMode,
			"glob":        cmdGlob,
			"status":      cmdStatus,
			"damage":      cmdDamage,
			"walmark":     cmdWALMark,
			"walpurge":    cmdWALPurge,
			"compactloop": cmdCompactLoop,
			"etcdload":    cmdEtcdLoad,
			"etcdcount":   cmdEtcdCount,
			"etcdfill":    cmdEtcdFill,
			"lines":       cmdLines,
			"protofield":  cmdProtoField,
			"envquoted":   cmdEnvQuoted,
			"wiretype":    cmdWireType,
		},
	})
}

type scriptCluster struct {
	t   testing.TB
	c   *etcdtest.Cluster
	cli *clientv3.Client
	// named are the further clusters of `etcd -c NAME ...`.
	named map[string]*scriptCluster
}

// cmdEtcd drives a real etcd for a script:
//
//	etcd start [tls] [members=N] [quota=BYTES]   start it; sets ETCDCTL_ENDPOINTS (and ETCDCTL_CACERT/CERT/KEY)
//	etcd put KEY FILE [ttl=S|lease=KEY2]  store FILE's bytes at KEY (with a lease of S seconds, or the lease KEY2 is attached to)
//	etcd get KEY FILE              write KEY's value to FILE
//	etcd meta KEY                  print mod_revision, create_revision, version and lease
//	etcd del KEY [--prefix]        delete KEY (every key it prefixes: one range delete)
//	etcd txnput KEY FILE           store FILE's bytes at KEY as kube-apiserver writes: one transaction comparing the key's mod revision (0: absent)
//	etcd txndel KEY                delete KEY the same way
//	etcd txnvalue KEY VFILE PUT FILE  store FILE's bytes at PUT in one transaction comparing KEY's value with VFILE's bytes (etcdctl txn's value("KEY") = "V")
//	etcd revoke KEY                revoke the lease KEY is attached to (as its expiry does), deleting every key attached to it
//	etcd compact                   compact at the current revision
//	etcd db VAR                    set VAR to member 0's bbolt db (member/snap/db)
//	etcd wal VAR [MEMBER]          set VAR to member 0's (or MEMBER's) wal directory (member/wal)
//	etcd stop                      stop the cluster
//
// `etcd -c NAME SUBCOMMAND ...` drives a second cluster NAME instead; its
// start sets NAME_ENDPOINTS (and NAME_CACERT/CERT/KEY), not ETCDCTL_*.
func cmdEtcd(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("etcd does not support !")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sc := scripts.get(ts)
	envPrefix := "ETCDCTL_"
	if len(args) > 2 && args[0] == "-c" {
		if sc.named == nil {
			sc.named = map[string]*scriptCluster{}
		}
		if sc.named[args[1]] == nil {
			sc.named[args[1]] = &scriptCluster{t: sc.t}
		}
		sc, envPrefix, args = sc.named[args[1]], args[1]+"_", args[2:]
	}
	if len(args) == 0 {
		ts.Fatalf("usage: etcd [-c NAME] start|put|get|meta|del|compact|db|wal|snapshot|stop ...")
	}
	if args[0] != "start" && sc.c == nil {
		ts.Fatalf("etcd %s: no cluster; run etcd start first", args[0])
	}
	switch args[0] {
	case "start":
		opts := etcdtest.Options{}
		for _, a := range args[1:] {
			switch {
			case a == "tls":
				opts.TLS = true
			case strings.HasPrefix(a, "members="):
				opts.Members, _ = strconv.Atoi(strings.TrimPrefix(a, "members="))
			case strings.HasPrefix(a, "quota="):
				opts.QuotaBackendBytes, _ = strconv.ParseInt(strings.TrimPrefix(a, "quota="), 10, 64)
			case strings.HasPrefix(a, "max-txn-ops="):
				n, _ := strconv.Atoi(strings.TrimPrefix(a, "max-txn-ops="))
				opts.MaxTxnOps = uint(n)
			default:
				ts.Fatalf("etcd start: unknown option %q", a)
			}
		}
		c := etcdtest.Start(sc.t, opts)
		sc.c, sc.cli = c, c.Client(sc.t)
		ts.Setenv(envPrefix+"ENDPOINTS", strings.Join(c.Endpoints(), ","))
		if opts.TLS {
			ca, cert, key := c.TLSFiles()
			ts.Setenv(envPrefix+"CACERT", ca)
			ts.Setenv(envPrefix+"CERT", cert)
			ts.Setenv(envPrefix+"KEY", key)
		}
	case "put":
		if len(args) < 3 {
			ts.Fatalf("usage: etcd put KEY FILE [ttl=S]")
		}
		value := ts.ReadFile(args[2])
		var opts []clientv3.OpOption
		if len(args) > 3 && strings.HasPrefix(args[3], "ttl=") {
			ttl, _ := strconv.ParseInt(strings.TrimPrefix(args[3], "ttl="), 10, 64)
			lease, err := sc.cli.Grant(ctx, ttl)
			ts.Check(err)
			opts = append(opts, clientv3.WithLease(lease.ID))
		}
		if len(args) > 3 && strings.HasPrefix(args[3], "lease=") {
			resp, err := sc.cli.Get(ctx, strings.TrimPrefix(args[3], "lease="))
			ts.Check(err)
			if len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 {
				ts.Fatalf("etcd put %s: %s: no key with a lease", args[1], args[3])
			}
			opts = append(opts, clientv3.WithLease(clientv3.LeaseID(resp.Kvs[0].Lease)))
		}
		_, err := sc.cli.Put(ctx, args[1], value, opts...)
		ts.Check(err)
	case "get":
		if len(args) != 3 {
			ts.Fatalf("usage: etcd get KEY FILE")
		}
		resp, err := sc.cli.Get(ctx, args[1])
		ts.Check(err)
		if len(resp.Kvs) == 0 {
			ts.Fatalf("etcd get %s: not found", args[1])
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[2]), resp.Kvs[0].Value, 0o600))
	case "meta":
		resp, err := sc.cli.Get(ctx, args[1])
		ts.Check(err)
		if len(resp.Kvs) == 0 {
			fmt.Fprintf(ts.Stdout(), "absent\n")
			return
		}
		kv := resp.Kvs[0]
		fmt.Fprintf(ts.Stdout(), "mod_revision=%d create_revision=%d version=%d lease=%x\n", kv.ModRevision, kv.CreateRevision, kv.Version, kv.Lease)
	case "del":
		var opts []clientv3.OpOption
		switch {
		case len(args) == 3 && args[2] == "--prefix":
			opts = append(opts, clientv3.WithPrefix())
		case len(args) != 2:
			ts.Fatalf("usage: etcd del KEY [--prefix]")
		}
		_, err := sc.cli.Delete(ctx, args[1], opts...)
		ts.Check(err)
	case "txnput", "txndel":
		if (args[0] == "txnput") != (len(args) == 3) || len(args) < 2 {
			ts.Fatalf("usage: etcd txnput KEY FILE | etcd txndel KEY")
		}
		resp, err := sc.cli.Get(ctx, args[1])
		ts.Check(err)
		var mod int64
		if len(resp.Kvs) > 0 {
			mod = resp.Kvs[0].ModRevision
		}
		then := clientv3.OpDelete(args[1])
		if args[0] == "txnput" {
			then = clientv3.OpPut(args[1], ts.ReadFile(args[2]))
		}
		tr, err := sc.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(args[1]), "=", mod)).Then(then).Else(clientv3.OpGet(args[1])).Commit()
		ts.Check(err)
		if !tr.Succeeded {
			ts.Fatalf("etcd %s %s: the compare on mod revision %d failed", args[0], args[1], mod)
		}
	case "txnvalue":
		if len(args) != 5 {
			ts.Fatalf("usage: etcd txnvalue KEY VFILE PUT FILE")
		}
		tr, err := sc.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(args[1]), "=", ts.ReadFile(args[2]))).Then(clientv3.OpPut(args[3], ts.ReadFile(args[4]))).Commit()
		ts.Check(err)
		if !tr.Succeeded {
			ts.Fatalf("etcd txnvalue %s: the compare on its value failed", args[1])
		}
	case "revoke":
		if len(args) != 2 {
			ts.Fatalf("usage: etcd revoke KEY")
		}
		resp, err := sc.cli.Get(ctx, args[1])
		ts.Check(err)
		if len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 {
			ts.Fatalf("etcd revoke %s: no key with a lease", args[1])
		}
		_, err = sc.cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
		ts.Check(err)
	case "compact":
		resp, err := sc.cli.Get(ctx, "compact-probe")
		ts.Check(err)
		_, err = sc.cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
		ts.Check(err)
	case "db", "wal":
		if len(args) != 2 && len(args) != 3 {
			ts.Fatalf("usage: etcd %s VAR [MEMBER]", args[0])
		}
		m := 0
		if len(args) == 3 {
			var err error
			if m, err = strconv.Atoi(args[2]); err != nil {
				ts.Fatalf("etcd %s: member %q: %v", args[0], args[2], err)
			}
		}
		dir := filepath.Join(sc.c.DataDir(m), "member", "wal")
		if args[0] == "db" {
			dir = filepath.Join(sc.c.DataDir(m), "member", "snap", "db")
		}
		ts.Setenv(args[1], dir)
	case "snapshot":
		if len(args) != 2 {
			ts.Fatalf("usage: etcd snapshot FILE")
		}
		rc, err := sc.cli.Snapshot(ctx)
		ts.Check(err)
		b, err := io.ReadAll(rc)
		ts.Check(errors.Join(err, rc.Close()))
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), b, 0o600))
	case "stop":
		sc.c.Stop()
	default:
		ts.Fatalf("etcd: unknown subcommand %q", args[0])
	}
}

// cmdSHA256 prints the sha256 of a file (sha256sum's), or with
// `sha256 FILE VAR` sets VAR to it.
func cmdSHA256(ts *testscript.TestScript, neg bool, args []string) {
	sum := sha256.Sum256([]byte(ts.ReadFile(args[0])))
	if len(args) > 1 {
		ts.Setenv(args[1], hex.EncodeToString(sum[:]))
		return
	}
	fmt.Fprintf(ts.Stdout(), "%s\n", hex.EncodeToString(sum[:]))
}

// cmdEnvQuoted sets an environment variable to a Go string literal's
// value (envquoted KEY '/registry/configmaps/demo/\x1b[2J'):
// for bytes a script cannot spell, such as a terminal's controls.
func cmdEnvQuoted(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: envquoted NAME GO-STRING")
	}
	v, err := strconv.Unquote(`"` + args[1] + `"`)
	ts.Check(err)
	ts.Setenv(args[0], v)
}

// cmdMode prints the permission bits of every file matching a glob.
func cmdMode(ts *testscript.TestScript, neg bool, args []string) {
	matches, err := filepath.Glob(ts.MkAbs(args[0]))
	ts.Check(err)
	if len(matches) == 0 {
		ts.Fatalf("mode: nothing matches %s", args[0])
	}
	for _, m := range matches {
		fi, err := os.Stat(m)
		ts.Check(err)
		fmt.Fprintf(ts.Stdout(), "%s %o\n", filepath.Base(m), fi.Mode().Perm())
	}
}

// cmdGlob sets an environment variable to the one file matching a glob.
func cmdGlob(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: glob NAME PATTERN")
	}
	matches, err := filepath.Glob(ts.MkAbs(args[1]))
	ts.Check(err)
	if len(matches) != 1 {
		ts.Fatalf("glob %s: %d matches, want 1", args[1], len(matches))
	}
	ts.Setenv(args[0], matches[0])
}
