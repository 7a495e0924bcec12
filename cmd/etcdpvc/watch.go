package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
)

// watchOptions are the flags of `etcdpvc watch`.
type watchOptions struct {
	Args          []string
	Namespace     string
	AllNamespaces bool
	Key           string
	Rev, Until    int64
	Output        string
	Selector      string
	NoHeaders     bool
	ShowSecrets   bool
}

func watchCommand() command {
	return command{
		name:      "watch",
		usage:     "follow the changes etcd makes to objects, decoded, with the manager that made each",
		argsUsage: "[RESOURCE [NAME] | RESOURCE/NAME]",
		desc: "watch follows etcd's watch (a live etcd only) and prints each change as it comes: TIME, REVISION,\n" +
			"TYPE (ADDED, MODIFIED, DELETED), the object, its MANAGER and what changed, decoded as history\n" +
			"decodes a revision (etcd hands the value before each change with it). MANAGER is the field\n" +
			"manager whose metadata.managedFields entry the change added or dated anew (kubectl, a controller,\n" +
			"kubelet (status)); \"-\" where managedFields do not tell: a deletion, a write straight to etcd, a\n" +
			"removal of fields, a manager's second change within one second (the entries' times are to the\n" +
			"second).\n" +
			"TIME is, for a change replayed from the past (--rev), when it happened: an interval the times\n" +
			"the cluster writes into its objects bound, among the revisions etcd holds (Lease renewals,\n" +
			"managedFields; \"10:41:58 ±2s\", \"-\" unknown; -o json: time, both bounds); for a change made\n" +
			"while watching, when etcdpvc received it.\n" +
			"RESOURCE, -n and -A scope it as ls does (without RESOURCE: every resource; a namespaced\n" +
			"RESOURCE without -n watches the namespace \"default\"); NAME (or --etcd-key) watches one key.\n" +
			"-l SELECTOR keeps the objects whose labels match before or after the change (the change that\n" +
			"takes the label away is shown too), and every value whose labels cannot be read.\n" +
			"--rev N starts at revision N, replaying what etcd still holds from it; a revision compacted\n" +
			"away is refused, naming the oldest revision held. --until M stops after revision M. A watch\n" +
			"etcd cuts (a leader change, a member restarting) resumes after the last change printed and\n" +
			"says so on stderr; a compaction that removes revisions before the watch has read them stops\n" +
			"it with status 10, naming the revisions lost: a change is never skipped silently. -o json\n" +
			"prints one JSON object a line. A Secret's changed values are reported by size unless\n" +
			"--show-secrets. Ctrl-C ends the watch (status 0).",
		examples: `etcdpvc watch pvc -n demo
etcdpvc watch cm web-config -n demo --rev 4120
etcdpvc watch -A --rev 4100 --until 4200 -o json | jq -c 'select(.type=="DELETED")'`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "watch this namespace only"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "watch every namespace"},
			&cli.StringFlag{Name: "etcd-key", Usage: "watch this one etcd key"},
			&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Usage: "only objects whose labels match, before or after the change (kubectl's label selector syntax)"},
			&cli.Int64Flag{Name: "rev", Usage: "start at this revision, replaying what etcd holds from it (0: changes from now on)"},
			&cli.Int64Flag{Name: "until", Usage: "stop after this revision (0: follow until Ctrl-C)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table, or json (one object a line)"},
			&cli.BoolFlag{Name: "no-headers", Usage: "leave out the table's header line"},
			&cli.BoolFlag{Name: "show-secrets", Usage: "show the values of a Secret that changed instead of their sizes"},
		},
		args: cliargs.Args{Kind: cliargs.ArgsCount, Max: 2, First: cliargs.OfferResources,
			Usage: "watch takes at most RESOURCE and NAME (or RESOURCE/NAME)"},
		values: map[string]cliargs.Offer{"namespace": cliargs.OfferNamespaces},
		action: func(c *cli.Context, e *env, in *input) error {
			o := watchOptions{Args: c.Args().Slice(), Namespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"),
				Key: c.String("etcd-key"), Rev: c.Int64("rev"), Until: c.Int64("until"), Output: c.String("output"), Selector: c.String("selector"),
				NoHeaders: c.Bool("no-headers"), ShowSecrets: c.Bool("show-secrets")}
			if err := cliargs.CheckOutput(o.Output, "table", "json"); err != nil {
				return err
			}
			switch {
			case o.Rev < 0 || o.Until < 0:
				return usagef("--rev and --until must not be negative")
			case o.Until > 0 && o.Rev > o.Until:
				return usagef("--rev %d is after --until %d: nothing to watch", o.Rev, o.Until)
			case o.Key != "" && len(o.Args) > 0:
				return usagef("--etcd-key names the key: no RESOURCE or NAME with it")
			case o.AllNamespaces && o.Namespace != "":
				return usagef("-n and -A exclude each other")
			}
			return runWatch(e, in.g, o)
		},
	}
}

func runWatch(e *env, g *globalOptions, o watchOptions) error {
	s, err := openSession(e, g)
	if err != nil {
		return err
	}
	defer s.Close()
	r := flows.WatchRequest{Namespace: o.Namespace, AllNamespaces: o.AllNamespaces, From: o.Rev, Until: o.Until,
		Output: o.Output, Selector: o.Selector, NoHeaders: o.NoHeaders, ShowSecrets: o.ShowSecrets, Now: e.now}
	named := len(o.Args) == 2 || (len(o.Args) == 1 && strings.Contains(o.Args[0], "/"))
	switch {
	case o.Key != "":
		r.Key = o.Key
	case named:
		if o.AllNamespaces {
			return usagef("a resource cannot be watched by name across all namespaces: give -n NAMESPACE")
		}
		ref, err := s.ref(o.Args, o.Namespace, "")
		if err != nil {
			return err
		}
		r.Key, r.Resource = ref.Key, ref.Resource.String()
	case len(o.Args) == 1:
		r.Resource = o.Args[0]
	}
	return s.Watch(e.ctx, e, e.stdout, r)
}
