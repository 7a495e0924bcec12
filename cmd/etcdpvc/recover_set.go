package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/etcdpvc/etcdpvc/connect"
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
	connect.RecoverSet
	LiveTarget bool
}

// recoverSetMode tells whether recover's arguments ask for a namespace or
// a selection, and reads its options.
func recoverSetMode(c *cli.Context) (o recoverSetOptions, ok bool, err error) {
	args := c.Args().Slice()
	all, sel := c.Bool("all"), c.String("selector")
	o = recoverSetOptions{RecoverSet: connect.RecoverSet{RecoverSetRequest: surgery.RecoverSetRequest{InNamespace: c.String("namespace"),
		AllNamespaces: c.Bool("all-namespaces"), Selector: sel, Include: c.StringSlice("include"), Exclude: c.StringSlice("exclude"),
		ReplaceDifferent: c.Bool("replace-different"), Rev: c.Int64("rev")}, MaxTxnOps: c.Int("max-txn-ops"), Write: readWriteOptions(c)},
		LiveTarget: flagOnCommandLine(c, "endpoints") || flagOnCommandLine(c, "kubeadm")}
	setOnly := o.AllNamespaces || len(o.Include) > 0 || len(o.Exclude) > 0 || o.ReplaceDifferent || c.IsSet("max-txn-ops")
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
	if err := o.CheckSource(g.Options); err != nil {
		return err
	}
	src, err := openWriteSession(e, g, o.Write)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, closeDst, err := recoverTarget(e, g, src, o.LiveTarget, "")
	if err != nil {
		return err
	}
	defer closeDst()
	plan, err := connect.PlanRecoverSet(e.ctx, e, src.Session, dst.Session, o.RecoverSet)
	if err != nil {
		return err
	}
	printSetPlan(e, plan)
	return dst.WriteRecoverSet(e.ctx, e, plan, o.RecoverSet)
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
