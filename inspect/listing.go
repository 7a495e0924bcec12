package inspect

import (
	"context"
	"errors"
	"fmt"
	"github.com/etcdpvc/etcdpvc/clock"
	"io"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
)

// The listing of `etcdpvc ls`: which keys are listed, what is read of each,
// and the columns and documents built from them.

// ErrNeedsArchive is a listing of deleted keys from a store that keeps no
// index of them (live etcd): only a store.Archive (a db file) has one.
var ErrNeedsArchive = errors.New("listing deleted keys needs a store that keeps every revision")

// ListKind is how a listing shows its objects.
type ListKind int

// Kinds of listing.
const (
	// ListGeneric shows the metadata of objects of any resource.
	ListGeneric ListKind = iota
	// ListClaims shows PersistentVolumeClaims with kubectl's columns.
	ListClaims
	// ListVolumes shows PersistentVolumes with kubectl's columns.
	ListVolumes
)

// ListKindOf is the kind of a listing of resource r (nil: every resource).
func ListKindOf(r *resource.Resource) ListKind {
	switch {
	case r != nil && r.Group == "" && r.Plural == "persistentvolumeclaims":
		return ListClaims
	case r != nil && r.Group == "" && r.Plural == "persistentvolumes":
		return ListVolumes
	}
	return ListGeneric
}

// Listed is one object of a listing: the ListItem and, for claims and
// volumes listed with their columns, the decoded object (nil when the
// value was not read).
type Listed struct {
	ListItem
	Claim  *corev1.PersistentVolumeClaim
	Volume *corev1.PersistentVolume
	// Phase is a pod's, namespace's, claim's or volume's STATUS as
	// kubectl shows it (StatusOf), in a table of any resource; ""
	// otherwise.
	Phase string
	// Content is the object whole, as `get` shows it (resourceVersion
	// set, a Secret's values redacted), when the listing decodes objects
	// (ListingOptions.Content); nil otherwise, or when the value was not
	// read.
	Content map[string]any
}

// ListingOptions select and shape the objects List reads.
type ListingOptions struct {
	// StorePrefix is the apiserver's --etcd-prefix ("/registry").
	StorePrefix string
	// KeyPrefix is the key prefix listed (ending in "/").
	KeyPrefix string
	// Match, when set, keeps only the keys it accepts, and names the
	// object of each (resource.ParseKey's answer); without it every key
	// ParseKey parses under StorePrefix is listed. A key under a
	// resource's storage path that names no object (resource.BadKey;
	// Match's name "") is listed, named by its key (ReadBadKey); other keys
	// that are not objects (the apiserver's internal ones) never are.
	Match func(key string) (r resource.Resource, ns, name string, ok bool)
	// Kind is how objects are shown; with Objects, ListClaims and
	// ListVolumes decode each claim or volume whole.
	Kind    ListKind
	Objects bool
	// Terminating keeps only objects with a deletionTimestamp.
	Terminating bool
	// Select keeps only the objects its selectors match (nil: all); a
	// value that was not read cannot be matched and stays listed (with
	// why), unless its name and namespace rule it out.
	Select *Selection
	// Content decodes each object whole (Listed.Content).
	Content bool
	// Deleted lists the keys whose newest revision is a deletion (the
	// store must be a store.Archive: else ErrNeedsArchive), and, from a
	// store that tells a key's incarnations apart (wal.Incarnations),
	// the incarnations a deletion ended that another followed (the key
	// created again: ListItem.RecreateRevision), each before its key's
	// newer ones.
	Deleted bool
	// PageSize, Revision and OnCompacted are the store's ListOptions.
	PageSize    int64
	Revision    int64
	OnCompacted func(from, to int64)
}

// ListSummary is what a listing read.
type ListSummary struct {
	// Listed is the number of objects emitted.
	Listed int
	// Unread counts the listed values that could not be read.
	Unread Unread
	// Partial counts the objects listed with Content whose kind is not in
	// this build's scheme: their content holds only apiVersion, kind and
	// metadata.
	Partial int
	// BadKeys are the keys listed that name no single object
	// (ListItem.BadKey).
	BadKeys []string
	// Recreated counts the deleted objects listed whose key was created
	// again after them (ListItem.RecreateRevision); NotHeld those of them
	// whose last state the source does not establish (listed without
	// their metadata).
	Recreated, NotHeld int
}

