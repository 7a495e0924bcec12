package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

func recoverCommand() command {
	return command{
		name:      "recover",
		usage:     "recreate a deleted object from an older revision",
		argsUsage: "RESOURCE NAME | RESOURCE/NAME | --etcd-key KEY | namespace NAME | RESOURCE --all|-l SELECTOR",
		args:      cliargs.Args{Kind: cliargs.ArgsObject, OtherForms: true},
		desc: "recover recreates a deleted object from the last revision before its deletion that etcd (or\n" +
			"--db) still holds, or from --rev N. deletionTimestamp and deletionGracePeriodSeconds are cleared\n" +
			"(as undelete does), the uid is kept, and the value is encrypted with --encryption-config as the\n" +
			"apiserver would. The write is a create: it fails if the key exists, and never replaces an object.\n" +
			"A name taken again after the deletion (another object, another uid) is refused with status 5,\n" +
			"naming that object, whatever the source: --rev N or --index N names the deleted one. With --wal,\n" +
			"--before-time TIME recovers the object as the last entry certainly before TIME left it, by the\n" +
			"times the cluster writes into its objects (Lease renewals, managedFields); it says which entry.\n\n" +
			"Where it reads and writes:\n" +
			"  live etcd                   reads the key's history live (until it is compacted), writes live\n" +
			"  --db FILE -o yaml|raw        prints the recovered object (or the bytes it would store); no write\n" +
			"  --db FILE --endpoints E      reads the file (an older snapshot), writes into the live cluster\n" +
			"  --db IN --out OUT            reads IN, writes into a copy OUT to restore with etcdutl\n\n" +
			"recover namespace NAME (with --db SNAPSHOT, or --rev N: the live state at revision N) recreates\n" +
			"the namespace and every namespaced object it held, custom resources included (and their\n" +
			"CustomResourceDefinitions when they are gone too); recover RESOURCE --all|-l SELECTOR [-n NS|-A]\n" +
			"does the same for a selection. It prints a plan, one line per object: create, exists-identical,\n" +
			"exists-different (never overwritten unless --replace-different) or skipped with the reason.\n" +
			"Skipped unless --include: events, endpoints, endpointslices, leases, pods and replicasets whose\n" +
			"owner is recovered (their controllers recreate them) and pods bound to a node. uids and\n" +
			"finalizers are kept, deletions cleared, a namespace made Active. Creates are written in\n" +
			"transactions of --max-txn-ops keys, each all or nothing, their backups first; after a failure\n" +
			"(exit status 9, or killed) the same command resumes: what was created is reported exists-identical,\n" +
			"and the run goes on with the operation that created it, so that its one undo line undoes both.\n" +
			"Each object is checked with the apiserver as a single write is (--verify), then a summary. A\n" +
			"write into a namespace still Terminating in the live cluster is refused (its namespace\n" +
			"controller would delete it again): undelete the namespace first. --dry-run with only --db\n" +
			"prints the plan as it would be made where every key is absent.\n\n" +
			"The plan is of one state of the source: the latest state of a live etcd that a compaction\n" +
			"passes while it is read is read again whole (three times at most); with --rev N a compaction\n" +
			"past N refuses the plan with status 10, nothing written. Which keys exist in the live cluster\n" +
			"may be read across a compaction: each create is checked again by its transaction.\n\n" +
			writeHelp,
		examples: `etcdpvc recover pvc www-web-0 -n demo --dry-run
etcdpvc --db /backup/etcd-snapshot.db recover pvc www-web-0 -n demo -o yaml
etcdpvc --db /backup/etcd-snapshot.db --endpoints https://10.0.0.1:2379 --cacert ca.crt --cert c.crt --key c.key recover pvc www-web-0 -n demo --yes
etcdpvc --kubeadm --db /backup/etcd-snapshot.db recover cm web-config -n demo --rev 1200 --yes
etcdpvc --db snapshot.db --out recovered.db recover pvc www-web-0 -n demo --yes
etcdpvc --kubeadm --db /backup/etcd-snapshot.db recover namespace demo --dry-run
etcdpvc --kubeadm recover namespace demo --rev 48210 --yes
etcdpvc --kubeadm --db /backup/etcd-snapshot.db recover cm -l app=web -n demo --yes`,
		flags: append(append([]cli.Flag{
			&cli.Int64Flag{Name: "rev", Usage: "recover from this revision (default: the last one before the deletion)"},
			indexFlag(),
			&cli.StringFlag{Name: "before-time", Usage: "with --wal: recover the object as the last entry certainly before this time left it (RFC 3339, or HH:MM[:SS] today in the local zone)"},
		}, append(writeFlagsWithout(), resultFlag(false))...), append([]cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "yaml, json or raw: print the recovered object (raw: the bytes that would be stored) and write nothing; --result json|yaml prints what the write did instead"}}, recoverSetFlags()...)...),
		action: func(c *cli.Context, e *env, in *input) error {
			if c.String("output") != "" && c.String("result") != "" {
				return usagef("-o %s prints the recovered object and writes nothing; --result %s prints what a write did: give one", c.String("output"), c.String("result"))
			}
			before, err := clockTimeFlag("before-time", c.String("before-time"), e.now())
			if err != nil {
				return err
			}
			a := flows.RecoverArgs{BeforeTime: before, Args: c.Args().Slice(), Namespace: c.String("namespace"), Key: c.String("etcd-key"),
				Output: c.String("output"), Rev: c.Int64("rev"), Index: c.Uint64("index"), All: c.Bool("all"), Selector: c.String("selector"),
				AllNamespaces: c.Bool("all-namespaces"), Include: c.StringSlice("include"), Exclude: c.StringSlice("exclude"),
				ReplaceDifferent: c.Bool("replace-different"), MaxTxnOps: c.Int("max-txn-ops"), MaxTxnOpsGiven: c.IsSet("max-txn-ops"),
				Write: readWriteOptions(c, e), LiveTarget: flagOnCommandLine(c, "endpoints") || flagOnCommandLine(c, "kubeadm")}
			if set, ok, err := flows.RecoverSetOf(a); err != nil {
				return err
			} else if ok {
				return runRecoverSet(e, in.g, set, a.LiveTarget)
			}
			if err := in.object(); err != nil {
				return err
			}
			a.Args, a.Namespace, a.Key = in.obj, in.namespace, in.key
			if err := a.CheckObject(len(in.g.WAL) > 0); err != nil {
				return err
			}
			return runRecover(e, in.g, a)
		},
	}
}

