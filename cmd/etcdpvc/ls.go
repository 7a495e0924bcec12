package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/store"
)

// lsOptions are the flags of `etcdpvc ls`.
type lsOptions struct {
	Resource      string
	Namespace     string
	AllNamespaces bool
	Terminating   bool
	Deleted       bool
	Output        string
	PageSize      int64
	Rev           int64
}

func lsCommand() command {
	return command{
		name:      "ls",
		usage:     "list stored objects, reading only their metadata",
		argsUsage: "[RESOURCE]",
		desc: "ls lists objects page by page (every page pinned to the first page's revision), decoding\n" +
			"only their metadata. Without RESOURCE it lists every resource. --terminating keeps objects\n" +
			"with a deletionTimestamp; --deleted (with --db) lists objects whose newest revision is a\n" +
			"deletion. STATUS shows \"Terminating 3d\" with the deletionTimestamp's age.",
		examples: `etcdpvc ls -A --terminating
etcdpvc ls pvc -n demo
etcdpvc ls pods -A -o wide
etcdpvc --db snapshot.db ls -A --deleted`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "list this namespace only"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "list every namespace"},
			&cli.BoolFlag{Name: "terminating", Usage: "only objects with a deletionTimestamp"},
			&cli.BoolFlag{Name: "deleted", Usage: "only objects whose newest revision is a deletion (--db)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table, wide, json or yaml"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request"},
			&cli.Int64Flag{Name: "rev", Usage: "list as of this revision (0: the latest)"},
		},
		action: func(c *cli.Context, e *env) error {
			if c.NArg() > 1 {
				return usagef("ls takes at most one RESOURCE")
			}
			o := lsOptions{Resource: c.Args().First(), Namespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"),
				Terminating: c.Bool("terminating"), Deleted: c.Bool("deleted"), Output: c.String("output"),
				PageSize: c.Int64("page-size"), Rev: c.Int64("rev")}
			if err := checkOutput(o.Output, "table", "wide", "json", "yaml"); err != nil {
				return err
			}
			if o.PageSize <= 0 {
				return usagef("--page-size must be positive")
			}
			g, err := resolveGlobals(c, e)
			if err != nil {
				return err
			}
			return runLs(e, g, o)
		},
	}
}

// lsRow is one listed object.
type lsRow struct {
	Namespace      string    `json:"namespace,omitempty"`
	Name           string    `json:"name"`
	Kind           string    `json:"kind"`
	APIVersion     string    `json:"apiVersion"`
	Resource       string    `json:"resource"`
	Key            string    `json:"key"`
	UID            string    `json:"uid,omitempty"`
	Created        time.Time `json:"creationTimestamp"`
	Deleting       time.Time `json:"deletionTimestamp,omitzero"`
	Finalizers     []string  `json:"finalizers,omitempty"`
	Revision       int64     `json:"modRevision"`
	CreateRevision int64     `json:"createRevision"`
	Version        int64     `json:"version"`
	Lease          int64     `json:"lease,omitempty"`
	DeleteRevision int64     `json:"deleteRevision,omitempty"`
	Encrypted      string    `json:"encrypted,omitempty"`
	// Extra are the columns of newLsJoin (recipes.go), in -o wide.
	Extra []string `json:"-"`
}

func runLs(e *env, g *globalOptions, o lsOptions) error {
	s, err := openSession(e, g)
	if err != nil {
		return err
	}
	defer s.Close()
	scope, err := scopeFor(s, o.Resource, o.Namespace, o.AllNamespaces)
	if err != nil {
		return err
	}
	prefix, res := scope.prefix, scope.res
	out := newLsPrinter(e, o)
	join := newLsJoin(e, s, res, o, out)
	var undecodable, encrypted int
	// lsItem is what prepare makes of one key: a row to show or not, and
	// what to count.
	type lsItem struct {
		row                          lsRow
		show, encrypted, undecodable bool
	}
	// prepare reads one key; it keeps nothing of kv and touches nothing
	// shared, so that keys can be prepared on several cores. It also
	// returns the value in clear, valid as long as kv.Value.
	prepare := func(kv *store.KeyValue, deleteRev int64) (lsItem, []byte, error) {
		var it lsItem
		r, ns, name, parsed, ok := scope.match(s.g.Prefix, kv.Key)
		if !parsed || !ok {
			return it, nil, nil // apiserver-internal keys (ranges, leases of masters), or out of scope
		}
		it.row = lsRow{Namespace: ns, Name: name, Resource: r.String(), Key: kv.Key, Revision: kv.ModRevision,
			CreateRevision: kv.CreateRevision, Version: kv.Version, Lease: kv.Lease, DeleteRevision: deleteRev, Kind: r.Kind}
		plain := kv.Value
		if codec.Detect(plain) == codec.FormatEncrypted {
			if s.enc == nil {
				it.encrypted = true
				env, _ := codec.ParseEncryptionEnvelope(plain)
				it.row.Encrypted = env.String()
				it.show = !o.Terminating
				return it, nil, nil
			}
			p, err := s.enc.Decrypt(e.ctx, r.GroupResource(), kv.Key, plain)
			if err != nil {
				return it, nil, fmt.Errorf("ls %s: %w", kv.Key, err)
			}
			plain = p
		}
		sum, err := codec.Summarize(plain)
		if err != nil {
			it.undecodable = true
			return it, nil, nil
		}
		if o.Terminating && !sum.Terminating() {
			return it, nil, nil
		}
		it.row.Kind, it.row.APIVersion, it.row.UID = sum.Kind, sum.APIVersion, sum.UID
		it.row.Created, it.row.Deleting, it.row.Finalizers = sum.CreationTimestamp, sum.DeletionTimestamp, sum.Finalizers
		it.show = true
		return it, plain, nil
	}
	emit := func(it lsItem) error {
		if it.encrypted {
			encrypted++
		}
		if it.undecodable {
			undecodable++
		}
		if !it.show {
			return nil
		}
		return out.row(it.row)
	}
	handle := func(kv *store.KeyValue, deleteRev int64) error {
		it, plain, err := prepare(kv, deleteRev)
		if err != nil {
			return err
		}
		if it.show && plain != nil {
			it.row.Extra = join.cells(kv, plain)
		}
		return emit(it)
	}
	switch {
	case o.Deleted:
		if s.bolt == nil {
			return usagef("--deleted needs --db: live etcd keeps no index of deleted keys (use `etcdpvc history` on one key)")
		}
		err = s.bolt.ScanLatest(e.ctx, prefix, true, func(kv *store.KeyValue, deleted bool, deleteRev int64) error {
			if !deleted {
				return nil
			}
			return handle(kv, deleteRev)
		})
	case s.bolt != nil && join == nil:
		// Values are read in place (not copied), and prepared on every core.
		_, err = store.ListParallel(e.ctx, s.bolt, prefix, store.ListOptions{Revision: o.Rev}, runtime.GOMAXPROCS(0),
			func(kv *store.KeyValue) (lsItem, error) {
				it, _, err := prepare(kv, 0)
				return it, err
			}, emit)
	case s.bolt != nil:
		// handle keeps nothing of kv: no need to copy every value.
		_, err = s.bolt.ListBorrowed(e.ctx, prefix, store.ListOptions{Revision: o.Rev}, func(kv *store.KeyValue) error {
			return handle(kv, 0)
		})
	default:
		_, err = s.reader.List(e.ctx, prefix, store.ListOptions{PageSize: o.PageSize, Revision: o.Rev}, func(kv *store.KeyValue) error {
			return handle(kv, 0)
		})
	}
	if err != nil {
		return err
	}
	if err := out.close(); err != nil {
		return err
	}
	if encrypted > 0 {
		fmt.Fprintf(e.stderr, "etcdpvc: warning: %d values are encrypted at rest and were not read; pass --encryption-config (or --kubeadm)\n", encrypted)
	}
	if undecodable > 0 {
		fmt.Fprintf(e.stderr, "etcdpvc: warning: %d values could not be decoded and were skipped\n", undecodable)
	}
	return nil
}