// List reads the keys o selects from r, decrypting with enc (nil: none),
// and emits each listed object in key order. Values that cannot be
// decrypted or decoded are listed with why (ListItem.Unread) and counted.
// On a db file values are read in place and prepared on every core. An
// error that ends the listing early (a damaged file: store.ErrCorrupt)
// comes with the summary of what was emitted before it.
func List(ctx context.Context, r store.Reader, enc Decrypter, o ListingOptions, emit func(Listed) error) (*ListSummary, error) {
	sum := &ListSummary{}
	archive, isArchive := r.(store.Archive)
	if o.Deleted && !isArchive {
		return sum, ErrNeedsArchive
	}
	type prepared struct {
		Listed
		show, partial bool
	}
	// prepare reads one key; it keeps nothing of kv and touches nothing
	// shared, so that keys can be prepared on several cores.
	prepare := func(kv *store.KeyValue, deleteRev int64) prepared {
		var (
			res      resource.Resource
			ns, name string
			ok       bool
		)
		if o.Match != nil {
			res, ns, name, ok = o.Match(kv.Key)
		} else if res, ns, name, ok = resource.ParseKey(o.StorePrefix, kv.Key); !ok {
			res, ns, ok = resource.BadKey(o.StorePrefix, kv.Key)
		}
		if !ok || !o.Select.MatchesKey(ns, name) {
			return prepared{} // apiserver-internal keys (ranges, leases of masters), or out of scope
		}
		if name == "" {
			// Under a resource's storage path, naming no object: its
			// value is read as the LIST reads it, its row named by the key.
			li, _ := ReadBadKey(ctx, enc, res, ns, kv, deleteRev)
			return prepared{Listed: Listed{ListItem: li}, show: true}
		}
		if o.Deleted && kv.ModRevision == 0 && len(kv.Value) == 0 {
			// A past incarnation whose last state the source does not
			// establish: nothing to read (ListSummary.NotHeld).
			return prepared{Listed: Listed{ListItem: ListItem{Resource: res, Namespace: ns, Name: name, Key: kv.Key, DeleteRevision: deleteRev}}, show: true}
		}
		li, plain, typed := read(ctx, enc, res, ns, name, kv, deleteRev)
		it := prepared{Listed: Listed{ListItem: li}, show: true}
		if li.Summary == nil {
			return it // listed, with why it was not read
		}
		if o.Terminating && !li.Summary.Terminating() {
			return prepared{}
		}
		if o.Content || o.Select.NeedsObject() {
			obj, err := codec.DecodeAs(kv.Key, plain, res.StoredKind(), false)
			if err != nil {
				it.Summary, it.Unread, it.Problem = nil, UndecodableStatus(plain, err), problem(plain, err)
				return it
			}
			content := WithResourceVersion(obj.Content, kv.ModRevision)
			if !o.Select.Matches(ns, name, content) {
				return prepared{}
			}
			if o.Content {
				it.Content, it.partial = codec.RedactSecret(content), len(obj.Undecoded) > 0
			}
		}
		var err error
		switch {
		case o.Kind == ListClaims && o.Objects:
			it.Claim, err = DecodeClaim(plain)
		case o.Kind == ListVolumes && o.Objects:
			it.Volume, err = DecodeVolume(plain)
		case o.Kind == ListGeneric && o.Objects && res.Group == "" && statusKinds[res.Plural]:
			if typed != nil {
				// Decoded once already, by Read's check.
				it.Phase, _, err = statusOf(codec.DecodeTypedBare(plain, typed))
			} else {
				it.Phase, _, err = StatusOf(plain)
			}
		}
		if err != nil {
			it.Summary, it.Unread, it.Problem = nil, UndecodableStatus(plain, err), problem(plain, err)
		}
		return it
	}
	send := func(it prepared) error {
		if !it.show {
			return nil
		}
		sum.Unread.Add(it.ListItem)
		sum.Listed++
		if it.BadKey {
			sum.BadKeys = append(sum.BadKeys, it.Key)
		}
		if it.partial {
			sum.Partial++
		}
		if it.RecreateRevision != 0 {
			sum.Recreated++
			if it.Summary == nil && it.Unread == "" {
				sum.NotHeld++
			}
		}
		return emit(it.Listed)
	}
	var err error
	if o.Deleted {
		var past []wal.PastIncarnation
		if inc, ok := r.(wal.Incarnations); ok {
			if err := inc.PastIncarnations(ctx, o.KeyPrefix, func(p wal.PastIncarnation) error {
				past = append(past, p)
				return nil
			}); err != nil {
				return sum, err
			}
		}
		// sendPast sends the past incarnations of the keys up to key (""
		// : all of them), in key order and each key's oldest first.
		sendPast := func(key string) error {
			for len(past) > 0 && (key == "" || past[0].KV.Key <= key) {
				p := past[0]
				past = past[1:]
				it := prepare(&p.KV, p.DeleteRevision)
				it.RecreateRevision = p.RecreateRevision
				if err := send(it); err != nil {
					return err
				}
			}
			return nil
		}
		err = archive.ScanDeleted(ctx, o.KeyPrefix, func(kv *store.KeyValue, deleteRev int64) error {
			if err := sendPast(kv.Key); err != nil {
				return err
			}
			return send(prepare(kv, deleteRev))
		})
		if err == nil {
			err = sendPast("")
		}
	} else {
		_, err = store.ListMap(ctx, r, o.KeyPrefix, store.ListOptions{PageSize: o.PageSize, Revision: o.Revision, OnCompacted: o.OnCompacted}, 0,
			func(kv *store.KeyValue) (prepared, error) { return prepare(kv, 0), nil }, send)
	}
	return sum, err
}

