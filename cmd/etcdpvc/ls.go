package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/inspect"
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
	ShowKeys      bool
	PageSize      int64
	Rev           int64
}

func lsCommand() command {
	return command{
		name:      "ls",
		usage:     "list stored objects, reading only their metadata",
		argsUsage: "[RESOURCE]",
		desc: "ls lists objects page by page (every page pinned to the first page's revision), decoding\n" +
			"only their metadata; claims and volumes are decoded whole for kubectl's columns (a claim\n" +
			"without spec.volumeName shows the volume whose claimRef names it). Without RESOURCE it\n" +
			"lists every resource. --terminating keeps objects with a deletionTimestamp; --deleted (with\n" +
			"--db) lists objects whose newest revision is a deletion. STATUS shows \"Terminating 3d\"\n" +
			"with the deletionTimestamp's age. A value that cannot be decrypted or decoded is listed with\n" +
			"why in STATUS, and ls then exits with status 10. -o json and -o yaml write a Kubernetes List\n" +
			"of the objects' metadata, with each key's revisions under \"etcd\".",
		examples: `etcdpvc ls -A --terminating
etcdpvc ls pvc -n demo
etcdpvc ls pv
etcdpvc ls pods -A -o wide --show-keys
etcdpvc ls pvc -A -o json | jq -r '.items[].metadata.name'
etcdpvc --db snapshot.db ls -A --deleted`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "list this namespace only"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "list every namespace"},
			&cli.BoolFlag{Name: "terminating", Usage: "only objects with a deletionTimestamp"},
			&cli.BoolFlag{Name: "deleted", Usage: "only objects whose newest revision is a deletion (--db)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table, wide, json or yaml"},
			&cli.BoolFlag{Name: "show-keys", Usage: "add the UID and etcd KEY columns to the table"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request"},
			&cli.Int64Flag{Name: "rev", Usage: "list as of this revision (0: the latest)"},
		},
		args: optional("RESOURCE", offerResources),
		action: func(c *cli.Context, e *env, in *input) error {
			o := lsOptions{Resource: c.Args().First(), Namespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"),
				Terminating: c.Bool("terminating"), Deleted: c.Bool("deleted"), Output: c.String("output"),
				ShowKeys: c.Bool("show-keys"), PageSize: c.Int64("page-size"), Rev: c.Int64("rev")}
			if err := checkOutput(o.Output, "table", "wide", "json", "yaml"); err != nil {
				return err
			}
			if o.PageSize <= 0 {
				return usagef("--page-size must be positive")
			}
			return runLs(e, in.g, o)
		},
	}
}

// lsKind is how a listing shows its objects.
type lsKind int

const (
	lsGeneric lsKind = iota
	lsClaims
	lsVolumes
)

