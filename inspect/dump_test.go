package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// dumpReference writes the records Dump must write, the way dump wrote
// them before it moved here: each value through Planner.Open, its content
// redacted, the record encoded with the object as a map.
func dumpReference(t *testing.T, src store.Archive, o DumpOptions) ([]byte, Unread) {
	t.Helper()
	type record struct {
		Key            string         `json:"key"`
		ModRevision    int64          `json:"modRevision"`
		CreateRevision int64          `json:"createRevision"`
		Version        int64          `json:"version"`
		Lease          int64          `json:"lease"`
		Deleted        bool           `json:"deleted,omitempty"`
		Resource       string         `json:"resource,omitempty"`
		Namespace      string         `json:"namespace,omitempty"`
		Name           string         `json:"name,omitempty"`
		Encrypted      string         `json:"encrypted,omitempty"`
		Error          string         `json:"error,omitempty"`
		Object         map[string]any `json:"object,omitempty"`
	}
	var out bytes.Buffer
	var unread Unread
	ctx := context.Background()
	one := func(kv *store.KeyValue, deleted bool) error {
		r, ns, name, parsed, ok := o.Match(kv.Key)
		if !ok {
			return nil
		}
		rec := record{Key: kv.Key, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision, Version: kv.Version, Lease: kv.Lease, Deleted: deleted}
		if parsed {
			rec.Resource, rec.Namespace, rec.Name = r.String(), ns, name
		}
		if !deleted {
			if codec.Detect(kv.Value) == codec.FormatEncrypted {
				if env, ok := codec.ParseEncryptionHeader(kv.Value); ok {
					rec.Encrypted = env.String()
				}
			}
			cur, err := o.Codec.Open(ctx, *kv)
			switch {
			case err == nil && o.ShowSecrets:
				rec.Object = cur.Obj.Content
			case err == nil:
				rec.Object = codec.RedactSecret(cur.Obj.Content)
			case errors.Is(err, codec.ErrEncrypted) || errors.Is(err, encryption.ErrKeyNotFound) || errors.Is(err, encryption.ErrNoConfig):
				rec.Error = err.Error()
				unread.Encrypted++
			default:
				rec.Error = err.Error()
				unread.Undecodable++
			}
		}
		if o.YAML {
			b, err := yaml.Marshal(rec)
			if err != nil {
				return err
			}
			out.WriteString("---\n")
			out.Write(b)
			return nil
		}
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		return enc.Encode(rec)
	}
	var err error
	if o.AllRevisions {
		err = src.ScanRevisions(ctx, o.Prefix, func(ev store.Event) error { return one(&ev.KV, ev.Deleted) })
	} else {
		_, err = src.List(ctx, o.Prefix, store.ListOptions{Revision: o.Revision}, func(kv *store.KeyValue) error { return one(kv, false) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), unread
}

// TestDumpCorpus dumps the corpus snapshot (every kind the apiserver
// stores, Secrets, values encrypted at rest, revisions and deletions) in
// every output and checks Dump writes byte for byte what dump wrote
// before, and counts the same unread values.
func TestDumpCorpus(t *testing.T) {
	ctx := context.Background()
	b := openCorpusSnapshot(t, filepath.Join(corpusDir, "etcd-snapshot.db"))
	enc, err := encryption.Load(ctx, filepath.Join(corpusDir, "encryption", "encryption-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	match := func(key string) (resource.Resource, string, string, bool, bool) {
		r, ns, name, parsed := resource.ParseKey(kubevalue.DefaultPrefix, key)
		return r, ns, name, parsed, true
	}
	secrets := func(key string) (resource.Resource, string, string, bool, bool) {
		r, ns, name, parsed := resource.ParseKey(kubevalue.DefaultPrefix, key)
		return r, ns, name, parsed, parsed && r.Path == "secrets"
	}
	for _, withEnc := range []bool{false, true} {
		for _, allRev := range []bool{false, true} {
			for _, yamlOut := range []bool{false, true} {
				for _, show := range []bool{false, true} {
					for _, workers := range []int{1, 3} {
						name := fmt.Sprintf("enc=%v/all-revisions=%v/yaml=%v/show-secrets=%v/workers=%d", withEnc, allRev, yamlOut, show, workers)
						t.Run(name, func(t *testing.T) {
							o := DumpOptions{Prefix: "/registry/", Match: match, AllRevisions: allRev, YAML: yamlOut, ShowSecrets: show, Workers: workers}
							if withEnc {
								o.Codec.Enc = enc
							}
							want, wantUnread := dumpReference(t, b, o)
							var got bytes.Buffer
							var progress int64
							o.Progress = func(n, _, _ int64) { progress = n }
							res, err := Dump(ctx, b, &got, o)
							if err != nil {
								t.Fatal(err)
							}
							if !bytes.Equal(got.Bytes(), want) {
								t.Fatalf("dump differs from the reference:\n%s", firstDiff(got.Bytes(), want))
							}
							if res.Unread != wantUnread {
								t.Errorf("unread = %+v, want %+v", res.Unread, wantUnread)
							}
							if lines := int64(bytes.Count(want, []byte("\n{\"key\""))) + 1; !yamlOut && res.Records != lines {
								t.Errorf("records = %d, want %d", res.Records, lines)
							}
							if progress != res.Records {
								t.Errorf("progress saw %d records, want %d", progress, res.Records)
							}
							if withEnc && wantUnread.Total() != 0 {
								t.Errorf("with the encryption config, unread = %+v", wantUnread)
							}
							if !withEnc && wantUnread.Encrypted == 0 {
								t.Error("the corpus has values encrypted at rest; none counted")
							}
						})
					}
				}
			}
		}
	}
	t.Run("secrets redacted", func(t *testing.T) {
		var got bytes.Buffer
		if _, err := Dump(ctx, b, &got, DumpOptions{Prefix: "/registry/secrets/", Match: secrets, Codec: kubevalue.Codec{Enc: enc}}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(got.Bytes(), []byte(`"<redacted: `)) || bytes.Count(got.Bytes(), []byte("\n")) == 0 {
			t.Fatalf("secrets not redacted:\n%s", got.Bytes())
		}
	})
}

func firstDiff(got, want []byte) string {
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(gl) && i < len(wl); i++ {
		if !bytes.Equal(gl[i], wl[i]) {
			return fmt.Sprintf("line %d\n got %s\nwant %s", i+1, gl[i], wl[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(gl), len(wl))
}

// readerOnly hides a store's Archive methods, as a live etcd has none.
type readerOnly struct{ store.Reader }

func TestDumpAllRevisionsNeedsArchive(t *testing.T) {
	b := openCorpusSnapshot(t, filepath.Join(corpusDir, "etcd-snapshot.db"))
	var out bytes.Buffer
	_, err := Dump(context.Background(), readerOnly{b}, &out, DumpOptions{Prefix: "/registry/", AllRevisions: true})
	if !errors.Is(err, ErrNotArchive) {
		t.Fatalf("err = %v, want ErrNotArchive", err)
	}
	if out.Len() != 0 {
		t.Fatalf("wrote %q", out.Bytes())
	}
	// Without --all-revisions a plain Reader is listed.
	res, err := Dump(context.Background(), readerOnly{b}, &out, DumpOptions{Prefix: "/registry/persistentvolumeclaims/"})
	if err != nil || res.Records == 0 {
		t.Fatalf("dump of a Reader: %+v, %v", res, err)
	}
}

// failWriter fails after n writes.
type failWriter struct{ n int }

var errWrite = errors.New("broken pipe")

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errWrite
	}
	w.n--
	return len(p), nil
}

// TestDumpWriteError stops at the first failed write and returns it.
func TestDumpWriteError(t *testing.T) {
	b := openCorpusSnapshot(t, filepath.Join(corpusDir, "etcd-snapshot.db"))
	res, err := Dump(context.Background(), b, &failWriter{n: 5}, DumpOptions{Prefix: "/registry/", AllRevisions: true})
	if !errors.Is(err, errWrite) {
		t.Fatalf("err = %v, want the write error", err)
	}
	if res.Records != 5 {
		t.Fatalf("records = %d, want 5", res.Records)
	}
}