// EmptyListing says what an empty listing searched: "no persistentvolumeclaims
// found in namespace demo", and for a namespaced resource r listed in one
// namespace ns, how many objects other namespaces hold (at revision rev).
// what is "objects", "terminating objects" or "deleted objects"; with r,
// "objects" becomes r's name.
func EmptyListing(ctx context.Context, reader store.Reader, storePrefix string, r *resource.Resource, ns, what string, rev int64) string {
	filtered := what != "objects"
	if r != nil {
		what = strings.Replace(what, "objects", r.String(), 1)
	}
	if ns == "" {
		return "no " + what + " found"
	}
	msg := "no " + what + " found in namespace " + ns
	if r == nil || filtered {
		return msg + " (-A lists every namespace)"
	}
	n := 0
	_, err := reader.List(ctx, r.ListPrefix(storePrefix, ""), store.ListOptions{KeysOnly: true, Revision: rev}, func(*store.KeyValue) error {
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

// Status is the STATUS of a listed object: why it was not read, its
// deletion, Terminating with the deletionTimestamp's age at now, or phase.
func (it ListItem) Status(now time.Time, phase string) string {
	switch {
	case it.Unread != "":
		return it.Unread
	case it.RecreateRevision != 0:
		// Another object holds the name since: this one's uid tells
		// them apart.
		s := "Deleted@" + revisionOrUnknown(it.DeleteRevision)
		if uid := it.UID(); uid != "-" {
			s += " (uid " + uid + ")"
		}
		return s + ", re-created@" + revisionOrUnknown(it.RecreateRevision)
	case it.DeleteRevision < 0:
		return "Deleted@?"
	case it.DeleteRevision != 0:
		return "Deleted@" + strconv.FormatInt(it.DeleteRevision, 10)
	case it.Summary.Terminating():
		return "Terminating " + HumanAge(now.Sub(it.Summary.DeletionTimestamp))
	default:
		return phase
	}
}

// revisionOrUnknown is rev, "?" when not established (-1).
func revisionOrUnknown(rev int64) string {
	if rev < 0 {
		return "?"
	}
	return strconv.FormatInt(rev, 10)
}

// Age is the object's age at now, "-" when unknown.
func (it ListItem) Age(now time.Time) string {
	if it.Summary == nil || it.Summary.CreationTimestamp.IsZero() {
		return "-"
	}
	return HumanAge(now.Sub(it.Summary.CreationTimestamp))
}

// Finalizers are the object's finalizers, comma-separated, "-" for none.
func (it ListItem) Finalizers() string {
	if it.Summary == nil || len(it.Summary.Finalizers) == 0 {
		return "-"
	}
	return strings.Join(it.Summary.Finalizers, ",")
}

// Kind is the object's kind as stored, else its resource's.
func (it ListItem) Kind() string {
	if it.Summary != nil && it.Summary.Kind != "" {
		return it.Summary.Kind
	}
	if it.Resource.Kind != "" {
		return it.Resource.Kind
	}
	return it.Resource.String()
}

// PrintName writes kubectl's -o name of the object
// ("persistentvolumeclaim/www-web-0", "deployment.apps/web"); that of a
// custom resource whose kind is not known (its value was not read) is
// "<plural>.<group>/NAME", which kubectl takes as well.
func (it ListItem) PrintName(w io.Writer) error {
	o := it.Object()
	if o.Kind == "" {
		_, err := fmt.Fprintf(w, "%s/%s\n", it.Resource.String(), it.Name)
		return err
	}
	return PrintName(w, o.APIVersion, o.Kind, it.Name)
}

// UID is the object's uid, "-" when unknown.
func (it ListItem) UID() string {
	if it.Summary == nil || it.Summary.UID == "" {
		return "-"
	}
	return it.Summary.UID
}

// ClaimColumns are kubectl's columns of a listed claim; dashes when it was
// not read.
func (l Listed) ClaimColumns(vols *Volumes) Claim {
	if l.Claim == nil {
		return Claim{Phase: "-", Volume: "-", Capacity: "-", AccessModes: "-", StorageClass: "-", ReclaimPolicy: "-", VolumeMode: "-"}
	}
	return ClaimOf(l.Claim, vols)
}

// VolumeColumns are kubectl's columns of a listed volume; dashes when it
// was not read.
func (l Listed) VolumeColumns() VolumeColumns {
	if l.Volume == nil {
		return VolumeColumns{Capacity: "-", AccessModes: "-", ReclaimPolicy: "-", Status: "-", Claim: "-", StorageClass: "-", VolumeMode: "-"}
	}
	return VolumeColumnsOf(l.Volume)
}

// ListObject is one item of a listing's Kubernetes List (ls -o json|yaml):
// the object's metadata as kubectl shows it, and where etcd holds it.
type ListObject struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ListMeta   `json:"metadata"`
	Etcd       ListStored `json:"etcd"`
}

// ListMeta is the metadata of a ListObject.
type ListMeta struct {
	Name              string     `json:"name"`
	Namespace         string     `json:"namespace,omitempty"`
	UID               string     `json:"uid,omitempty"`
	ResourceVersion   string     `json:"resourceVersion,omitempty"`
	CreationTimestamp *time.Time `json:"creationTimestamp,omitempty"`
	DeletionTimestamp *time.Time `json:"deletionTimestamp,omitempty"`
	Finalizers        []string   `json:"finalizers,omitempty"`
}

// ListStored is where and how a listed object is stored. A revision,
// create revision or version a write-ahead log does not establish is left
// out (0 is no revision etcd gives a key, nor a version of one).
type ListStored struct {
	Key            string `json:"key"`
	Resource       string `json:"resource"`
	ModRevision    int64  `json:"modRevision,omitempty"`
	CreateRevision int64  `json:"createRevision,omitempty"`
	Version        int64  `json:"version,omitempty"`
	Lease          int64  `json:"lease,omitempty"`
	DeleteRevision int64  `json:"deleteRevision,omitempty"`
	// RecreateRevision is ListItem.RecreateRevision: the key was created
	// again after this deletion (-1: at a revision not established).
	RecreateRevision int64 `json:"recreateRevision,omitempty"`
	// DeleteTime is ListItem.DeleteTime.
	DeleteTime *clock.Interval `json:"deleteTime,omitempty"`
	// Encryption is how the value is stored at rest: "identity",
	// "aescbc/key1", "kms/NAME" (StoredUnder).
	Encryption string `json:"encryption,omitempty"`
	// Unread says why the value was not read.
	Unread string `json:"unread,omitempty"`
}

// Object is the ListObject of it.
func (it ListItem) Object() ListObject {
	r := it.Resource
	o := ListObject{Kind: r.Kind, Metadata: ListMeta{Name: it.Name, Namespace: it.Namespace, ResourceVersion: known(it.ModRevision, "")},
		Etcd: ListStored{Key: it.Key, Resource: r.String(), ModRevision: it.ModRevision, CreateRevision: it.CreateRevision, Version: it.Version,
			Lease: it.Lease, DeleteRevision: it.DeleteRevision, RecreateRevision: it.RecreateRevision, DeleteTime: it.DeleteTime, Encryption: it.Encryption, Unread: it.Unread}}
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