// lsItem is what ls makes of one key: the inspect item and, for claims and
// volumes, the decoded object.
type lsItem struct {
	inspect.ListItem
	show bool
	pvc  *corev1.PersistentVolumeClaim
	pv   *corev1.PersistentVolume
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
	archive, isArchive := s.reader.(store.Archive)
	if o.Deleted && !isArchive {
		return usagef("--deleted needs --db: live etcd keeps no index of deleted keys (use `etcdpvc history` on one key)")
	}
	var enc inspect.Decrypter
	if s.enc != nil {
		enc = s.enc
	}
	kind := lsGeneric
	if r := scope.res; r != nil && r.Group == "" && r.Plural == "persistentvolumeclaims" {
		kind = lsClaims
	} else if r != nil && r.Group == "" && r.Plural == "persistentvolumes" {
		kind = lsVolumes
	}
	out := newLsPrinter(e, o, scope, kind)
	if kind == lsClaims && out.t != nil {
		vols, err := inspect.LoadVolumes(e.ctx, s.reader, enc, s.g.Prefix, o.Rev)
		if err != nil {
			return err
		}
		out.vols = vols
		if vols.Unread > 0 {
			fmt.Fprintf(e.stderr, "etcdpvc: warning: %s not be read: a claim's VOLUME may show \"?\"\n",
				inspect.Count(vols.Unread, "persistentvolume could", "persistentvolumes could"))
		}
		if o.Output == "wide" {
			out.mounts = func(ns string) (*inspect.Mounts, error) {
				return inspect.LoadMounts(e.ctx, s.reader, enc, s.g.Prefix, ns, o.Rev)
			}
		}
	}
	var unread inspect.Unread
	// prepare reads one key; it keeps nothing of kv and touches nothing
	// shared, so that keys can be prepared on several cores.
	prepare := func(kv *store.KeyValue, deleteRev int64) lsItem {
		r, ns, name, parsed, ok := scope.match(s.g.Prefix, kv.Key)
		if !parsed || !ok {
			return lsItem{} // apiserver-internal keys (ranges, leases of masters), or out of scope
		}
		li, plain := inspect.Read(e.ctx, enc, r, ns, name, kv, deleteRev)
		it := lsItem{ListItem: li, show: true}
		if li.Summary == nil {
			return it // listed, with why it was not read
		}
		if o.Terminating && !li.Summary.Terminating() {
			return lsItem{}
		}
		var err error
		switch {
		case kind == lsClaims && out.t != nil:
			it.pvc, err = inspect.DecodeClaim(plain)
		case kind == lsVolumes && out.t != nil:
			it.pv, err = inspect.DecodeVolume(plain)
		}
		if err != nil {
			it.Summary, it.Unread = nil, inspect.UndecodableStatus(err)
		}
		return it
	}
	emit := func(it lsItem) error {
		if !it.show {
			return nil
		}
		unread.Add(it.ListItem)
		return out.row(it)
	}
	switch {
	case o.Deleted:
		err = archive.ScanLatest(e.ctx, scope.prefix, true, func(kv *store.KeyValue, deleted bool, deleteRev int64) error {
			if !deleted {
				return nil
			}
			return emit(prepare(kv, deleteRev))
		})
	default:
		// On a db file, values are read in place and prepared on every core.
		_, err = store.ListMap(e.ctx, s.reader, scope.prefix, store.ListOptions{PageSize: o.PageSize, Revision: o.Rev}, 0,
			func(kv *store.KeyValue) (lsItem, error) { return prepare(kv, 0), nil }, emit)
	}
	if err != nil && errors.Is(err, store.ErrCorrupt) {
		// What was read is printed; the rest of the file is not readable.
		if cerr := out.flush(); cerr != nil {
			return cerr
		}
		return withHint(&incompleteError{msg: fmt.Sprintf("listing stopped after %s: %v", inspect.Count(out.n, "object", "objects"), err)},
			"the db file is damaged: read another snapshot, or a copy from another member")
	}
	if err != nil {
		return err
	}
	if werr := walUnsettled(s); werr != nil && (o.Rev == 0 || o.Deleted) {
		if err := out.close(); err != nil {
			return err
		}
		return werr
	}
	if out.n == 0 {
		if err := out.close(); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "etcdpvc: %s\n", nothingFound(e, s, scope, o))
		return nil
	}
	if err := out.close(); err != nil {
		return err
	}
	if unread.Total() > 0 {
		return withHint(&incompleteError{msg: unread.Message()}, unread.Hint())
	}
	return nil
}

// nothingFound says what an empty listing searched, and for a namespaced
// resource listed in one namespace, how many objects other namespaces hold.
func nothingFound(e *env, s *session, scope keyScope, o lsOptions) string {
	what := "objects"
	if o.Terminating {
		what = "terminating objects"
	}
	if o.Deleted {
		what = "deleted objects"
	}
	r := scope.res
	if r != nil {
		what = strings.Replace(what, "objects", r.String(), 1)
	}
	if scope.ns == "" {
		return "no " + what + " found"
	}
	msg := "no " + what + " found in namespace " + scope.ns
	if r == nil || o.Terminating || o.Deleted {
		return msg + " (-A lists every namespace)"
	}
	n := 0
	_, err := s.reader.List(e.ctx, r.ListPrefix(s.g.Prefix, ""), store.ListOptions{KeysOnly: true, Revision: o.Rev}, func(kv *store.KeyValue) error {
		n++
		return nil
	})
	switch {
	case err != nil:
		return msg
	case n == 0:
		return "no " + what + " found in any namespace"
	default:
		return fmt.Sprintf("%s; other namespaces hold %d (use -A)", msg, n)
	}
}

// incompleteError is a read that could not read everything: what it read
// is printed, and the message says what it skipped.
type incompleteError struct{ msg string }

func (e *incompleteError) Error() string        { return e.msg }
func (e *incompleteError) Is(target error) bool { return target == ErrIncomplete }

// lsPrinter streams rows in the chosen format.
type lsPrinter struct {
	e      *env
	o      lsOptions
	kind   lsKind
	showNS bool
	// showKind: objects of several resources are listed.
	showKind bool
	t        *tableWriter
	n        int
	now      time.Time
	first    bool
	vols     *inspect.Volumes
	mounts   func(ns string) (*inspect.Mounts, error)
	mounted  *inspect.Mounts
}

