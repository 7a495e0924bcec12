package flows

import (
	"k8s.io/apimachinery/pkg/labels"
	"slices"
	"time"

	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// RecoverArgs are recover's arguments and flags as given: which form they
// ask for (one object, a namespace, a selection) is read from them by
// RecoverSetOf, and each form's checks are made before anything is opened.
// Its errors are *cliargs.UsageError.
type RecoverArgs struct {
	// Args are the positional arguments.
	Args []string
	// Namespace and Key are -n and --etcd-key.
	Namespace, Key string
	// Output is -o.
	Output string
	Rev    int64
	// Index is --index: a raft index of --wal; BeforeTime --before-time:
	// the last entry of --wal certainly before it.
	Index      uint64
	BeforeTime time.Time
	// All, Selector: --all, -l.
	All      bool
	Selector string
	// AllNamespaces, Include, Exclude, ReplaceDifferent, MaxTxnOps: the
	// flags of the namespace and selection forms; MaxTxnOpsGiven says
	// whether --max-txn-ops was given.
	AllNamespaces    bool
	Include, Exclude []string
	ReplaceDifferent bool
	MaxTxnOps        int
	MaxTxnOpsGiven   bool
	Write            WriteOptions
	// LiveTarget: --endpoints or --kubeadm was given on the command line,
	// so with --db the object is read from the file and written live.
	LiveTarget bool
}

// RecoverSetOf reads a recover of a namespace (namespace NAME) or a
// selection (RESOURCE --all|-l SELECTOR) from a: ok is false when a asks
// for one object. The flags only those forms take are refused without
// them.
func RecoverSetOf(a RecoverArgs) (r RecoverSet, ok bool, err error) {
	r = RecoverSet{RecoverSetRequest: surgery.RecoverSetRequest{InNamespace: a.Namespace,
		AllNamespaces: a.AllNamespaces, Selector: a.Selector, Include: a.Include, Exclude: a.Exclude,
		ReplaceDifferent: a.ReplaceDifferent, Rev: a.Rev}, MaxTxnOps: a.MaxTxnOps, Write: a.Write}
	setOnly := a.AllNamespaces || len(a.Include) > 0 || len(a.Exclude) > 0 || a.ReplaceDifferent || a.MaxTxnOpsGiven
	switch {
	case a.All || a.Selector != "":
		if a.All && a.Selector != "" {
			return r, true, cliargs.Usagef("give --all or -l SELECTOR, not both")
		}
		if len(a.Args) != 1 {
			return r, true, cliargs.Usagef("recover RESOURCE --all|-l SELECTOR takes one RESOURCE; got %q", a.Args)
		}
		if r.AllNamespaces && r.InNamespace != "" {
			return r, true, cliargs.Usagef("give -n NS or -A, not both")
		}
		r.Resource = a.Args[0]
	case len(a.Args) == 2 && a.Key == "" && a.Output == "" && isNamespaceResource(a.Args[0]):
		r.Namespace = a.Args[1]
		if r.InNamespace != "" {
			return r, true, cliargs.Usagef("recover namespace %s: -n does not apply (a namespace is cluster-scoped)", r.Namespace)
		}
		if r.AllNamespaces {
			return r, true, cliargs.Usagef("recover namespace %s: -A does not apply", r.Namespace)
		}
	default:
		if setOnly {
			return r, false, cliargs.Usagef("-A, --include, --exclude, --replace-different and --max-txn-ops apply to recover namespace NAME and to recover RESOURCE --all|-l SELECTOR")
		}
		return r, false, nil
	}
	if a.Output != "" {
		return r, true, cliargs.Usagef("-o prints one object; recover a namespace or a selection with --dry-run to see its plan")
	}
	if r.MaxTxnOps < 1 {
		return r, true, cliargs.Usagef("--max-txn-ops must be at least 1")
	}
	if r.Selector != "" {
		if _, err := labels.Parse(r.Selector); err != nil {
			return r, true, cliargs.Usagef("-l %q: %v", r.Selector, err)
		}
	}
	if r.Rev < 0 {
		return r, true, cliargs.Usagef("--rev must not be negative")
	}
	if a.Write.Out != "" && a.LiveTarget {
		return r, true, cliargs.Usagef("give --out OUT (write into a copy of --db) or --endpoints/--kubeadm (write live), not both")
	}
	return r, true, nil
}

// isNamespaceResource reports whether name names the namespaces resource.
func isNamespaceResource(name string) bool {
	r, err := resource.Lookup(name)
	return err == nil && r.Path == "namespaces"
}

// CheckObject checks the flags of a recover of one object, read from the
// write-ahead log when wal: one of --rev and --index, -o without the write
// flags (-o yaml, json or raw), --out or a live target, --index and --out only as the log allows.
func (a RecoverArgs) CheckObject(wal bool) error {
	if n := len(slices.DeleteFunc([]bool{a.Index != 0, a.Rev != 0, !a.BeforeTime.IsZero()}, func(set bool) bool { return !set })); n > 1 {
		return cliargs.Usagef("give one of --rev, --index and --before-time")
	}
	if !a.BeforeTime.IsZero() && !wal {
		return cliargs.Usagef("--before-time TIME is placed by a write-ahead log's times: give --wal")
	}
	if a.Output != "" {
		if err := cliargs.CheckOutput(a.Output, "yaml", "json", "raw"); err != nil {
			return err
		}
		if a.Write.Out != "" || a.Write.Yes || a.Write.DryRun {
			return cliargs.Usagef("-o prints the recovered object and writes nothing: leave out --out, --yes and --dry-run")
		}
	}
	if a.Rev < 0 {
		return cliargs.Usagef("--rev must not be negative")
	}
	if a.Write.Out != "" && a.LiveTarget {
		return cliargs.Usagef("give --out OUT (write into a copy of --db) or --endpoints/--kubeadm (write live), not both")
	}
	if a.Index != 0 && !wal {
		return cliargs.Usagef("--index N reads raft index N of a write-ahead log: give --wal")
	}
	if wal && a.Write.Out != "" {
		return cliargs.Usagef("--out writes into a copy of --db, which does not hold the log's writes: with --wal, write live with --endpoints/--kubeadm, or print with -o yaml")
	}
	return nil
}