// lsPrinter streams rows in the chosen format.
type lsPrinter struct {
	e     *env
	o     lsOptions
	t     *tableWriter
	n     int
	now   time.Time
	first bool
}

func newLsPrinter(e *env, o lsOptions) *lsPrinter {
	p := &lsPrinter{e: e, o: o, now: e.now(), first: true}
	switch o.Output {
	case "table":
		p.t = newTable(e.stdout, "NAMESPACE", "NAME", "KIND", "AGE", "STATUS", "FINALIZERS", "REVISION")
	case "wide":
		p.t = newTable(e.stdout, "NAMESPACE", "NAME", "KIND", "AGE", "STATUS", "FINALIZERS", "REVISION", "CREATED", "VERSION", "LEASE", "UID", "KEY")
	}
	return p
}

func (p *lsPrinter) status(r lsRow) string {
	switch {
	case r.DeleteRevision != 0:
		return "Deleted@" + strconv.FormatInt(r.DeleteRevision, 10)
	case r.Encrypted != "":
		return "Encrypted"
	case !r.Deleting.IsZero():
		return "Terminating " + humanAge(p.now.Sub(r.Deleting))
	default:
		return "-"
	}
}

func (p *lsPrinter) row(r lsRow) error {
	p.n++
	switch p.o.Output {
	case "table", "wide":
		ns := r.Namespace
		if ns == "" {
			ns = "-"
		}
		fins := strings.Join(r.Finalizers, ",")
		if fins == "" {
			fins = "-"
		}
		age := "-"
		if !r.Created.IsZero() {
			age = humanAge(p.now.Sub(r.Created))
		}
		kind := r.Kind
		if kind == "" {
			kind = r.Resource
		}
		cells := []string{ns, r.Name, kind, age, p.status(r), fins, strconv.FormatInt(r.Revision, 10)}
		if p.o.Output == "wide" {
			lease := "-"
			if r.Lease != 0 {
				lease = strconv.FormatInt(r.Lease, 16)
			}
			cells = append(cells, strconv.FormatInt(r.CreateRevision, 10), strconv.FormatInt(r.Version, 10), lease, r.UID, r.Key)
			cells = append(cells, r.Extra...)
		}
		return p.t.Row(cells...)
	case "json":
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		sep := ",\n    "
		if p.first {
			sep = "{\n  \"items\": [\n    "
			p.first = false
		}
		_, err = fmt.Fprintf(p.e.stdout, "%s%s", sep, b)
		return err
	default:
		b, err := yaml.Marshal([]lsRow{r})
		if err != nil {
			return err
		}
		if p.first {
			if _, err := io.WriteString(p.e.stdout, "items:\n"); err != nil {
				return err
			}
			p.first = false
		}
		_, err = p.e.stdout.Write(b)
		return err
	}
}

func (p *lsPrinter) close() error {
	switch p.o.Output {
	case "table", "wide":
		if p.n == 0 {
			fmt.Fprintln(p.e.stderr, "etcdpvc: no objects found")
			return nil
		}
		return p.t.Flush()
	case "json":
		if p.first {
			_, err := io.WriteString(p.e.stdout, "{\n  \"items\": []\n}\n")
			return err
		}
		_, err := io.WriteString(p.e.stdout, "\n  ]\n}\n")
		return err
	default:
		if p.first {
			_, err := io.WriteString(p.e.stdout, "items: []\n")
			return err
		}
		return nil
	}
}
