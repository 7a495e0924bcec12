package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/internal/regular"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// withWrite returns flags followed by the write flags.
func withWrite(flags ...cli.Flag) []cli.Flag {
	return append(flags, writeFlags()...)
}

func undeleteCommand() command {
	return command{
		name:  "undelete",
		usage: "take an object out of Terminating",
		args:  cliargs.Args{Kind: cliargs.ArgsObject},
		desc: "undelete removes deletionTimestamp and deletionGracePeriodSeconds, and the finalizers the\n" +
			"deletion itself added (foregroundDeletion, orphan; --keep-gc-finalizers keeps them). Every\n" +
			"other finalizer, such as kubernetes.io/pvc-protection, stays. It edits metadata at the wire\n" +
			"level, so it works on every kind, even one this build does not know, and keeps every other\n" +
			"byte. On a Namespace it also sets status.phase back to Active (the apiserver refuses new\n" +
			"content in a Terminating namespace) and drops the namespace controller's deletion conditions.\n" +
			"It warns when the object is likely to be deleted again (its owner is gone, its namespace\n" +
			"is Terminating, its StatefulSet's retention policy says Delete). An object that is not\n" +
			"Terminating is left as it is: \"nothing to do: … is not Terminating\", exit status 0, as\n" +
			"every edit that changes nothing (check the name: `ls -A --terminating` lists those being\n" +
			"deleted).\n\n" + writeHelp,
		examples: `etcdpvc undelete pvc www-web-0 -n demo --dry-run
etcdpvc undelete pvc www-web-0 -n demo --yes
etcdpvc --kubeadm undelete pv pv-www-web-0`,
		flags: withWrite(&cli.BoolFlag{Name: "keep-gc-finalizers", Usage: "keep foregroundDeletion and orphan"},
			&cli.BoolFlag{Name: "force", Usage: "undelete even when the stored value is another object than its key names"}),
		action: func(c *cli.Context, e *env, in *input) error {
			ed := surgery.Undelete{KeepGCFinalizers: c.Bool("keep-gc-finalizers"), SayNotTerminating: true}
			return planAndApply(e, in.g, in.obj, in.namespace, in.key, readWriteOptions(c, e),
				func(s *cliSession, _ string) (surgery.Edit, error) {
					s.Planner.AllowKeyMismatch = c.Bool("force")
					return ed, nil
				})
		},
	}
}

func finalizersCommand() command {
	return command{
		name:  "finalizers",
		usage: "remove (or add) finalizers",
		args:  cliargs.Args{Kind: cliargs.ArgsObject},
		desc: "finalizers removes the named finalizers (--remove, repeatable) or all of them (--remove-all),\n" +
			"or adds some (--add), at the wire level. On a Namespace, removing also applies to\n" +
			"spec.finalizers (\"kubernetes\"), which is what keeps a Terminating namespace. Removing a\n" +
			"finalizer the object does not have is refused (exit status 5), listing those it has; an added\n" +
			"finalizer must be valid as the apiserver validates it.\n\n" + writeHelp,
		examples: `etcdpvc finalizers pvc www-web-0 -n demo --remove kubernetes.io/pvc-protection --yes
etcdpvc finalizers ns stuck --remove-all --dry-run`,
		flags: withWrite(
			&cli.StringSliceFlag{Name: "remove", Usage: "a finalizer to remove (repeatable)"},
			&cli.BoolFlag{Name: "remove-all", Usage: "remove every finalizer"},
			&cli.StringSliceFlag{Name: "add", Usage: "a finalizer to add (repeatable)"},
		),
		action: func(c *cli.Context, e *env, in *input) error {
			me := codec.MetaEdit{RemoveFinalizers: c.StringSlice("remove"), RemoveAllFinalizers: c.Bool("remove-all"), AddFinalizers: c.StringSlice("add")}
			if len(me.RemoveFinalizers) == 0 && !me.RemoveAllFinalizers && len(me.AddFinalizers) == 0 {
				return usagef("finalizers needs --remove F, --remove-all or --add F")
			}
			return planAndApply(e, in.g, in.obj, in.namespace, in.key, readWriteOptions(c, e),
				func(*cliSession, string) (surgery.Edit, error) { return surgery.Meta{MetaEdit: me}, nil })
		},
	}
}

