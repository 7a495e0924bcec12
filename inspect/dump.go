package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// ErrNotArchive means a dump of every revision was asked of a source that
// keeps no listable record of past revisions (a live etcd).
var ErrNotArchive = errors.New("the source does not keep every revision")

// DumpRecord is one line (or YAML document) of a dump.
type DumpRecord struct {
	Key            string `json:"key"`
	ModRevision    int64  `json:"modRevision"`
	CreateRevision int64  `json:"createRevision"`
	Version        int64  `json:"version"`
	Lease          int64  `json:"lease"`
	Deleted        bool   `json:"deleted,omitempty"`
	Resource       string `json:"resource,omitempty"`
	Namespace      string `json:"namespace,omitempty"`
	Name           string `json:"name,omitempty"`
	// Encrypted is the encryption envelope of a value encrypted at rest.
	Encrypted string `json:"encrypted,omitempty"`
	// Error says why the value was not decoded.
	Error string `json:"error,omitempty"`
	// Object is the decoded object as JSON, its members sorted by name at
	// every level (as `kubectl get -o json` data encoded from a map).
	Object json.RawMessage `json:"object,omitempty"`
}

// DumpMatch tells whether key belongs in the dump and, when the key names
// an object (parsed), its resource, namespace and name.
type DumpMatch func(key string) (r resource.Resource, ns, name string, parsed, ok bool)

// DumpOptions tunes Dump.
type DumpOptions struct {
	// Codec decrypts and decodes values (its Enc and Prefix are used).
	Codec kubevalue.Codec
	// Prefix is the key prefix to read (ending in "/").
	Prefix string
	// Match selects the keys under Prefix to dump; nil dumps every one.
	Match DumpMatch
	// AllRevisions dumps every revision held, in revision order, deletions
	// as records with Deleted set; the source must be a store.Archive.
	AllRevisions bool
	// Revision is the revision to dump as of (0: the latest); not with
	// AllRevisions.
	Revision int64
	// PageSize is the number of keys per range request (live etcd).
	PageSize int64
	// OnCompacted is the store's ListOptions.OnCompacted: with it, a dump
	// of the latest revision of a live etcd continues across a compaction.
	OnCompacted func(from, to int64)
	// YAML writes YAML documents (each preceded by "---") instead of JSON
	// Lines.
	YAML bool
	// ShowSecrets keeps Secret values; by default they are redacted
	// (codec.RedactSecret).
	ShowSecrets bool
	// Progress, when set, is called after each record written with the
	// records written so far, the stored size of the record's value and its
	// revision. It is called from one goroutine at a time.
	Progress func(records, valueBytes, rev int64)
	// Workers is the number of goroutines decoding values (0: GOMAXPROCS).
	Workers int
}

// DumpResult says what a dump wrote.
type DumpResult struct {
	// Records is the number of records written.
	Records int64
	// Unread counts the values that could not be decrypted or decoded;
	// their records say why.
	Unread Unread
}

// dumpBatch is a run of consecutive records, decoded by one worker and
// written in order.
type dumpBatch struct {
	items []dumpItem
	// out holds the encoded records back to back; items[i].end is where
	// record i ends.
	out  []byte
	done chan struct{}
	err  error
}

type dumpItem struct {
	kv      store.KeyValue
	deleted bool
	r       resource.Resource
	ns      string
	name    string
	parsed  bool
	end     int
	unread  unreadKind
}

type unreadKind uint8

const (
	readOK unreadKind = iota
	unreadEncrypted
	// unreadNotHeld and unreadWrongKey are encrypted values the config
	// given does not hold the key of, or holds a key of that name for
	// that does not decrypt them.
	unreadNotHeld
	unreadWrongKey
	unreadUndecodable
)

const (
	// dumpBatchRecords and dumpBatchBytes bound a batch; dumpWindow
	// bounds the batches in flight, so memory stays bounded whatever the
	// size of the source.
	dumpBatchRecords = 64
	dumpBatchBytes   = 1 << 20
	dumpWindow       = 16
)

