package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// recoverSetFlags are the flags of recover's namespace and selection
// forms.
func recoverSetFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "all", Usage: "recover every object of RESOURCE (in -n NS, or every namespace with -A)"},
		&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Usage: "recover the objects of RESOURCE whose labels match this selector (kubectl syntax)"},
		&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "with --all or -l: in every namespace"},
		&cli.StringSliceFlag{Name: "include", Usage: "recover this resource although excluded by default (events, endpoints, endpointslices, leases, owned pods and replicasets); repeatable"},
		&cli.StringSliceFlag{Name: "exclude", Usage: "do not recover this resource; repeatable"},
		&cli.BoolFlag{Name: "replace-different", Usage: "overwrite an existing object whose value differs from the source (compare-and-swap with a backup) instead of skipping it"},
		&cli.IntFlag{Name: "max-txn-ops", Value: store.MaxTxnOps, Usage: "most objects created in one transaction (etcd's --max-txn-ops)"},
	}
}

// recoverSetOptions are the flags of recover's namespace and selection
// forms.
type recoverSetOptions struct {
	Resource         string
	Namespace        string // recover namespace NAME
	InNamespace      string
	AllNamespaces    bool
	Selector         string
	Include, Exclude []string
	Replace          bool
	MaxTxnOps        int
	Rev              int64
	Write            writeOptions
	LiveTarget       bool
}

// recoverSetMode tells whether recover's arguments ask for a namespace or
// a selection, and reads its options.
func recoverSetMode(c *cli.Context) (o recoverSetOptions, ok bool, err error) {
	args := c.Args().Slice()
	all, sel := c.Bool("all"), c.String("selector")
	o = recoverSetOptions{InNamespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"), Selector: sel,
		Include: c.StringSlice("include"), Exclude: c.StringSlice("exclude"), Replace: c.Bool("replace-different"),
		MaxTxnOps: c.Int("max-txn-ops"), Rev: c.Int64("rev"), Write: readWriteOptions(c),
		LiveTarget: flagOnCommandLine(c, "endpoints") || flagOnCommandLine(c, "kubeadm")}
	setOnly := o.AllNamespaces || len(o.Include) > 0 || len(o.Exclude) > 0 || o.Replace || c.IsSet("max-txn-ops")
	switch {
	case all || sel != "":
		if all && sel != "" {
			return o, true, usagef("give --all or -l SELECTOR, not both")
		}
		if len(args) != 1 {
			return o, true, usagef("recover RESOURCE --all|-l SELECTOR takes one RESOURCE; got %q", args)
		}
		if o.AllNamespaces && o.InNamespace != "" {
			return o, true, usagef("give -n NS or -A, not both")
		}
		o.Resource = args[0]
	case len(args) == 2 && c.String("etcd-key") == "" && c.String("output") == "" && isNamespaceResource(args[0]):
		o.Namespace = args[1]
		if o.InNamespace != "" {
			return o, true, usagef("recover namespace %s: -n does not apply (a namespace is cluster-scoped)", o.Namespace)
		}
		if o.AllNamespaces {
			return o, true, usagef("recover namespace %s: -A does not apply", o.Namespace)
		}
	default:
		if setOnly {
			return o, false, usagef("-A, --include, --exclude, --replace-different and --max-txn-ops apply to recover namespace NAME and to recover RESOURCE --all|-l SELECTOR")
		}
		return o, false, nil
	}
	if c.String("output") != "" {
		return o, true, usagef("-o prints one object; recover a namespace or a selection with --dry-run to see its plan")
	}
	if o.MaxTxnOps < 1 {
		return o, true, usagef("--max-txn-ops must be at least 1")
	}
	if o.Selector != "" {
		if _, err := labels.Parse(o.Selector); err != nil {
			return o, true, usagef("-l %q: %v", o.Selector, err)
		}
	}
	return o, true, nil
}

// isNamespaceResource reports whether name names the namespaces resource.
func isNamespaceResource(name string) bool {
	r, err := resource.Lookup(name)
	return err == nil && r.Path == "namespaces"
}