func labelCommand(annotate bool) command {
	name, what, parse := "label", "labels", surgery.ParseLabelArgs
	if annotate {
		name, what, parse = "annotate", "annotations", surgery.ParseAnnotationArgs
	}
	return command{
		name:      name,
		usage:     "set or remove " + what + " (kubectl syntax: k=v, k-)",
		argsUsage: "RESOURCE NAME KEY=VALUE... KEY-...",
		args:      cliargs.Args{Kind: cliargs.ArgsObject, More: name + " needs at least one KEY=VALUE or KEY-"},
		desc: name + " sets KEY=VALUE and removes KEY- " + what + " at the wire level, with kubectl's syntax,\n" +
			"validation and rules: changing an existing value needs --overwrite (setting the value a key\n" +
			"already has changes nothing), and removing a key the object does not have changes nothing\n" +
			"and says so, as kubectl does (\"label KEY not found\"; nothing to do, exit status 0, when it is all\n" +
			"the command asks).\n\n" + writeHelp,
		examples: fmt.Sprintf(`etcdpvc %[1]s pvc www-web-0 -n demo team=storage old- --yes
etcdpvc %[1]s pvc www-web-0 -n demo team=databases --overwrite --yes
etcdpvc %[1]s pv/pv-www-web-0 note=rebound --dry-run`, name),
		flags: withWrite(&cli.BoolFlag{Name: "overwrite", Usage: "allow changing the value of an existing " + strings.TrimSuffix(what, "s")}),
		action: func(c *cli.Context, e *env, in *input) error {
			set, remove, err := parse(in.rest)
			if err != nil {
				return &usageError{Msg: err.Error()}
			}
			me := codec.MetaEdit{SetLabels: set, RemoveLabels: remove}
			if annotate {
				me = codec.MetaEdit{SetAnnotations: set, RemoveAnnotations: remove}
			}
			err = planAndApply(e, in.g, in.obj, in.namespace, in.key, readWriteOptions(c, e),
				func(*cliSession, string) (surgery.Edit, error) {
					return surgery.Meta{MetaEdit: me, Overwrite: c.Bool("overwrite")}, nil
				})
			if errors.Is(err, surgery.ErrNotApplicable) {
				return flows.WithHint(err, "etcdpvc get shows the object's current "+what+"; --overwrite changes an existing value")
			}
			return err
		},
	}
}

func patchCommand() command {
	return command{
		name:  "patch",
		usage: "change any field, immutable ones included",
		args:  cliargs.Args{Kind: cliargs.ArgsObject},
		desc: "patch applies a JSON merge patch (--type merge, the default) or a JSON patch (--type json)\n" +
			"to the stored object, fields the API forbids changing included (a PVC's storageClassName or\n" +
			"volumeName, a StatefulSet's volumeClaimTemplates, a PV's claimRef). Metadata-only patches are\n" +
			"made at the wire level; others re-encode the object and are refused when this build does not\n" +
			"know every stored field (nothing is ever dropped). apiVersion, kind, name, namespace and uid\n" +
			"cannot change. A patch that is not valid JSON, or not of its type (a merge patch is an\n" +
			"object, a JSON patch an array of operations), is a usage error (exit status 2) that says\n" +
			"where, before anything is read.\n\n" + writeHelp,
		examples: `etcdpvc patch pvc www-web-0 -n demo -p '{"spec":{"storageClassName":"fast"}}' --yes
etcdpvc patch sts web -n demo --type json -p '[{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/storageClassName","value":"fast"}]'
etcdpvc patch pv pv-www-web-0 --patch-file claimref.json --dry-run`,
		flags: withWrite(
			&cli.StringFlag{Name: "type", Value: "merge", Usage: "merge or json"},
			&cli.StringFlag{Name: "patch", Aliases: []string{"p"}, Usage: "the patch"},
			&cli.StringFlag{Name: "patch-file", Usage: "read the patch from a file (- for stdin)"},
		),
		action: func(c *cli.Context, e *env, in *input) error {
			var file func() (io.ReadCloser, error)
			if f := c.String("patch-file"); f != "" {
				file = func() (io.ReadCloser, error) { return openInput(e, f) }
			}
			patch, err := flows.PatchEdit(c.String("type"), c.String("patch"), file)
			if err != nil {
				return err
			}
			return planAndApply(e, in.g, in.obj, in.namespace, in.key, readWriteOptions(c, e),
				func(*cliSession, string) (surgery.Edit, error) { return patch, nil })
		},
	}
}