// Dump writes one record per key under o.Prefix that o.Match selects to w
// (with o.AllRevisions, one per revision held, deletions included): in
// key order, or in revision order with o.AllRevisions. Values are decoded
// on several goroutines and records written in order as they are ready;
// at most a bounded window of records is held in memory. A value that
// cannot be decrypted or decoded is written as a record saying why and
// counted in the result's Unread; the dump goes on. An error reading the
// source (store.ErrCorrupt for a damaged file) stops the dump: the records
// written before it stand and the result counts them.
func Dump(ctx context.Context, src store.Reader, w io.Writer, o DumpOptions) (DumpResult, error) {
	var res DumpResult
	var arch store.Archive
	if o.AllRevisions {
		a, ok := src.(store.Archive)
		if !ok {
			return res, fmt.Errorf("dump every revision: %w", ErrNotArchive)
		}
		arch = a
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	work := make(chan *dumpBatch, dumpWindow)
	order := make(chan *dumpBatch, dumpWindow)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dw := newDumpWorker(ctx, &o)
			for b := range work {
				dw.batch(b)
				close(b.done)
			}
		}()
	}
	// The writer writes batches in the order they were read.
	var werr error
	written := make(chan struct{})
	go func() {
		defer close(written)
		for b := range order {
			<-b.done
			if werr != nil {
				continue
			}
			if b.err != nil {
				werr = b.err
				cancel()
				continue
			}
			start := 0
			for i := range b.items {
				it := &b.items[i]
				if _, err := w.Write(b.out[start:it.end]); err != nil {
					werr = err
					cancel()
					break
				}
				start = it.end
				res.Records++
				switch it.unread {
				case unreadEncrypted:
					res.Unread.AddEncrypted(nil)
				case unreadNotHeld:
					res.Unread.AddEncrypted(encryption.ErrKeyNotFound)
				case unreadWrongKey:
					res.Unread.AddEncrypted(encryption.ErrWrongKey)
				case unreadUndecodable:
					res.Unread.Undecodable++
				}
				if o.Progress != nil {
					o.Progress(res.Records, int64(len(it.kv.Value)), it.kv.ModRevision)
				}
			}
			putDumpBuf(b.out)
			b.out = nil
		}
	}()

	cur := &dumpBatch{}
	size := 0
	dispatch := func() error {
		if len(cur.items) == 0 {
			return nil
		}
		b := cur
		b.done = make(chan struct{})
		cur, size = &dumpBatch{items: make([]dumpItem, 0, dumpBatchRecords)}, 0
		select {
		case order <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
		work <- b // a worker takes it: the window above bounds what waits
		return nil
	}
	add := func(kv *store.KeyValue, deleted bool) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		it := dumpItem{kv: *kv, deleted: deleted}
		ok := true
		if o.Match != nil {
			it.r, it.ns, it.name, it.parsed, ok = o.Match(kv.Key)
		}
		if !ok {
			return nil
		}
		cur.items = append(cur.items, it)
		size += len(kv.Value)
		if len(cur.items) >= dumpBatchRecords || size >= dumpBatchBytes {
			return dispatch()
		}
		return nil
	}
	var err error
	if o.AllRevisions {
		err = arch.ScanRevisions(ctx, o.Prefix, func(ev store.Event) error { return add(&ev.KV, ev.Deleted) })
	} else {
		_, err = src.List(ctx, o.Prefix, store.ListOptions{PageSize: o.PageSize, Revision: o.Revision, OnCompacted: o.OnCompacted}, func(kv *store.KeyValue) error {
			return add(kv, false)
		})
	}
	// What was read before an error is written all the same.
	if derr := dispatch(); err == nil {
		err = derr
	}
	close(work)
	close(order)
	<-written
	wg.Wait()
	if werr != nil {
		return res, werr
	}
	return res, err
}

// dumpWorker decodes and encodes the records of batches; each worker has
// its own buffers, reused from one record to the next.
type dumpWorker struct {
	ctx    context.Context
	o      *DumpOptions
	prefix string
	buf    bytes.Buffer
	enc    *json.Encoder
	senc   codec.SortedEncoder
	head   []byte
}

func newDumpWorker(ctx context.Context, o *DumpOptions) *dumpWorker {
	d := &dumpWorker{ctx: ctx, o: o, prefix: o.Codec.Prefix}
	if d.prefix == "" {
		d.prefix = kubevalue.DefaultPrefix
	}
	d.enc = json.NewEncoder(&d.buf)
	// <, > and & as they are.
	d.enc.SetEscapeHTML(false)
	return d
}