func runRecoverSet(e *env, g *globalOptions, o recoverSetOptions) error {
	if g.WAL != "" {
		return usagef("recover of a namespace or a selection does not read --wal: recover each object (recover RESOURCE NAME), or give a snapshot with --db")
	}
	if g.DB == "" && o.Rev == 0 {
		what := "the objects"
		if o.Namespace != "" {
			what = "namespace " + o.Namespace
		}
		return withHint(usagef("recover %s: name the source: --db SNAPSHOT, or --rev N (the state at revision N of the live history)", what),
			"the revision before the deletion: `etcdpvc history namespace NAME` shows when deletionTimestamp was set; pick the revision just before it")
	}
	src, err := openWriteSession(e, g, o.Write)
	if err != nil {
		return err
	}
	defer src.Close()
	dst := src
	if g.DB != "" && o.Write.Out == "" {
		if !o.LiveTarget {
			return &refusedError{msg: fmt.Sprintf("recover: %s: %v: nothing written", g.DB, store.ErrReadOnly),
				hint: "write into the live cluster by adding --endpoints (or --kubeadm); or into a copy of the file with --out OUT"}
		}
		live := *g
		live.DB = ""
		dst, err = openSession(e, &live)
		if err != nil {
			return err
		}
		defer dst.Close()
	}
	so, err := surgery.RecoverSetRequest{Namespace: o.Namespace, Resource: o.Resource, InNamespace: o.InNamespace, AllNamespaces: o.AllNamespaces,
		Selector: o.Selector, Include: o.Include, Exclude: o.Exclude, Rev: o.Rev, ReplaceDifferent: o.Replace}.Resolve(src.Resolver)
	if err != nil {
		var re *surgery.RequestError
		if errors.As(err, &re) && re.Field != "resource" {
			return usagef("--%s %v", re.Field, err)
		}
		return usagef("%v", err)
	}
	srcReader, dstReader := src.Reader, dst.Reader
	plan, err := dst.Planner.PlanRecoverSet(e.ctx, srcReader, dstReader, so)
	if err != nil {
		if errors.Is(err, surgery.ErrMissingCRD) {
			return &refusedError{msg: err.Error() + "; nothing written", hint: "recover the CustomResourceDefinition from an older snapshot first, or leave the custom resources out with --exclude"}
		}
		return err
	}
	from := src.Description
	if o.Rev != 0 {
		from = fmt.Sprintf("%s at revision %d", from, o.Rev)
	}
	fmt.Fprintf(e.stderr, "etcdpvc: recovering from %s (source revision %d) into %s\n", from, plan.SourceRevision, dst.Target(""))
	printSetPlan(e, plan)
	totals := plan.Totals()
	writes, unread := totals.Writes(), totals.Unreadable
	incomplete := func() error {
		if unread == 0 {
			return nil
		}
		return &incompleteError{msg: fmt.Sprintf("%d objects of the source could not be read and were not recovered (listed as unreadable)", unread)}
	}
	if writes == 0 {
		fmt.Fprintln(e.stdout, "nothing to write: every object is skipped or exists")
		return incomplete()
	}
	if o.Write.DryRun {
		fmt.Fprintln(e.stdout, "dry run: nothing written")
		return incomplete()
	}
	w, err := store.AsWriter(dst.Reader)
	if err != nil {
		return withHint(fmt.Errorf("%s: %w", dst.Description, err), "a db file is read-only: write through --endpoints, or into a copy with --db IN --out OUT")
	}
	if err := confirmCount(e, dst, o.Write, writes); err != nil {
		return err
	}
	ao := applyOptions(e, dst, o.Write)
	res, werr := surgery.WriteRecoverSet(e.ctx, w, plan, surgery.RecoverSetWriteOptions{ApplyOptions: ao, MaxTxnOps: o.MaxTxnOps,
		OnWritten: func(it *surgery.SetItem) {
			fmt.Fprintf(e.stdout, "written: %s (%s)\n", it.Key, string(it.Action))
		}})
	if res != nil {
		for _, w := range res.Warnings {
			e.warn(w)
		}
	}
	out := plan.Outcome(res, werr)
	fmt.Fprintf(e.stdout, "summary: %d written, %s, %d not written, %d unreadable; backups and audit.log in %s\n",
		out.Written, out.SkipReasons, out.NotWritten, out.Unreadable, ao.BackupDir)
	if out.Written > 0 {
		fmt.Fprintf(e.stdout, "undo: `etcdpvc restore BACKUP` deletes what a create wrote (each backup is listed in %s/audit.log)\n", ao.BackupDir)
	}
	if werr != nil {
		return werr
	}
	if done, err := finishSnapshotWrite(e, dst); done && err != nil {
		return err
	}
	return incomplete()
}

// printSetPlan prints one line per object, then the totals.
func printSetPlan(e *env, plan *surgery.SetPlan) {
	t := newTable(e.stdout, "ACTION", "RESOURCE", "NAMESPACE", "NAME", "DETAIL")
	for _, it := range plan.Items {
		ns := it.Namespace
		if ns == "" {
			ns = "-"
		}
		_ = t.Row(string(it.Action), it.Resource.String(), ns, it.Name, it.Reason)
		for _, w := range it.Warnings {
			e.warn(w)
		}
	}
	_ = t.Flush()
	t2 := plan.Totals()
	fmt.Fprintf(e.stdout, "plan: %d to create, %d to replace, %s, %d unreadable\n", t2.Create, t2.Replace, t2.SkipReasons, t2.Unreadable)
}

// confirmCount asks, on a terminal, before writing n objects; off a
// terminal it needs --yes.
func confirmCount(e *env, s *session, o writeOptions, n int) error {
	if o.Yes {
		return nil
	}
	if !isTerminal(e.stdin) {
		return &refusedError{msg: "not confirmed: stdin is not a terminal and --yes was not given; nothing written",
			hint: "re-run with --yes to write the plan above, or --dry-run to only see it"}
	}
	return ask(e, fmt.Sprintf("Write the %d objects planned above to %s?", n, s.Target("")))
}
