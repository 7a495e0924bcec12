package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/connect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/store"
)

// recoverOptions are the flags of `etcdpvc recover`.
type recoverOptions struct {
	Args      []string
	Namespace string
	Key       string
	Rev       int64
	Output    string
	Write     writeOptions
	// LiveTarget: --endpoints or --kubeadm was given on the command line,
	// so with --db the object is read from the file and written live.
	LiveTarget bool
	// Index recovers the object as of a raft index of --wal.
	Index uint64
}

func recoverCommand() command {
	return command{
		name:      "recover",
		usage:     "recreate a deleted object from an older revision",
		argsUsage: "RESOURCE NAME | RESOURCE/NAME | --etcd-key KEY | namespace NAME | RESOURCE --all|-l SELECTOR",
		args:      cliargs.Args{Kind: cliargs.ArgsObject, OtherForms: true},
		desc: "recover recreates a deleted object from the last revision before its deletion that etcd (or\n" +
			"--db) still holds, or from --rev N. deletionTimestamp and deletionGracePeriodSeconds are cleared\n" +
			"(as undelete does), the uid is kept, and the value is encrypted with --encryption-config as the\n" +
			"apiserver would. The write is a create: it fails if the key exists, and never replaces an object.\n\n" +
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
			"(exit status 9) the same command resumes: what was created is reported exists-identical.\n\n" +
			writeHelp,
		examples: `etcdpvc recover pvc www-web-0 -n demo --dry-run
etcdpvc --db /backup/etcd-snapshot.db recover pvc www-web-0 -n demo -o yaml
etcdpvc --db /backup/etcd-snapshot.db --endpoints https://10.0.0.1:2379 --cacert ca.crt --cert c.crt --key c.key recover pvc www-web-0 -n demo --yes
etcdpvc --kubeadm --db /backup/etcd-snapshot.db recover cm web-config -n demo --rev 1200 --yes
etcdpvc --db snapshot.db --out recovered.db recover pvc www-web-0 -n demo --yes
etcdpvc --kubeadm --db /backup/etcd-snapshot.db recover namespace demo --dry-run
etcdpvc --kubeadm recover namespace demo --rev 48210 --yes
etcdpvc --kubeadm --db /backup/etcd-snapshot.db recover cm -l app=web -n demo --yes`,
		flags: append(withWrite(
			&cli.Int64Flag{Name: "rev", Usage: "recover from this revision (default: the last one before the deletion)"},
			indexFlag(),
		), append([]cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "yaml, json or raw: print the recovered object (raw: the bytes that would be stored) and write nothing"}}, recoverSetFlags()...)...),
		action: func(c *cli.Context, e *env, in *input) error {
			if so, ok, err := recoverSetMode(c); err != nil {
				return err
			} else if ok {
				if so.Rev < 0 {
					return usagef("--rev must not be negative")
				}
				if so.Write.Out != "" && so.LiveTarget {
					return usagef("give --out OUT (write into a copy of --db) or --endpoints/--kubeadm (write live), not both")
				}
				return runRecoverSet(e, in.g, so)
			}
			if err := in.object(); err != nil {
				return err
			}
			o := recoverOptions{Args: in.obj, Namespace: in.namespace, Key: in.key, Rev: c.Int64("rev"),
				Output: c.String("output"), Write: readWriteOptions(c), LiveTarget: flagOnCommandLine(c, "endpoints") || flagOnCommandLine(c, "kubeadm"),
				Index: c.Uint64("index")}
			if o.Index != 0 && o.Rev != 0 {
				return usagef("give --rev or --index, not both")
			}
			if o.Output != "" {
				if err := checkOutput(o.Output, "yaml", "json", "raw"); err != nil {
					return err
				}
				if o.Write.Out != "" || o.Write.Yes || o.Write.DryRun {
					return usagef("-o prints the recovered object and writes nothing: leave out --out, --yes and --dry-run")
				}
			}
			if o.Rev < 0 {
				return usagef("--rev must not be negative")
			}
			if o.Write.Out != "" && o.LiveTarget {
				return usagef("give --out OUT (write into a copy of --db) or --endpoints/--kubeadm (write live), not both")
			}
			if o.Index != 0 && in.g.WAL == "" {
				return usagef("--index N reads raft index N of a write-ahead log: give --wal")
			}
			if in.g.WAL != "" && o.Write.Out != "" {
				return usagef("--out writes into a copy of --db, which does not hold the log's writes: with --wal, write live with --endpoints/--kubeadm, or print with -o yaml")
			}
			return runRecover(e, in.g, o)
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

func runRecover(e *env, g *globalOptions, o recoverOptions) error {
	// The source: where the history is read.
	src, err := openWriteSession(e, g, o.Write)
	if err != nil {
		return err
	}
	defer src.Close()
	src.Planner.ShowSecrets = o.Write.ShowSecrets
	ref, err := src.ref(o.Args, o.Namespace, o.Key)
	if err != nil {
		return err
	}
	var kv *store.KeyValue
	if o.Index != 0 {
		kv, err = getAtIndex(e, src, ref.Key, o.Index)
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
// itself, or the live etcd when src is read-only (connect.Session.ReadOnly)
// and --endpoints or --kubeadm was given; key names the object recovered
// ("": a namespace or a selection). close closes it, src aside.
func recoverTarget(e *env, g *globalOptions, src *session, liveGiven bool, key string) (dst *session, close func(), err error) {
	if !src.ReadOnly() {
		return src, func() {}, nil
	}
	if !liveGiven {
		return nil, nil, src.NoTarget(key)
	}
	live := *g
	live.DB, live.WAL = "", ""
	if dst, err = openSession(e, &live); err != nil {
		return nil, nil, err
	}
	dst.Planner.ShowSecrets = src.Planner.ShowSecrets
	return dst, dst.Close, nil
}

// recoverSource finds the revision to recover key from
// (connect.Session.RecoverSource), saying on stderr which one when the key
// was deleted.
func recoverSource(e *env, s *session, key string, rev int64) (*store.KeyValue, error) {
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
		fmt.Fprintf(e.stderr, "etcdpvc: %s was deleted at revision %d; recovering revision %d%s\n", key, from.DeletedAt, from.KV.ModRevision, version)
	}
	return &from.KV, nil
}

// printRecovered prints what recover would create (connect.Session.Recovered):
// the object as get prints it (Secret values redacted unless
// --show-secrets, managedFields hidden), or -o raw the bytes it would store
// (sealed with --encryption-config).
func printRecovered(e *env, s *session, kv store.KeyValue, o recoverOptions) error {
	if o.Output == "raw" && isTerminal(e.stdout) {
		if _, err := s.Planner.Recovered(e.ctx, kv); err != nil {
			return err
		}
		return &connect.RefusedError{Msg: "-o raw writes binary bytes, which would garble this terminal; nothing printed", Hint: "redirect the output (-o raw > value.bin, or -o raw | xxd | less)"}
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
