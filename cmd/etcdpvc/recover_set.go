package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/textout"
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

func runRecoverSet(e *env, g *globalOptions, o flows.RecoverSet, liveTarget bool) error {
	if err := o.CheckSource(g.Options); err != nil {
		return err
	}
	src, err := openWriteSession(e, g, o.Write)
	if err != nil {
		return err
	}
	defer src.Close()
	if src.ReadOnly() && !liveTarget && o.Write.DryRun {
		// A dry run needs no write target: the plan as it would be
		// made where every key is absent.
		plan, err := flows.PlanRecoverSet(e.ctx, e, src.Session, nil, o)
		if err != nil {
			return err
		}
		printSetPlan(e, plan)
		return src.WriteRecoverSet(e.ctx, e, plan, o)
	}
	dst, closeDst, err := recoverTarget(e, g, src, liveTarget, "")
	if err != nil {
		return err
	}
	defer closeDst()
	plan, err := flows.PlanRecoverSet(e.ctx, e, src.Session, dst.Session, o)
	if err != nil {
		return err
	}
	printSetPlan(e, plan)
	return dst.WriteRecoverSet(e.ctx, e, plan, o)
}

// printSetPlan prints one line per object, then the totals.
func printSetPlan(e *env, plan *surgery.SetPlan) {
	t := textout.NewTable(e.stdout, "ACTION", "RESOURCE", "NAMESPACE", "NAME", "DETAIL")
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
	for _, w := range plan.Warnings {
		e.warn(w)
	}
	t2 := plan.Totals()
	fmt.Fprintf(e.stdout, "plan: %d to create, %d to replace, %s, %d unreadable\n", t2.Create, t2.Replace, t2.SkipReasons, t2.Unreadable)
}