// flagOnCommandLine reports whether a flag was given on the command line
// (before or after the command name), not from the environment.
func flagOnCommandLine(c *cli.Context, name string) bool {
	for _, cc := range c.Lineage() {
		for _, n := range cc.LocalFlagNames() {
			if n == name {
				return true
			}
		}
	}
	return false
}

func runRecover(e *env, g *globalOptions, o flows.RecoverArgs) error {
	// The source: where the history is read.
	src, err := openWriteSession(e, g, o.Write)
	if err != nil {
		return err
	}
	defer src.Close()
	ref, err := src.ref(o.Args, o.Namespace, o.Key)
	if err != nil {
		return err
	}
	var kv *store.KeyValue
	if !o.BeforeTime.IsZero() {
		if o.Index, err = src.IndexAtTime(e.ctx, e, ref.Key, o.BeforeTime); err != nil {
			return err
		}
	}
	if o.Index != 0 {
		kv, err = src.GetAtIndex(e.ctx, e, ref.Key, o.Index)
	} else {
		kv, err = recoverSource(e, src, ref.Key, o.Rev)
	}
	if err != nil {
		return err
	}
	if o.Output != "" {
		return printRecovered(e, src, *kv, o)
	}
	if src.ReadOnly() && !o.LiveTarget && o.Write.DryRun {
		return src.PreviewRecover(e.ctx, e, *kv)
	}
	dst, closeDst, err := recoverTarget(e, g, src, o.LiveTarget, ref.Key)
	if err != nil {
		return err
	}
	defer closeDst()
	return dst.Recover(e.ctx, e, src.Session, *kv, o.Write)
}

// recoverTarget opens the session a recover reading src writes into: src
// itself, or the live etcd when src is read-only (flows.Session.ReadOnly)
// and --endpoints or --kubeadm was given; key names the object recovered
// ("": a namespace or a selection). close closes it, src aside.
func recoverTarget(e *env, g *globalOptions, src *cliSession, liveGiven bool, key string) (dst *cliSession, close func(), err error) {
	if !src.ReadOnly() {
		return src, func() {}, nil
	}
	if !liveGiven {
		return nil, nil, src.NoTarget(key)
	}
	live := *g
	live.DB, live.WAL = "", nil
	if dst, err = openSession(e, &live); err != nil {
		return nil, nil, err
	}
	dst.Planner.ShowSecrets, dst.Planner.HideManagedFields = src.Planner.ShowSecrets, src.Planner.HideManagedFields
	return dst, dst.Close, nil
}

// recoverSource finds the revision to recover key from
// (flows.Session.RecoverSource), saying on stderr which one when the key
// was deleted.
func recoverSource(e *env, s *cliSession, key string, rev int64) (*store.KeyValue, error) {
	from, err := s.RecoverSource(e.ctx, key, rev)
	if err != nil {
		return nil, err
	}
	if from.DeletedAt != 0 {
		version := ""
		if from.KV.Version != 0 {
			// 0: written before the log the revision was read from.
			version = fmt.Sprintf(" (version %d)", from.KV.Version)
		}
		at := fmt.Sprintf("revision %d", from.DeletedAt)
		if from.DeletedAt < 0 {
			at = "a revision the log does not establish"
		}
		fmt.Fprintf(e.stderr, "etcdpvc: %s was deleted at %s; recovering %s%s\n", key, at, surgery.SourceRevision(from.KV), version)
	}
	return &from.KV, nil
}

// printRecovered prints what recover would create (flows.Session.Recovered):
// the object as get prints it (Secret values redacted unless
// --show-secrets, managedFields hidden), or -o raw the bytes it would store
// (sealed with --encryption-config).
func printRecovered(e *env, s *cliSession, kv store.KeyValue, o flows.RecoverArgs) error {
	if o.Output == "raw" && isTerminal(e.rawStdout) {
		if _, err := s.Planner.Recovered(e.ctx, kv); err != nil {
			return err
		}
		return flows.RawToTerminal("redirect the output (-o raw > value.bin, or -o raw | xxd | less)")
	}
	rec, err := s.Recovered(e.ctx, kv, o.Output == "raw")
	if err != nil {
		return err
	}
	if rec.Stored != nil {
		_, err = e.stdout.Write(rec.Stored)
		return err
	}
	return printObject(e.stdout, rec.Content, printOptions{Output: o.Output, ShowSecrets: o.Write.ShowSecrets, HideManagedFields: true})
}
