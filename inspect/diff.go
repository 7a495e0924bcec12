package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"sort"
	"strings"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// ErrDiffer is the outcome of a diff that found the two states different
// (exit status 11, as diff(1) says 1).
var ErrDiffer = errors.New("the states differ")

// ErrNothingCompared is the outcome of a diff narrowed to one namespace
// that holds no key of the scope on either side while other namespaces
// do (exit status 13): neither "same" nor "differ" would be an answer to
// what was likely asked.
var ErrNothingCompared = errors.New("no verdict")

// OtherNamespaces counts the keys of resource res (nil: of every
// resource) that r holds at revision rev under the store prefix
// storePrefix in namespaces other than ns.
func OtherNamespaces(ctx context.Context, r store.Reader, storePrefix string, res *resource.Resource, ns string, rev int64) (int, error) {
	prefix := storePrefix + "/"
	if res != nil {
		prefix = res.ListPrefix(storePrefix, "")
	}
	n := 0
	_, err := r.List(ctx, prefix, store.ListOptions{KeysOnly: true, Revision: rev}, func(kv *store.KeyValue) error {
		if _, kns, _, ok := resource.ParseKey(storePrefix, kv.Key); ok && kns != "" && kns != ns {
			n++
		}
		return nil
	})
	return n, err
}

// DiffSide is one of the two states Diff compares: a store read at a
// revision, with the planner that decrypts and decodes its values.
type DiffSide struct {
	Reader store.Reader
	// Rev is the revision read (0: the latest).
	Rev int64
	// Codec decrypts (with its encryption config) and decodes values.
	Codec kubevalue.Codec
}

// DiffOptions tune Diff.
type DiffOptions struct {
	// StorePrefix is the apiserver's --etcd-prefix ("/registry").
	StorePrefix string
	// ListPrefix is the key prefix compared (ending in "/").
	ListPrefix string
	// Match, when set, keeps only the keys it accepts.
	Match func(key string) bool
	// ShowSecrets puts a Secret's values in summaries and diffs.
	ShowSecrets bool
	// IgnoreMetadataOnly leaves out (and does not count as a difference)
	// the objects whose only change is resourceVersion or the times of
	// managedFields.
	IgnoreMetadataOnly bool
	// WithDiff renders a unified YAML diff of each changed object.
	WithDiff bool
	// PageSize is the live etcd page size (0: the store's default).
	PageSize int64
}

// Kinds of DiffRecord.
const (
	DiffAdded    = "ADDED"
	DiffDeleted  = "DELETED"
	DiffModified = "MODIFIED"
)