func newLsPrinter(e *env, o lsOptions, scope keyScope, kind lsKind) *lsPrinter {
	p := &lsPrinter{e: e, o: o, kind: kind, now: e.now(), first: true}
	switch {
	case scope.res == nil:
		p.showKind = true
		p.showNS = scope.ns == ""
	default:
		p.showNS = scope.res.Namespaced && scope.ns == ""
	}
	if o.Output != "table" && o.Output != "wide" {
		return p
	}
	var h []string
	if p.showNS {
		h = append(h, "NAMESPACE")
	}
	h = append(h, "NAME")
	wide := o.Output == "wide"
	switch kind {
	case lsClaims:
		h = append(h, "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "AGE")
		if wide {
			h = append(h, "RECLAIM POLICY", "MOUNTED BY", "VOLUMEMODE", "FINALIZERS", "REVISION")
		}
	case lsVolumes:
		h = append(h, "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "AGE")
		if wide {
			h = append(h, "VOLUMEMODE", "FINALIZERS", "REVISION")
		}
	default:
		if p.showKind {
			h = append(h, "KIND")
		}
		h = append(h, "STATUS")
		if p.fins() {
			h = append(h, "FINALIZERS")
		}
		h = append(h, "AGE")
		if wide {
			h = append(h, "REVISION", "CREATED", "VERSION", "LEASE")
		}
	}
	if o.ShowKeys {
		h = append(h, "UID", "KEY")
	}
	p.t = newTable(e.stdout, h...)
	return p
}

// fins reports whether the generic table shows FINALIZERS: in -o wide,
// and with --terminating, where they are what holds the objects.
func (p *lsPrinter) fins() bool { return p.o.Output == "wide" || p.o.Terminating }

// status is the STATUS of a listed object: why it was not read, its
// deletion, Terminating with the deletionTimestamp's age, or phase.
func (p *lsPrinter) status(it lsItem, phase string) string {
	switch {
	case it.Unread != "":
		return it.Unread
	case it.DeleteRevision != 0:
		return "Deleted@" + strconv.FormatInt(it.DeleteRevision, 10)
	case it.Summary.Terminating():
		return "Terminating " + inspect.HumanAge(p.now.Sub(it.Summary.DeletionTimestamp))
	default:
		return phase
	}
}

func (p *lsPrinter) row(it lsItem) error {
	p.n++
	if p.t == nil {
		return p.document(it)
	}
	age, fins := "-", "-"
	if sum := it.Summary; sum != nil {
		if !sum.CreationTimestamp.IsZero() {
			age = inspect.HumanAge(p.now.Sub(sum.CreationTimestamp))
		}
		if len(sum.Finalizers) > 0 {
			fins = strings.Join(sum.Finalizers, ",")
		}
	}
	var cells []string
	if p.showNS {
		cells = append(cells, dashIfEmpty(it.Namespace))
	}
	cells = append(cells, it.Name)
	wide := p.o.Output == "wide"
	rev := strconv.FormatInt(it.ModRevision, 10)
	switch {
	case p.kind == lsClaims:
		c := inspect.Claim{Phase: "-", Volume: "-", Capacity: "-", AccessModes: "-", StorageClass: "-", ReclaimPolicy: "-", VolumeMode: "-"}
		if it.pvc != nil {
			c = inspect.ClaimOf(it.pvc, p.vols)
		}
		cells = append(cells, p.status(it, c.Phase), c.Volume, c.Capacity, c.AccessModes, c.StorageClass, age)
		if wide {
			cells = append(cells, c.ReclaimPolicy, p.mountedBy(it), c.VolumeMode, fins, rev)
		}
	case p.kind == lsVolumes:
		c := inspect.VolumeColumns{Capacity: "-", AccessModes: "-", ReclaimPolicy: "-", Status: "-", Claim: "-", StorageClass: "-", VolumeMode: "-"}
		if it.pv != nil {
			c = inspect.VolumeColumnsOf(it.pv)
		}
		cells = append(cells, c.Capacity, c.AccessModes, c.ReclaimPolicy, p.status(it, c.Status), c.Claim, c.StorageClass, age)
		if wide {
			cells = append(cells, c.VolumeMode, fins, rev)
		}
	default:
		if p.showKind {
			kind := it.Resource.Kind
			if it.Summary != nil && it.Summary.Kind != "" {
				kind = it.Summary.Kind
			}
			if kind == "" {
				kind = it.Resource.String()
			}
			cells = append(cells, kind)
		}
		cells = append(cells, p.status(it, "-"))
		if p.fins() {
			cells = append(cells, fins)
		}
		cells = append(cells, age)
		if wide {
			lease := "-"
			if it.Lease != 0 {
				lease = strconv.FormatInt(it.Lease, 16)
			}
			cells = append(cells, rev, strconv.FormatInt(it.CreateRevision, 10), strconv.FormatInt(it.Version, 10), lease)
		}
	}
	if p.o.ShowKeys {
		uid := "-"
		if it.Summary != nil && it.Summary.UID != "" {
			uid = it.Summary.UID
		}
		cells = append(cells, uid, it.Key)
	}
	return p.t.Row(cells...)
}

// mountedBy names the pods that use a claim, reading the pods of one
// namespace at a time (claims are listed namespace by namespace).
func (p *lsPrinter) mountedBy(it lsItem) string {
	if p.mounts == nil || it.pvc == nil {
		return "-"
	}
	if p.mounted == nil || p.mounted.Namespace != it.Namespace {
		m, err := p.mounts(it.Namespace)
		if err != nil {
			fmt.Fprintf(p.e.stderr, "etcdpvc: warning: %v\n", err)
			m = &inspect.Mounts{Namespace: it.Namespace, Unread: 1}
		}
		p.mounted = m
	}
	return p.mounted.By(it.Name)
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// lsObject is one item of `ls -o json|yaml`: the object's metadata as
// kubectl shows it, and where etcd holds it.
type lsObject struct {
	APIVersion string   `json:"apiVersion,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Metadata   lsMeta   `json:"metadata"`
	Etcd       lsStored `json:"etcd"`
}

type lsMeta struct {
	Name              string     `json:"name"`
	Namespace         string     `json:"namespace,omitempty"`
	UID               string     `json:"uid,omitempty"`
	ResourceVersion   string     `json:"resourceVersion"`
	CreationTimestamp *time.Time `json:"creationTimestamp,omitempty"`
	DeletionTimestamp *time.Time `json:"deletionTimestamp,omitempty"`
	Finalizers        []string   `json:"finalizers,omitempty"`
}

// lsStored is where and how a listed object is stored.
type lsStored struct {
	Key            string `json:"key"`
	Resource       string `json:"resource"`
	ModRevision    int64  `json:"modRevision"`
	CreateRevision int64  `json:"createRevision"`
	Version        int64  `json:"version"`
	Lease          int64  `json:"lease,omitempty"`
	DeleteRevision int64  `json:"deleteRevision,omitempty"`
	// Unread says why the value was not read.
	Unread string `json:"unread,omitempty"`
}

func (p *lsPrinter) object(it lsItem) lsObject {
	r := it.Resource
	o := lsObject{Kind: r.Kind, Metadata: lsMeta{Name: it.Name, Namespace: it.Namespace, ResourceVersion: strconv.FormatInt(it.ModRevision, 10)},
		Etcd: lsStored{Key: it.Key, Resource: r.String(), ModRevision: it.ModRevision, CreateRevision: it.CreateRevision, Version: it.Version,
			Lease: it.Lease, DeleteRevision: it.DeleteRevision, Unread: it.Unread}}
	if r.Version != "" {
		o.APIVersion = r.Version
		if r.Group != "" {
			o.APIVersion = r.Group + "/" + r.Version
		}
	}
	if sum := it.Summary; sum != nil {
		o.APIVersion, o.Kind = sum.APIVersion, sum.Kind
		o.Metadata.UID, o.Metadata.Finalizers = sum.UID, sum.Finalizers
		if t := sum.CreationTimestamp; !t.IsZero() {
			t = t.UTC()
			o.Metadata.CreationTimestamp = &t
		}
		if t := sum.DeletionTimestamp; !t.IsZero() {
			t = t.UTC()
			o.Metadata.DeletionTimestamp = &t
		}
	}
	return o
}

// document writes one item of a List in JSON or YAML.
func (p *lsPrinter) document(it lsItem) error {
	obj := p.object(it)
	w := p.e.stdout
	if p.o.Output == "json" {
		b, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		sep := ",\n"
		if p.first {
			sep = "{\n\"apiVersion\": \"v1\",\n\"kind\": \"List\",\n\"metadata\": {\"resourceVersion\": \"\"},\n\"items\": [\n"
			p.first = false
		}
		_, err = fmt.Fprintf(w, "%s%s", sep, b)
		return err
	}
	b, err := yaml.Marshal([]lsObject{obj})
	if err != nil {
		return err
	}
	if p.first {
		if _, err := io.WriteString(w, "apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n"); err != nil {
			return err
		}
		p.first = false
	}
	_, err = w.Write(b)
	return err
}

// flush writes what is buffered, ending a List: for a listing cut short.
func (p *lsPrinter) flush() error { return p.close() }

func (p *lsPrinter) close() error {
	w := p.e.stdout
	switch p.o.Output {
	case "table", "wide":
		if p.n == 0 {
			return nil
		}
		return p.t.Flush()
	case "json":
		if p.first {
			_, err := io.WriteString(w, "{\n\"apiVersion\": \"v1\",\n\"kind\": \"List\",\n\"metadata\": {\"resourceVersion\": \"\"},\n\"items\": []\n}\n")
			return err
		}
		_, err := io.WriteString(w, "\n]\n}\n")
		return err
	default:
		if p.first {
			_, err := io.WriteString(w, "apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems: []\n")
			return err
		}
		return nil
	}
}