// dumpBufs recycles the output buffers of batches written.
var dumpBufs sync.Pool

func getDumpBuf() []byte {
	if p, ok := dumpBufs.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, 256<<10)
}

func putDumpBuf(b []byte) {
	if cap(b) == 0 || cap(b) > 4*dumpBatchBytes {
		return // a batch of unusually large values: let it go
	}
	dumpBufs.Put(&b)
}

func (d *dumpWorker) batch(b *dumpBatch) {
	out := getDumpBuf()
	for i := range b.items {
		it := &b.items[i]
		var err error
		out, err = d.record(out, it)
		if err != nil {
			b.err = err
			return
		}
		it.end = len(out)
	}
	b.out = out
}

// record appends the record of it to out.
func (d *dumpWorker) record(out []byte, it *dumpItem) ([]byte, error) {
	kv := &it.kv
	rec := DumpRecord{Key: kv.Key, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision, Version: kv.Version, Lease: kv.Lease, Deleted: it.deleted}
	if it.parsed {
		rec.Resource, rec.Namespace, rec.Name = it.r.String(), it.ns, it.name
	}
	if !it.deleted {
		it.unread = d.decode(kv, &rec)
	}
	if d.o.YAML {
		b, err := codec.YAML(rec)
		if err != nil {
			return out, fmt.Errorf("dump %s: %w", kv.Key, err)
		}
		out = append(out, "---\n"...)
		return append(out, b...), nil
	}
	// The record without its object, then the object spliced in as its
	// last member: the bytes encoding the whole record gives, without a
	// second pass over the object.
	obj := rec.Object
	rec.Object = nil
	b, ok := appendRecordHead(d.head[:0], &rec)
	d.head = b
	if !ok {
		d.buf.Reset()
		if err := d.enc.Encode(rec); err != nil {
			return out, fmt.Errorf("dump %s: %w", kv.Key, err)
		}
		b = d.buf.Bytes()
	}
	if len(obj) == 0 {
		return append(out, b...), nil
	}
	out = append(out, b[:len(b)-2]...) // without "}\n"
	out = append(out, `,"object":`...)
	out = append(out, obj...)
	return append(out, "}\n"...), nil
}

// appendRecordHead appends rec without its object as d.enc encodes it
// (members in DumpRecord's order, empty ones omitted, a newline after).
// ok is false for a string encoding/json would write with \ufffd (not
// valid UTF-8), left to the encoder.
func appendRecordHead(b []byte, rec *DumpRecord) (_ []byte, ok bool) {
	str := func(name, v string, omitEmpty bool) {
		if !ok || omitEmpty && v == "" {
			return
		}
		b = append(b, name...)
		if b = codec.AppendJSONString(b, v); b == nil {
			ok = false
		}
	}
	ok = true
	b = append(b, '{')
	str(`"key":`, rec.Key, false)
	if !ok {
		return nil, false
	}
	b = append(b, `,"modRevision":`...)
	b = strconv.AppendInt(b, rec.ModRevision, 10)
	b = append(b, `,"createRevision":`...)
	b = strconv.AppendInt(b, rec.CreateRevision, 10)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, rec.Version, 10)
	b = append(b, `,"lease":`...)
	b = strconv.AppendInt(b, rec.Lease, 10)
	if rec.Deleted {
		b = append(b, `,"deleted":true`...)
	}
	str(`,"resource":`, rec.Resource, true)
	str(`,"namespace":`, rec.Namespace, true)
	str(`,"name":`, rec.Name, true)
	str(`,"encrypted":`, rec.Encrypted, true)
	str(`,"error":`, rec.Error, true)
	if !ok {
		return nil, false
	}
	return append(b, "}\n"...), true
}

