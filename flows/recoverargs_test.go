package flows

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/etcdpvc/etcdpvc/internal/cliargs"
)

func TestRecoverSetOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    RecoverArgs
		ok   bool
		err  string
		// namespace, resource: what the set recovers.
		namespace, resource string
	}{
		{name: "one object", a: RecoverArgs{Args: []string{"pvc", "x"}, MaxTxnOps: 128}},
		{name: "one namespace by kind", a: RecoverArgs{Args: []string{"ns/demo"}, MaxTxnOps: 128}},
		{name: "namespace", a: RecoverArgs{Args: []string{"namespace", "demo"}, Rev: 7, MaxTxnOps: 128}, ok: true, namespace: "demo"},
		{name: "ns short name", a: RecoverArgs{Args: []string{"ns", "demo"}, MaxTxnOps: 128}, ok: true, namespace: "demo"},
		{name: "namespace with -o is one object", a: RecoverArgs{Args: []string{"ns", "demo"}, Output: "yaml", MaxTxnOps: 128}},
		{name: "namespace with --etcd-key is one object", a: RecoverArgs{Args: []string{"ns", "demo"}, Key: "/registry/namespaces/demo", MaxTxnOps: 128}},
		{name: "namespace -n", a: RecoverArgs{Args: []string{"ns", "demo"}, Namespace: "x", MaxTxnOps: 128}, ok: true,
			err: "recover namespace demo: -n does not apply (a namespace is cluster-scoped)"},
		{name: "namespace -A", a: RecoverArgs{Args: []string{"ns", "demo"}, AllNamespaces: true, MaxTxnOps: 128}, ok: true, err: "recover namespace demo: -A does not apply"},
		{name: "selection", a: RecoverArgs{Args: []string{"cm"}, Selector: "app=web", Namespace: "demo", MaxTxnOps: 128}, ok: true, resource: "cm"},
		{name: "all", a: RecoverArgs{Args: []string{"cm"}, All: true, AllNamespaces: true, MaxTxnOps: 128}, ok: true, resource: "cm"},
		{name: "all and -l", a: RecoverArgs{Args: []string{"cm"}, All: true, Selector: "a=b", MaxTxnOps: 128}, ok: true, err: "give --all or -l SELECTOR, not both"},
		{name: "all without a resource", a: RecoverArgs{All: true, MaxTxnOps: 128}, ok: true, err: "recover RESOURCE --all|-l SELECTOR takes one RESOURCE; got []"},
		{name: "all -n -A", a: RecoverArgs{Args: []string{"cm"}, All: true, Namespace: "d", AllNamespaces: true, MaxTxnOps: 128}, ok: true, err: "give -n NS or -A, not both"},
		{name: "set-only flag on one object", a: RecoverArgs{Args: []string{"pvc", "x"}, Include: []string{"events"}, MaxTxnOps: 128},
			err: "-A, --include, --exclude, --replace-different and --max-txn-ops apply to recover namespace NAME and to recover RESOURCE --all|-l SELECTOR"},
		{name: "max-txn-ops on one object", a: RecoverArgs{Args: []string{"pvc", "x"}, MaxTxnOps: 5, MaxTxnOpsGiven: true},
			err: "-A, --include, --exclude, --replace-different and --max-txn-ops apply to recover namespace NAME and to recover RESOURCE --all|-l SELECTOR"},
		{name: "-o on a set", a: RecoverArgs{Args: []string{"cm"}, All: true, Output: "yaml", MaxTxnOps: 128}, ok: true,
			err: "-o prints one object; recover a namespace or a selection with --dry-run to see its plan"},
		{name: "max-txn-ops 0", a: RecoverArgs{Args: []string{"ns", "demo"}, MaxTxnOps: 0}, ok: true, err: "--max-txn-ops must be at least 1"},
		{name: "bad selector", a: RecoverArgs{Args: []string{"cm"}, Selector: "app in (", MaxTxnOps: 128}, ok: true, err: `-l "app in (": `},
		{name: "negative rev", a: RecoverArgs{Args: []string{"ns", "demo"}, Rev: -1, MaxTxnOps: 128}, ok: true, err: "--rev must not be negative"},
		{name: "out and live", a: RecoverArgs{Args: []string{"ns", "demo"}, Write: WriteOptions{Out: "o.db"}, LiveTarget: true, MaxTxnOps: 128}, ok: true,
			err: "give --out OUT (write into a copy of --db) or --endpoints/--kubeadm (write live), not both"},
	} {
		r, ok, err := RecoverSetOf(tc.a)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
		}
		if !matches(err, tc.err) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			continue
		}
		if err == nil && ok {
			if diff := cmp.Diff([]string{tc.namespace, tc.resource}, []string{r.Namespace, r.Resource}); diff != "" {
				t.Errorf("%s: (-want +got):\n%s", tc.name, diff)
			}
			if r.Rev != tc.a.Rev || r.MaxTxnOps != tc.a.MaxTxnOps || r.InNamespace != tc.a.Namespace || r.Selector != tc.a.Selector {
				t.Errorf("%s: %+v does not carry the flags of %+v", tc.name, r, tc.a)
			}
		}
	}
}

func TestRecoverArgsCheckObject(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    RecoverArgs
		wal  bool
		err  string
	}{
		{name: "plain", a: RecoverArgs{}},
		{name: "rev and index", a: RecoverArgs{Rev: 3, Index: 9}, wal: true, err: "give one of --rev, --index and --before-time"},
		{name: "index and time", a: RecoverArgs{Index: 9, BeforeTime: time.Unix(1, 0)}, wal: true, err: "give one of --rev, --index and --before-time"},
		{name: "time without a log", a: RecoverArgs{BeforeTime: time.Unix(1, 0)}, err: "--before-time TIME is placed by a write-ahead log"},
		{name: "unknown output", a: RecoverArgs{Output: "xml"}, err: `-o "xml": must be one of [yaml json raw]`},
		{name: "output and yes", a: RecoverArgs{Output: "yaml", Write: WriteOptions{Yes: true}},
			err: "-o prints the recovered object and writes nothing: leave out --out, --yes and --dry-run"},
		{name: "raw", a: RecoverArgs{Output: "raw"}},
		{name: "negative rev", a: RecoverArgs{Rev: -2}, err: "--rev must not be negative"},
		{name: "out and live", a: RecoverArgs{Write: WriteOptions{Out: "o.db"}, LiveTarget: true},
			err: "give --out OUT (write into a copy of --db) or --endpoints/--kubeadm (write live), not both"},
		{name: "index without wal", a: RecoverArgs{Index: 9}, err: "--index N reads raft index N of a write-ahead log: give --wal"},
		{name: "index with wal", a: RecoverArgs{Index: 9}, wal: true},
		{name: "wal and out", a: RecoverArgs{Write: WriteOptions{Out: "o.db"}}, wal: true,
			err: "--out writes into a copy of --db, which does not hold the log's writes: with --wal, write live with --endpoints/--kubeadm, or print with -o yaml"},
	} {
		if err := tc.a.CheckObject(tc.wal); !matches(err, tc.err) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

// matches reports whether err is a *cliargs.UsageError starting with want,
// or nil when want is "".
func matches(err error, want string) bool {
	if want == "" || err == nil {
		return want == "" && err == nil
	}
	var u *cliargs.UsageError
	return errors.As(err, &u) && len(u.Msg) >= len(want) && u.Msg[:len(want)] == want
}