// DiffRecord is one object that differs between the two states.
type DiffRecord struct {
	// Change is ADDED (only in B), DELETED (only in A) or MODIFIED.
	Change    string `json:"change"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Key       string `json:"key"`
	// RevA and RevB are the key's mod revision on each side (0: absent).
	RevA int64 `json:"modRevisionA,omitempty"`
	RevB int64 `json:"modRevisionB,omitempty"`
	// Summary says what changed (MODIFIED), as history does.
	Summary string `json:"summary,omitempty"`
	// MetadataOnly: only resourceVersion or managedFields times changed.
	MetadataOnly bool `json:"metadataOnly,omitempty"`
	// ReEncrypted: the stored bytes differ but the plaintext is the same
	// (a rewrite with a new key or provider, or a new nonce).
	ReEncrypted bool `json:"reEncrypted,omitempty"`
	// Unreadable says why the value of a side could not be decrypted or
	// decoded ("" when it could): the objects could not be compared.
	Unreadable string `json:"unreadable,omitempty"`
	// Diff is the unified YAML diff (with DiffOptions.WithDiff).
	Diff string `json:"diff,omitempty"`
}

// DiffTotals counts one resource's differences.
type DiffTotals struct {
	Resource string `json:"resource"`
	Added    int    `json:"added"`
	Deleted  int    `json:"deleted"`
	Modified int    `json:"modified"`
	// MetadataOnly and ReEncrypted are among Modified.
	MetadataOnly int `json:"metadataOnly"`
	ReEncrypted  int `json:"reEncrypted"`
	// Hidden counts metadata-only changes left out (IgnoreMetadataOnly);
	// they are not in Modified.
	Hidden int `json:"hidden,omitempty"`
	// Unreadable counts objects of which a side could not be read.
	Unreadable int `json:"unreadable"`
}

// DiffSummary is what Diff compared and found.
type DiffSummary struct {
	// Compared counts the keys read on either side.
	Compared int `json:"compared"`
	// RevA and RevB are the revisions each side was read at.
	RevA int64 `json:"revisionA"`
	RevB int64 `json:"revisionB"`
	// ReadToA and ReadToB, when set, are the last revisions a side of the
	// latest revision of a live etcd was read at: etcd was compacted
	// during the read, which continued from the last key read at the
	// newer revision (RevA or RevB is then the first).
	ReadToA int64         `json:"readToRevisionA,omitempty"`
	ReadToB int64         `json:"readToRevisionB,omitempty"`
	Totals  []*DiffTotals `json:"totals"`
	// Differ counts the objects reported (hidden ones excluded).
	Differ int `json:"differ"`
	// Unreadable counts the objects that could not be compared.
	Unreadable int `json:"unreadable"`
	// Hidden counts the metadata-only changes left out.
	Hidden int `json:"hidden,omitempty"`
	// Resource and Namespace are the scope compared when it is narrowed
	// to one namespace ("": every resource, every namespace).
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// NothingCompared: no key of the namespace compared on either side,
	// while other namespaces hold OtherNamespacesA keys of the scope in A
	// and OtherNamespacesB in B: no verdict.
	NothingCompared  bool `json:"nothingCompared,omitempty"`
	OtherNamespacesA int  `json:"otherNamespacesA,omitempty"`
	OtherNamespacesB int  `json:"otherNamespacesB,omitempty"`
}

// errStopList ends a List early: the caller has what it needs.
var errStopList = errors.New("list stopped")

// listing is one side's key-ordered listing, pulled one key at a time.
type listing struct {
	next func() (*store.KeyValue, bool)
	stop func()
	err  error
	rev  int64
	// span is the revisions a read of the latest revision spans.
	span store.Span
}

func pullList(ctx context.Context, s DiffSide, prefix string, pageSize int64) *listing {
	l := &listing{}
	opts := store.ListOptions{Revision: s.Rev, PageSize: pageSize}
	if s.Rev == 0 {
		// The latest state is read across a compaction; rev:N is not.
		opts.OnCompacted = l.span.Record
	}
	seq := func(yield func(*store.KeyValue) bool) {
		fn := func(kv *store.KeyValue) error {
			if !yield(kv) {
				return errStopList
			}
			return nil
		}
		rev, err := s.Reader.List(ctx, prefix, opts, fn)
		l.rev = rev
		if err != nil && !errors.Is(err, errStopList) {
			l.err = err
		}
	}
	l.next, l.stop = iter.Pull(seq)
	return l
}

// pull returns the next key in scope, or nil at the end.
func (l *listing) pull(match func(string) bool) *store.KeyValue {
	for {
		kv, ok := l.next()
		if !ok {
			return nil
		}
		if match == nil || match(kv.Key) {
			return kv
		}
	}
}

// Diff compares the keys under o.ListPrefix in a and b in one pass over
// each (both are listed in key order and merged) and calls emit for each
// object that differs, in key order. Stored bytes are compared first; only
// values that differ are decrypted and decoded. It returns the totals; a
// listing error ends the comparison and is returned with the totals so far.
func Diff(ctx context.Context, a, b DiffSide, o DiffOptions, emit func(DiffRecord) error) (*DiffSummary, error) {
	la := pullList(ctx, a, o.ListPrefix, o.PageSize)
	defer la.stop()
	lb := pullList(ctx, b, o.ListPrefix, o.PageSize)
	defer lb.stop()
	d := &differ{ctx: ctx, a: a, b: b, o: o, totals: map[string]*DiffTotals{}}
	sum := &DiffSummary{}
	ka, kb := la.pull(o.Match), lb.pull(o.Match)
	var err error
	for err == nil {
		// A listing that ended on an error ends the comparison before
		// anything more is emitted: the other side's keys are not
		// ADDED or DELETED for want of this side's. Both sides' first
		// pages are read before the first record.
		if ka == nil && la.err != nil || kb == nil && lb.err != nil {
			break
		}
		if ka == nil && kb == nil {
			break
		}
		sum.Compared++
		switch {
		case kb == nil || (ka != nil && ka.Key < kb.Key):
			err = d.one(ka, nil, emit)
			ka = la.pull(o.Match)
		case ka == nil || kb.Key < ka.Key:
			err = d.one(nil, kb, emit)
			kb = lb.pull(o.Match)
		default:
			if !bytes.Equal(ka.Value, kb.Value) {
				err = d.one(ka, kb, emit)
			}
			ka, kb = la.pull(o.Match), lb.pull(o.Match)
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	// Stop both listings before reading their errors and revisions.
	la.stop()
	lb.stop()
	if err == nil {
		err = errors.Join(sideErr("A", la.err), sideErr("B", lb.err))
	}
	sum.RevA, sum.RevB = la.rev, lb.rev
	if la.span.Spans() {
		sum.ReadToA = la.span.To
	}
	if lb.span.Spans() {
		sum.ReadToB = lb.span.To
	}
	for _, t := range d.totals {
		sum.Totals = append(sum.Totals, t)
		sum.Differ += t.Added + t.Deleted + t.Modified
		sum.Unreadable += t.Unreadable
		sum.Hidden += t.Hidden
	}
	sort.Slice(sum.Totals, func(i, j int) bool { return sum.Totals[i].Resource < sum.Totals[j].Resource })
	if sum.Totals == nil {
		sum.Totals = []*DiffTotals{}
	}
	return sum, err
}

// sideErr names the side of a listing error.
func sideErr(side string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", side, err)
}

// differ holds what Diff needs while comparing.
type differ struct {
	ctx    context.Context
	a, b   DiffSide
	o      DiffOptions
	totals map[string]*DiffTotals
}

func (d *differ) total(res string) *DiffTotals {
	t := d.totals[res]
	if t == nil {
		t = &DiffTotals{Resource: res}
		d.totals[res] = t
	}
	return t
}

// one reports a key present in A only (kb nil), in B only (ka nil), or in
// both with different stored bytes.
func (d *differ) one(ka, kb *store.KeyValue, emit func(DiffRecord) error) error {
	key := ""
	rec := DiffRecord{}
	if ka != nil {
		key, rec.RevA = ka.Key, ka.ModRevision
	}
	if kb != nil {
		key, rec.RevB = kb.Key, kb.ModRevision
	}
	rec.Key = key
	if r, ns, name, ok := resource.ParseKey(d.o.StorePrefix, key); ok {
		rec.Resource, rec.Namespace, rec.Name = r.String(), ns, name
	} else if r, ns, bad := resource.BadKey(d.o.StorePrefix, key); bad {
		// Under r's path, naming no object: r's, as its LIST reads it.
		rec.Resource, rec.Namespace, rec.Name = r.String(), ns, key
	} else {
		rec.Resource, rec.Name = GroupOf(strings.TrimSuffix(d.o.StorePrefix, "/")+"/", key), key
	}
	t := d.total(rec.Resource)
	var ca, cb *kubevalue.Current
	var erra, errb error
	switch {
	case kb == nil:
		rec.Change = DiffDeleted
		t.Deleted++
		if d.o.WithDiff {
			ca, erra = d.a.Codec.Open(d.ctx, *ka)
		}
	case ka == nil:
		rec.Change = DiffAdded
		t.Added++
		if d.o.WithDiff {
			cb, errb = d.b.Codec.Open(d.ctx, *kb)
		}
	default:
		rec.Change = DiffModified
		ca, erra = d.a.Codec.Open(d.ctx, *ka)
		cb, errb = d.b.Codec.Open(d.ctx, *kb)
		if erra == nil && errb == nil {
			d.modified(ka, kb, ca, cb, &rec)
		}
	}
	if erra != nil || errb != nil {
		var why []string
		if erra != nil {
			why = append(why, "A: "+erra.Error())
		}
		if errb != nil {
			why = append(why, "B: "+errb.Error())
		}
		rec.Unreadable = strings.Join(why, "; ")
		t.Unreadable++
		if rec.Change == DiffModified {
			rec.Summary = "stored value changed; cannot compare: " + rec.Unreadable
		}
	}
	if rec.Change == DiffModified {
		if rec.MetadataOnly && d.o.IgnoreMetadataOnly {
			t.Hidden++
			return nil
		}
		t.Modified++
		if rec.MetadataOnly {
			t.MetadataOnly++
		}
		if rec.ReEncrypted {
			t.ReEncrypted++
		}
	}
	if d.o.WithDiff && rec.Unreadable == "" && !rec.ReEncrypted {
		var before, after *codec.Object
		if ca != nil {
			before = ca.Obj
		}
		if cb != nil {
			after = cb.Obj
		}
		p := kubevalue.Codec{ShowSecrets: d.o.ShowSecrets}
		text, err := p.RenderDiff("a"+key, before, rec.RevA, "b"+key, after, rec.RevB)
		if err != nil {
			return fmt.Errorf("diff %s: %w", key, err)
		}
		rec.Diff = text
	}
	return emit(rec)
}

// storedAs says how a value is stored: "in the clear" or the provider
// and key of its encryption header.
func storedAs(c *kubevalue.Current) string {
	if c.Encrypted == nil {
		return "in the clear"
	}
	return c.Encrypted.String()
}

// modified fills rec's summary for a key whose stored bytes differ and
// whose two values were read.
func (d *differ) modified(ka, kb *store.KeyValue, ca, cb *kubevalue.Current, rec *DiffRecord) {
	encA, encB := storedAs(ca), storedAs(cb)
	var notes []string
	if ka.CreateRevision != kb.CreateRevision {
		notes = append(notes, fmt.Sprintf("re-created (created at revision %d, then %d)", ka.CreateRevision, kb.CreateRevision))
	}
	if bytes.Equal(ca.Plain, cb.Plain) {
		rec.ReEncrypted = true
		switch {
		case ca.Encrypted != nil && cb.Encrypted != nil && encA == encB:
			notes = append(notes, "re-encrypted with the same key ("+encA+"), content unchanged")
		case ca.Encrypted != nil && cb.Encrypted != nil:
			notes = append(notes, "re-encrypted, content unchanged ("+encA+" → "+encB+")")
		default:
			notes = append(notes, "content unchanged, now stored "+storedPhrase(encB)+" (was "+storedPhrase(encA)+")")
		}
		rec.Summary = strings.Join(notes, "; ")
		return
	}
	changes := codec.Changes(ca.Obj.Content, cb.Obj.Content, d.o.ShowSecrets)
	// The decoded content says everything about a value only when it
	// holds every stored field: JSON is decoded whole, a protobuf only
	// when re-encoding it gives its bytes back. Otherwise fields this
	// build does not decode (a newer apiserver's, an unknown kind's) may
	// be what changed.
	whole := func() bool { return decodedWhole(ca.Obj) && decodedWhole(cb.Obj) }
	switch {
	case len(changes) > 0:
		notes = append(notes, codec.SummarizeChanges(changes, 4))
		if unknownKind(ca.Obj) && unknownKind(cb.Obj) && !bytes.Equal(ca.Obj.Undecoded, cb.Obj.Undecoded) {
			// A kind this build does not know: what is beyond its
			// metadata changed too.
			notes = append(notes, "changed in fields this build does not decode too")
		}
	case reflect.DeepEqual(ca.Obj.Content, cb.Obj.Content):
		switch {
		case !whole() && ca.Obj.Format != cb.Obj.Format:
			notes = append(notes, fmt.Sprintf("changed in fields this build does not decode, now stored as %s (was %s)", cb.Obj.Format, ca.Obj.Format))
		case !whole():
			notes = append(notes, "changed in fields this build does not decode")
		default:
			notes = append(notes, fmt.Sprintf("content unchanged, stored as %s (was %s)", cb.Obj.Format, ca.Obj.Format))
		}
	case reflect.DeepEqual(withoutVolatile(ca.Obj.Content), withoutVolatile(cb.Obj.Content)):
		if whole() {
			rec.MetadataOnly = len(notes) == 0
			notes = append(notes, "metadata only (resourceVersion, managedFields times)")
		} else {
			// Not metadata only as far as is known: never left out.
			notes = append(notes, "resourceVersion or managedFields times changed, and maybe fields this build does not decode")
		}
	default:
		notes = append(notes, "managedFields changed")
	}
	if encA != encB {
		rec.MetadataOnly = false
		notes = append(notes, "now stored "+storedPhrase(encB)+" (was "+storedPhrase(encA)+")")
	}
	rec.Summary = strings.Join(notes, "; ")
}

// unknownKind reports whether o is a protobuf of a kind this build's
// scheme does not hold: only its metadata is decoded (the rest is
// o.Undecoded).
func unknownKind(o *codec.Object) bool {
	return o.Format == codec.FormatProtobuf && o.Typed == nil
}

// decodedWhole reports whether o's Content holds every field stored:
// always for JSON (every member is decoded, known or not); for protobuf,
// when re-encoding o gives its stored bytes back.
func decodedWhole(o *codec.Object) bool {
	return o.Format == codec.FormatJSON || o.RoundTrips() == nil
}

// storedPhrase turns storedAs into a phrase after "stored".
func storedPhrase(s string) string {
	if s == "in the clear" {
		return s
	}
	return "encrypted with " + s
}

// withoutVolatile returns content without what changes on every write
// of an unchanged object: metadata.resourceVersion and the time of each
// managedFields entry. content itself is not modified.
func withoutVolatile(content map[string]any) map[string]any {
	md, ok := content["metadata"].(map[string]any)
	if !ok {
		return content
	}
	out := make(map[string]any, len(content))
	for k, v := range content {
		out[k] = v
	}
	m := make(map[string]any, len(md))
	for k, v := range md {
		m[k] = v
	}
	delete(m, "resourceVersion")
	if mf, ok := m["managedFields"].([]any); ok {
		entries := make([]any, len(mf))
		for i, e := range mf {
			if em, ok := e.(map[string]any); ok {
				c := make(map[string]any, len(em))
				for k, v := range em {
					if k != "time" {
						c[k] = v
					}
				}
				entries[i] = c
			} else {
				entries[i] = e
			}
		}
		m["managedFields"] = entries
	}
	out["metadata"] = m
	return out
}