func editCommand() command {
	return command{
		name:  "edit",
		usage: "edit the stored object in $EDITOR",
		args:  cliargs.Args{Kind: cliargs.ArgsObject},
		desc: "edit opens the stored object's YAML in $KUBE_EDITOR, $EDITOR or vi, the way kubectl edit\n" +
			"does, and applies what was changed with the same rules as patch. Saving the file unchanged\n" +
			"or empty writes nothing.\n\n" + writeHelp,
		examples: `EDITOR=nano etcdpvc edit pvc www-web-0 -n demo`,
		flags:    withWrite(),
		action: func(c *cli.Context, e *env, in *input) error {
			return planAndApply(e, in.g, in.obj, in.namespace, in.key, readWriteOptions(c, e), func(s *cliSession, key string) (surgery.Edit, error) {
				return s.Edited(e.ctx, key, func(doc []byte) ([]byte, error) { return runEditor(e, doc) })
			})
		},
	}
}

// runEditor lets the user edit doc in their editor. While the editor runs,
// SIGINT is the editor's, as with kubectl edit (see holdInterrupts).
func runEditor(e *env, doc []byte) ([]byte, error) {
	editor := e.getenv("KUBE_EDITOR")
	if editor == "" {
		editor = e.getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	dir, err := os.MkdirTemp("", "etcdpvc-edit-")
	if err != nil {
		return nil, fmt.Errorf("edit: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "object.yaml")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		return nil, fmt.Errorf("edit: %w", err)
	}
	cmd := exec.CommandContext(e.ctx, "sh", "-c", editor+` "$1"`, "sh", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stderr, os.Stderr
	if f, ok := e.stdin.(*os.File); ok {
		cmd.Stdin = f
	}
	// Ctrl-C in the editor reaches the whole foreground process group:
	// it is the editor's to handle (vi's own use of it included), so it
	// must not cancel etcdpvc's context, which would kill the editor and
	// lose the edit. SIGINT stays caught, not ignored, so the editor starts
	// with its default handling; SIGTERM still stops both.
	release := holdInterrupts(e.ctx)
	err = cmd.Run()
	release()
	if err != nil {
		return nil, fmt.Errorf("edit: editor %q: %w", editor, err)
	}
	return regular.ReadFile(path)
}

func restoreCommand() command {
	return command{
		name:      "restore",
		usage:     "undo a write from its backup, or every write of an operation",
		argsUsage: "BACKUP_FILE... | --operation ID --backup-dir DIR",
		args:      cliargs.Args{Kind: cliargs.ArgsFree, What: "BACKUP_FILE", First: cliargs.OfferBackups},
		desc: "restore undoes the write a backup was taken for. For an edit it writes the backup's original\n" +
			"stored bytes back, byte for byte (ciphertext included), only while the key still holds what\n" +
			"etcdpvc's write produced, or when the key was deleted since (then it is created). For a create\n" +
			"(recover) it deletes the key with a compare-and-delete, only while the key still holds exactly\n" +
			"what etcdpvc created. If someone changed the object after that write, restore refuses and shows\n" +
			"the diff (raw bytes when the current value cannot be decoded); --force restores anyway.\n\n" +
			"Without connection flags (--endpoints, --cacert, --cert, --key, --kubeadm, --db, or their\n" +
			"ETCDCTL_* variables), restore connects to the etcd the backup records, with the --prefix and\n" +
			"--encryption-config it records; flags win, and stderr says which etcd is used. A backup taken\n" +
			"from another cluster (another etcd cluster ID) is refused unless --force. A backup value stored\n" +
			"otherwise than the encryption config's first provider stores it is sealed with that provider;\n" +
			"without a config, a plaintext value is refused where the key holds an encrypted one.\n" +
			"Restore makes a backup of its own first.\n\n" +
			"A write whose outcome is unknown (audit.log records its intent or an uncertain outcome) may\n" +
			"still apply while its key holds the backup's value: restore then fences it (rewrites the key\n" +
			"with its own bytes, so that the lost transaction can never apply) instead of finding nothing to\n" +
			"do. A create cannot be fenced: its undo exits with status 8, nothing written, while a member\n" +
			"that may hold it does not answer; run it again once that member has restarted or answers.\n\n" +
			"Several backups, or --operation ID --backup-dir DIR (every write of one command run: the\n" +
			"backups in DIR that record it, cross-checked with audit.log, where a write whose backup is\n" +
			"missing refuses the whole restore; a write of several keys prints this as its undo line), are\n" +
			"undone as a unit: newest write first, all diffs shown and one confirmation asked; runs of\n" +
			"deletes (of what a recovery created) or creates go in transactions of --max-txn-ops keys, each\n" +
			"all or nothing, every other key with its own compare-and-swap. Every key must still hold what\n" +
			"its write left: one changed since refuses the whole restore (each diff shown) unless --force.\n" +
			"A key restored already is nothing to do, so running the same restore again after one that\n" +
			"stopped part way finishes it. restore's own backups and audit lines go to DIR too.",
		examples: `etcdpvc restore ~/.local/state/etcdpvc/backups/20261130T023000.123456789Z-registry_persistentvolumeclaims_demo_www-web-0-r214.json --yes
etcdpvc restore --endpoints https://10.0.0.12:2379 --cacert ca.crt --cert client.crt --key client.key BACKUP --dry-run
etcdpvc restore --operation 20261203T003510Z-1f2e3d4c --backup-dir /root/.local/state/etcdpvc/backups --dry-run`,
		flags: append(writeFlags(),
			&cli.BoolFlag{Name: "force", Usage: "restore even though the object changed after etcdpvc's write, its value cannot be decoded, or the cluster is another"},
			&cli.StringFlag{Name: "operation", Usage: "restore every write of operation `ID` (as the undo line and etcdpvc backups print it), its backups in --backup-dir, cross-checked with audit.log there"},
			&cli.IntFlag{Name: "max-txn-ops", Value: store.MaxTxnOps, Usage: "with several backups: the most keys deleted or created in one transaction (at most etcd's --max-txn-ops)"},
		),
		action: func(c *cli.Context, e *env, in *input) error {
			o := readWriteOptions(c, e)
			args := c.Args().Slice()
			op := c.String("operation")
			switch {
			case op != "" && len(args) > 0:
				return usagef("restore takes BACKUP_FILE... or --operation ID, not both")
			case op == "" && len(args) == 0:
				return usagef("restore needs a BACKUP_FILE, several, or --operation ID --backup-dir DIR")
			case c.Int("max-txn-ops") < 1:
				return usagef("--max-txn-ops must be at least 1")
			case op != "" || len(args) > 1:
				return runRestoreAll(e, in, args, op, c.Bool("force"), c.Int("max-txn-ops"), o)
			}
			b, err := surgery.ReadBackup(args[0])
			if err != nil {
				return err
			}
			connectAsRecorded(e, in.g, b)
			s, err := openWriteSession(e, in.g, o)
			if err != nil {
				return err
			}
			defer s.Close()
			return s.Restore(e.ctx, e, b, c.Bool("force"), o)
		},
	}
}

func deleteCommand() command {
	return command{
		name:  "delete",
		usage: "delete an object the apiserver cannot read, every one (--all-unreadable), or a selection (-l, --older-than)",
		args:  cliargs.Args{Kind: cliargs.ArgsObject, OtherForms: true},
		desc: "delete removes one object's key from etcd: for a value the apiserver cannot read (encrypted\n" +
			"with a key it no longer has, undecodable, of another kind than its key's resource, in the clear\n" +
			"under a config without identity), which breaks every LIST of its resource and which `kubectl\n" +
			"delete` cannot remove; values are judged as the apiserver's own decoding path judges them. The\n" +
			"diff shows what goes:\n" +
			"the value's size, sha256 and why it cannot be read (a Secret's bytes only with --show-secrets).\n" +
			"An object the apiserver can read is refused (exit status 5): delete it with kubectl, which runs\n" +
			"its finalizers and admission; --force deletes it here anyway. A key under a resource's path\n" +
			"that names no single object (--etcd-key /registry/configmaps/NS/, or one with an extra segment)\n" +
			"is deleted whatever it holds: no delete through the API reaches it. Any other key that names no\n" +
			"object (the apiserver's own) is refused. An encrypted value is judged with the apiserver's\n" +
			"EncryptionConfiguration (--encryption-config, or --kubeadm): without one, or when a KMS plugin\n" +
			"does not answer here, whether the apiserver reads it is not known, and delete refuses it\n" +
			"(exit status 10) unless --force. With an apiserver (--verify), the LIST of the resource in the\n" +
			"object's namespace must then succeed.\n\n" +
			"--all-unreadable [RESOURCE] deletes every value the apiserver cannot read, found by one scan of\n" +
			"RESOURCE (every resource without one) in the namespace of -n (default: default, for a\n" +
			"namespaced RESOURCE) or in every namespace with -A; without a RESOURCE, -n or -A must be given.\n" +
			"Readable objects, the apiserver's own keys and values not judged (named, exit status 10) are\n" +
			"left alone; with --verify=always, values not judged here are judged by the apiserver before\n" +
			"the write (any it reads refuses the write). Every diff is shown and one\n" +
			"confirmation asked; then every value is backed up (durably, before its transaction is sent) and\n" +
			"removed by a compare-and-delete on the revision the scan read, --max-txn-ops keys per\n" +
			"transaction, each all or nothing, each key in the audit log; one undo line restores them all. The\n" +
			"LIST of each resource in each namespace touched is checked once its last such value is gone.\n" +
			"Stopped part way (Ctrl-C, a conflict), what was deleted is listed with its backup; run the\n" +
			"same command again to go on: it finds only what is left.\n\n" +
			"RESOURCE -l SELECTOR, --field-selector SELECTOR and --older-than DURATION delete a selection,\n" +
			"readable objects included (a full etcd's Events, say): the objects of RESOURCE in the namespace\n" +
			"of -n (default: default) or every namespace (-A) that match every part given. -l and\n" +
			"--field-selector are kubectl's, with the fields ls takes; --older-than keeps the objects whose\n" +
			"creationTimestamp is older, and for Events their lastTimestamp, else series.lastObservedTime,\n" +
			"else eventTime, when set (an object with no such time is kept). A\n" +
			"RESOURCE without a selection is refused: a whole resource is never the default. One line per\n" +
			"object (not its diff), the count and bytes, one confirmation; --dry-run writes nothing. The\n" +
			"backups go to local disk first, and the write is refused, with nothing sent, when the backup\n" +
			"directory's file system has not room for them (the values base64-encoded, with a margin).\n" +
			"Each key is removed by a compare-and-delete on the revision the scan read, --max-txn-ops keys\n" +
			"per transaction, each all or nothing (a key changed since is a conflict, and its transaction\n" +
			"is refused); one undo line restores them all. Under etcd's NOSPACE alarm etcd takes deletes:\n" +
			"delete, then `etcdpvc space --reclaim` (the undo, a write, waits until the alarm is disarmed).\n" +
			"No finalizer runs and admission is skipped. A value that cannot be read cannot be matched: it\n" +
			"is named and left alone (exit status 10).\n\n" + writeHelp,
		examples: `etcdpvc ls secrets -A            # lists "Encrypted (...): no key" / "Undecodable: ..." values
etcdpvc delete secret broken -n demo --dry-run
etcdpvc delete --etcd-key /registry/secrets/demo/broken --yes
etcdpvc --kubeadm delete --all-unreadable secrets -A --dry-run
etcdpvc --kubeadm delete --all-unreadable -n demo --yes
etcdpvc --kubeadm delete events -A --older-than 2h --dry-run
etcdpvc --kubeadm delete configmaps -n ci -l job=nightly --yes`,
		flags: withWrite(
			&cli.BoolFlag{Name: "force", Usage: "delete even an object the apiserver can read (it then runs no finalizers and no admission)"},
			&cli.BoolFlag{Name: "all-unreadable", Usage: "delete every value the apiserver cannot read, of RESOURCE (or every resource) in the namespace (-n) or every namespace (-A)"},
			&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Usage: "delete the objects of RESOURCE whose labels match (kubectl's syntax)"},
			&cli.StringFlag{Name: "field-selector", Usage: "delete the objects of RESOURCE whose fields match (FIELD=VALUE, ==, !=, comma-separated; the fields ls takes)"},
			&cli.DurationFlag{Name: "older-than", Usage: "delete the objects of RESOURCE older than this (creationTimestamp; an Event's lastTimestamp, else series.lastObservedTime, else eventTime, when set)"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "with --all-unreadable or a selection: every namespace"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "with --all-unreadable or a selection: keys per range request of the scan (live etcd)"},
			&cli.IntFlag{Name: "max-txn-ops", Value: store.MaxTxnOps, Usage: "with --all-unreadable or a selection: the most keys deleted in one transaction (at most etcd's --max-txn-ops; 1: one per key)"},
		),
		action: func(c *cli.Context, e *env, in *input) error {
			o := readWriteOptions(c, e)
			selection := c.IsSet("selector") || c.IsSet("field-selector") || c.IsSet("older-than")
			if c.Bool("all-unreadable") {
				if selection {
					return usagef("-l, --field-selector and --older-than do not go with --all-unreadable, which deletes every value the apiserver cannot read")
				}
				return runDeleteUnreadable(c, e, in, o)
			}
			if selection {
				return runDeleteSelected(c, e, in, o)
			}
			if args := c.Args().Slice(); len(args) == 1 && !strings.Contains(args[0], "/") && !c.IsSet("etcd-key") {
				return usagef("delete %s: no NAME and no selection: name one object (RESOURCE NAME), or select with -l SELECTOR, --field-selector SELECTOR or --older-than DURATION (a whole resource is never deleted by default)", args[0])
			}
			for _, f := range []string{"all-namespaces", "page-size", "max-txn-ops"} {
				if c.IsSet(f) {
					return usagef("--%s goes with --all-unreadable or a selection; delete of one object takes RESOURCE NAME -n NAMESPACE or --etcd-key KEY", f)
				}
			}
			if err := in.object(); err != nil {
				return err
			}
			return writeObject(e, in.g, o, in.obj, in.namespace, in.key, func(s *cliSession, ref resource.Ref) error {
				return s.Delete(e.ctx, e, ref.Key, c.Bool("force"), o)
			})
		},
	}
}

// runDeleteUnreadable is `delete --all-unreadable [RESOURCE]`.
func runDeleteUnreadable(c *cli.Context, e *env, in *input, o flows.WriteOptions) error {
	args := c.Args().Slice()
	switch {
	case len(args) > 1:
		return usagef("delete --all-unreadable takes at most one RESOURCE, not %q: it deletes every value of the resource the apiserver cannot read, never one named object", strings.Join(args, " "))
	case len(args) == 1 && strings.Contains(args[0], "/"):
		return usagef("delete --all-unreadable takes a RESOURCE, not %q: to delete one object, leave out --all-unreadable", args[0])
	case c.IsSet("etcd-key"):
		return usagef("--etcd-key names one object: leave out --all-unreadable to delete it")
	case c.Bool("force"):
		return usagef("--force does not go with --all-unreadable, which deletes only what the apiserver cannot read")
	}
	s, err := openDeleteMany(c, e, in, &o)
	if err != nil {
		return err
	}
	defer s.Close()
	r := flows.UnreadableRequest{Namespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"), PageSize: c.Int64("page-size")}
	if len(args) == 1 {
		r.Resource = args[0]
	}
	return s.DeleteUnreadable(e.ctx, e, r, o)
}

// runDeleteSelected is `delete RESOURCE -l SEL --field-selector SEL
// --older-than DURATION`.
func runDeleteSelected(c *cli.Context, e *env, in *input, o flows.WriteOptions) error {
	args := c.Args().Slice()
	switch {
	case len(args) != 1 || strings.Contains(args[0], "/"):
		return usagef("delete with -l, --field-selector or --older-than takes one RESOURCE, not %q: it deletes the objects of the resource that match", strings.Join(args, " "))
	case c.IsSet("etcd-key"):
		return usagef("--etcd-key names one object: leave out -l, --field-selector and --older-than to delete it")
	case c.Bool("force"):
		return usagef("--force does not go with a selection, which deletes readable objects without it")
	case c.IsSet("older-than") && c.Duration("older-than") <= 0:
		return usagef("--older-than must be positive, not %s", c.Duration("older-than"))
	}
	s, err := openDeleteMany(c, e, in, &o)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.DeleteSelected(e.ctx, e, flows.SelectedRequest{Resource: args[0], Namespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"),
		LabelSelector: c.String("selector"), FieldSelector: c.String("field-selector"), OlderThan: c.Duration("older-than"), Now: e.now(),
		PageSize: c.Int64("page-size")}, o)
}

// openDeleteMany checks the flags every delete of many keys takes (-n or
// -A, --page-size, --max-txn-ops), sets o.MaxTxnOps and opens the write
// session.
func openDeleteMany(c *cli.Context, e *env, in *input, o *flows.WriteOptions) (*cliSession, error) {
	switch {
	case c.String("namespace") != "" && c.Bool("all-namespaces"):
		return nil, usagef("-n and -A exclude each other")
	case c.Int64("page-size") <= 0:
		return nil, usagef("--page-size must be positive")
	case c.Int("max-txn-ops") < 1:
		return nil, usagef("--max-txn-ops must be at least 1")
	}
	o.MaxTxnOps = c.Int("max-txn-ops")
	return openWriteSession(e, in.g, *o)
}

// runRestoreAll is restore of several backups, or of an operation's
// (flows.Session.RestoreAll): it reaches the etcd they record, as restore
// of one does.
func runRestoreAll(e *env, in *input, files []string, op string, force bool, maxTxnOps int, o writeOptions) error {
	var backups []*surgery.Backup
	if op != "" {
		var notes []string
		var err error
		backups, notes, err = surgery.OperationBackups(o.BackupDir, op)
		for _, n := range notes {
			e.warn(n)
		}
		if err != nil {
			return err
		}
	} else {
		for _, f := range files {
			b, err := surgery.ReadBackup(f)
			if err != nil {
				return err
			}
			backups = append(backups, b)
		}
		surgery.SortBackupsWritten(backups)
	}
	connectAsRecorded(e, in.g, backups[0])
	o.MaxTxnOps = maxTxnOps
	s, err := openWriteSession(e, in.g, o)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(e.stderr, "etcdpvc: restore: %d backups, newest write first\n", len(backups))
	return s.RestoreAll(e.ctx, e, backups, force, o)
}

// connectAsRecorded makes a restore without connection flags reach the
// etcd its backup records (session.AsRecorded), and says on stderr which
// etcd it uses.
func connectAsRecorded(e *env, g *globalOptions, b *surgery.Backup) {
	if msg := session.AsRecorded(&g.Options, b.Source); msg != "" {
		fmt.Fprintf(e.stderr, "etcdpvc: restore: %s\n", msg)
	}
}