// decode fills rec's object, or says in rec why it cannot.
func (d *dumpWorker) decode(kv *store.KeyValue, rec *DumpRecord) unreadKind {
	if codec.Detect(kv.Value) == codec.FormatEncrypted {
		if env, ok := codec.ParseEncryptionHeader(kv.Value); ok {
			rec.Encrypted = env.String()
		}
	}
	if obj, ok := d.fast(kv); ok {
		rec.Object = obj
		return readOK
	}
	// Everything else, errors included, as every other command reads.
	cur, err := d.o.Codec.Open(d.ctx, *kv)
	if err != nil {
		rec.Error = err.Error()
		switch {
		case errors.Is(err, encryption.ErrWrongKey):
			return unreadWrongKey
		case errors.Is(err, encryption.ErrKeyNotFound):
			return unreadNotHeld
		case errors.Is(err, codec.ErrEncrypted) || errors.Is(err, encryption.ErrNoConfig):
			return unreadEncrypted
		}
		return unreadUndecodable
	}
	content := cur.Obj.Content
	if !d.o.ShowSecrets {
		content = codec.RedactSecret(content)
	}
	d.buf.Reset()
	if err := d.enc.Encode(content); err != nil {
		rec.Error = fmt.Sprintf("encode %s: %v", kv.Key, err)
		return unreadUndecodable
	}
	rec.Object = bytes.Clone(bytes.TrimSuffix(d.buf.Bytes(), []byte("\n")))
	return readOK
}

// fast returns the object JSON of kv the short way, for the common case:
// a value in the clear (or one the encryption config decrypts) holding a
// protobuf kind of the scheme. The object is decoded into its Go type
// (a Secret's values redacted there, codec.RedactTypedSecret) and written
// once with its members sorted by codec.SortedEncoder: the bytes
// codec.Decode's Content encoded from a map gives. obj is the worker's
// buffer, valid until its next call. ok is false for everything else,
// which takes the long way (kubevalue.Codec.Open), errors included, and for
// an object the encoder declines (a string that is not valid UTF-8, a
// type it has no plan for): the long way writes the same bytes, slower.
func (d *dumpWorker) fast(kv *store.KeyValue) (obj []byte, ok bool) {
	defer func() {
		// A value that panics a decoder here gets the long way's
		// handling, whatever that is.
		if r := recover(); r != nil {
			obj, ok = nil, false
		}
	}()
	plain := kv.Value
	gr, _, _, known := resource.ParseKey(d.prefix, kv.Key)
	var grs schema.GroupResource
	if known {
		grs = gr.GroupResource()
	}
	enc := d.o.Codec.Enc
	if codec.Detect(plain) == codec.FormatEncrypted {
		if enc == nil || !known {
			return nil, false
		}
	}
	if enc != nil {
		p, _, err := enc.DecryptStale(d.ctx, grs, kv.Key, plain)
		if err != nil {
			return nil, false
		}
		plain = p
	}
	if len(plain) == 0 || codec.Detect(plain) != codec.FormatProtobuf {
		return nil, false
	}
	u, err := codec.ParseUnknown(plain)
	if err != nil {
		return nil, false
	}
	gv, err := schema.ParseGroupVersion(u.APIVersion)
	if err != nil {
		return nil, false
	}
	gvk := gv.WithKind(u.Kind)
	if !codec.Known(gvk) {
		return nil, false
	}
	secret := !d.o.ShowSecrets && gvk.Kind == "Secret" && gvk.Group == ""
	// What codec.Decode does for a protobuf value (the apiserver's
	// protobuf serializer), from the envelope parsed above instead of a
	// second parse of it (which would copy the object's bytes): a new
	// object of the kind, unmarshalled from the envelope's raw bytes, with
	// codec.Decode's checks. TestDumpShortWayCorpus holds the two to the
	// same output.
	typed, err := codec.Scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	um, isProto := typed.(interface {
		Reset()
		Unmarshal([]byte) error
	})
	if !isProto {
		return nil, false
	}
	if err := um.Unmarshal(u.Raw); err != nil {
		return nil, false
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	// As codec.Decode requires: an object with an ObjectMeta.
	acc, isObj := typed.(metav1.Object)
	if !isObj {
		return nil, false
	}
	m, hasMeta := any(acc).(interface{ GetObjectMeta() metav1.Object })
	if !hasMeta {
		return nil, false
	}
	if _, isMeta := m.GetObjectMeta().(*metav1.ObjectMeta); !isMeta {
		return nil, false
	}
	var v any = typed
	if secret {
		s, isSecret := typed.(*corev1.Secret)
		if !isSecret {
			return nil, false
		}
		r, redacted := codec.RedactTypedSecret(s)
		if !redacted {
			return nil, false
		}
		v = r
	}
	d.senc.Reset()
	if !d.senc.Encode(v) {
		return nil, false
	}
	return d.senc.Bytes(), true
}
