package inspect

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// scopeMatch keeps the keys of resource r (nil: any) in namespace ns ("":
// any), as `ls RESOURCE -n NS` selects them.
func scopeMatch(r *resource.Resource, ns string) func(string) (resource.Resource, string, string, bool) {
	return func(key string) (resource.Resource, string, string, bool) {
		res, kns, name, ok := resource.ParseKey("/registry", key)
		if !ok || (r != nil && res.Path != r.Path) || (ns != "" && kns != ns) {
			return res, kns, name, false
		}
		return res, kns, name, true
	}
}

// TestList lists a real etcd, then its member's db file: scopes, the
// --terminating filter, claims decoded whole, values that cannot be read
// (listed and counted, never dropped) and deleted keys (db file only).
func TestList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	put := func(key string, value []byte) {
		t.Helper()
		if _, err := cli.Put(ctx, key, string(value)); err != nil {
			t.Fatal(err)
		}
	}
	put("/registry/persistentvolumeclaims/demo/www-web-0", corpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin"))
	put("/registry/persistentvolumeclaims/demo/www-web-1", corpus(t, "plain/persistentvolumeclaims__demo__www-web-1__bound.bin"))
	put("/registry/persistentvolumeclaims/demo/sealed", corpus(t, "encrypted/persistentvolumeclaims__demo__www-web-1__bound__secretbox.bin"))
	put("/registry/persistentvolumeclaims/demo/broken", []byte("k8s\x00\x0a\x02garbage"))
	put("/registry/persistentvolumeclaims/other/www-web-1", corpus(t, "plain/persistentvolumeclaims__demo__www-web-1__bound.bin"))
	put("/registry/pods/demo/web-0", corpus(t, "plain/pods__demo__web-0.bin"))
	put("/registry/configmaps/demo/gone", corpus(t, "plain/configmaps__demo__web-config.bin"))
	put("/registry/masterleases/10.0.0.1", []byte("k8s\x00garbage"))
	del, err := cli.Delete(ctx, "/registry/configmaps/demo/gone")
	if err != nil {
		t.Fatal(err)
	}
	live, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	pvcs, err := resource.Lookup("pvc")
	if err != nil {
		t.Fatal(err)
	}
	enc := loadEncryption(t, filepath.Join(corpusDir, "encryption", "encryption-config.yaml"))

	type want struct {
		names  []string // namespace/name, in key order
		claims int      // items with the claim decoded
		unread Unread
		err    error
	}
	cases := []struct {
		name string
		enc  Decrypter
		o    ListingOptions
		want want
	}{
		{"every key", nil, ListingOptions{StorePrefix: "/registry", KeyPrefix: "/registry/"},
			want{names: []string{"demo/broken", "demo/sealed", "demo/www-web-0", "demo/www-web-1", "other/www-web-1", "demo/web-0"},
				unread: Unread{Encrypted: 1, Undecodable: 1}}},
		{"claims in demo, decoded", nil, ListingOptions{StorePrefix: "/registry", KeyPrefix: "/registry/persistentvolumeclaims/demo/",
			Match: scopeMatch(&pvcs, "demo"), Kind: ListClaims, Objects: true},
			want{names: []string{"demo/broken", "demo/sealed", "demo/www-web-0", "demo/www-web-1"}, claims: 2,
				unread: Unread{Encrypted: 1, Undecodable: 1}}},
		{"claims with the encryption config", enc, ListingOptions{StorePrefix: "/registry", KeyPrefix: "/registry/persistentvolumeclaims/demo/",
			Match: scopeMatch(&pvcs, "demo"), Kind: ListClaims, Objects: true},
			want{names: []string{"demo/broken", "demo/sealed", "demo/www-web-0", "demo/www-web-1"}, claims: 3,
				unread: Unread{Undecodable: 1}}},
		{"claims without their objects", enc, ListingOptions{StorePrefix: "/registry", KeyPrefix: "/registry/persistentvolumeclaims/",
			Kind: ListClaims},
			want{names: []string{"demo/broken", "demo/sealed", "demo/www-web-0", "demo/www-web-1", "other/www-web-1"},
				unread: Unread{Undecodable: 1}}},
		{"terminating: unread values stay listed", nil, ListingOptions{StorePrefix: "/registry", KeyPrefix: "/registry/", Terminating: true},
			want{names: []string{"demo/broken", "demo/sealed", "demo/www-web-0"}, unread: Unread{Encrypted: 1, Undecodable: 1}}},
		{"namespace filter without a resource", nil, ListingOptions{StorePrefix: "/registry", KeyPrefix: "/registry/", Match: scopeMatch(nil, "other")},
			want{names: []string{"other/www-web-1"}}},
		{"deleted keys need an archive", nil, ListingOptions{StorePrefix: "/registry", KeyPrefix: "/registry/", Deleted: true},
			want{err: ErrNeedsArchive}},
	}
	run := func(t *testing.T, r store.Reader, enc Decrypter, o ListingOptions, w want) []Listed {
		t.Helper()
		var got []Listed
		sum, err := List(ctx, r, enc, o, func(l Listed) error {
			got = append(got, l)
			return nil
		})
		if !errors.Is(err, w.err) {
			t.Fatalf("err = %v, want %v", err, w.err)
		}
		var names []string
		claims := 0
		for _, l := range got {
			names = append(names, l.Namespace+"/"+l.Name)
			if l.Claim != nil {
				claims++
			}
		}
		if !slices.Equal(names, w.names) {
			t.Errorf("listed %q, want %q", names, w.names)
		}
		if claims != w.claims {
			t.Errorf("%d claims decoded, want %d", claims, w.claims)
		}
		if sum.Listed != len(got) || sum.Unread != w.unread {
			t.Errorf("summary %+v, want %d listed and unread %+v", *sum, len(got), w.unread)
		}
		return got
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { run(t, live, tc.enc, tc.o, tc.want) })
	}

	t.Run("empty listings", func(t *testing.T) {
		for _, tc := range []struct {
			r        *resource.Resource
			ns, what string
			want     string
		}{
			{nil, "", "objects", "no objects found"},
			{nil, "nowhere", "terminating objects", "no terminating objects found in namespace nowhere (-A lists every namespace)"},
			{&pvcs, "nowhere", "objects", "no persistentvolumeclaims found in namespace nowhere; other namespaces hold 5 (use -A)"},
			{&pvcs, "nowhere", "deleted objects", "no deleted persistentvolumeclaims found in namespace nowhere (-A lists every namespace)"},
		} {
			if got := EmptyListing(ctx, live, "/registry", tc.r, tc.ns, tc.what, 0); got != tc.want {
				t.Errorf("EmptyListing(%v, %q, %q) = %q, want %q", tc.r, tc.ns, tc.what, got, tc.want)
			}
		}
		cms, err := resource.Lookup("configmaps")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := EmptyListing(ctx, live, "/registry", &cms, "demo", "objects", 0), "no configmaps found in any namespace"; got != want {
			t.Errorf("EmptyListing = %q, want %q", got, want)
		}
	})

	memberDB := filepath.Join(c.DataDir(0), "member", "snap", "db")
	live.Close()
	c.Stop()
	b, err := store.OpenBolt(memberDB, store.BoltOptions{SkipHashCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t.Run("deleted keys of a db file", func(t *testing.T) {
		got := run(t, b, nil, ListingOptions{StorePrefix: "/registry", KeyPrefix: "/registry/", Deleted: true}, want{names: []string{"demo/gone"}})
		if len(got) == 1 && (got[0].DeleteRevision != del.Header.Revision || got[0].Status(time.Now(), "-") != "Deleted@"+strconv.FormatInt(del.Header.Revision, 10)) {
			t.Errorf("deleted item: revision %d, status %q; want the deletion's revision %d", got[0].DeleteRevision, got[0].Status(time.Now(), "-"), del.Header.Revision)
		}
	})
	t.Run("a db file lists as live etcd does", func(t *testing.T) {
		run(t, b, enc, cases[2].o, cases[2].want)
	})
}

// TestListItemColumns renders the generic columns and the List document
// of items read, unread and deleted.
func TestListItemColumns(t *testing.T) {
	now := time.Date(2024, 1, 11, 0, 0, 0, 0, time.UTC)
	pvcs, err := resource.Lookup("pvc")
	if err != nil {
		t.Fatal(err)
	}
	read := func(path string) ListItem {
		kv := &store.KeyValue{Key: "/registry/persistentvolumeclaims/demo/x", ModRevision: 7, CreateRevision: 5, Version: 2, Value: corpus(t, path)}
		it, _ := Read(context.Background(), nil, pvcs, "demo", "x", kv, 0)
		return it
	}
	terminating := read("plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	bound := read("plain/persistentvolumeclaims__demo__www-web-1__bound.bin")
	sealed := read("encrypted/persistentvolumeclaims__demo__www-web-1__bound__secretbox.bin")
	deleted := bound
	deleted.DeleteRevision = 9
	recreated := deleted
	recreated.RecreateRevision = 11
	recreatedUnplaced := deleted
	recreatedUnplaced.DeleteRevision, recreatedUnplaced.RecreateRevision = -1, -1
	for _, tc := range []struct {
		name                   string
		it                     ListItem
		status, kind, uid, fin string
	}{
		{"terminating", terminating, "Terminating ", "PersistentVolumeClaim", terminating.Summary.UID, strings.Join(terminating.Summary.Finalizers, ",")},
		{"bound", bound, "Bound", "PersistentVolumeClaim", bound.Summary.UID, strings.Join(bound.Summary.Finalizers, ",")},
		{"encrypted, unread", sealed, "Encrypted (secretbox/key1): no key", "PersistentVolumeClaim", "-", "-"},
		{"deleted", deleted, "Deleted@9", "PersistentVolumeClaim", bound.Summary.UID, strings.Join(bound.Summary.Finalizers, ",")},
		{"deleted and re-created", recreated, "Deleted@9 (uid " + bound.Summary.UID + "), re-created@11", "PersistentVolumeClaim", bound.Summary.UID, strings.Join(bound.Summary.Finalizers, ",")},
		{"re-created, revisions not established", recreatedUnplaced, "Deleted@? (uid " + bound.Summary.UID + "), re-created@?", "PersistentVolumeClaim", bound.Summary.UID, strings.Join(bound.Summary.Finalizers, ",")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.it.Status(now, "Bound"); !strings.HasPrefix(got, tc.status) || (tc.status != "Terminating " && got != tc.status) {
				t.Errorf("Status = %q, want %q", got, tc.status)
			}
			if got := tc.it.Kind(); got != tc.kind {
				t.Errorf("Kind = %q, want %q", got, tc.kind)
			}
			if got := tc.it.UID(); got != tc.uid {
				t.Errorf("UID = %q, want %q", got, tc.uid)
			}
			if tc.fin == "" {
				tc.fin = "-"
			}
			if got := tc.it.Finalizers(); got != tc.fin {
				t.Errorf("Finalizers = %q, want %q", got, tc.fin)
			}
			o := tc.it.Object()
			if o.Etcd.Key != tc.it.Key || o.Etcd.ModRevision != 7 || o.Metadata.ResourceVersion != "7" || o.Etcd.DeleteRevision != tc.it.DeleteRevision || o.Etcd.RecreateRevision != tc.it.RecreateRevision || o.Etcd.Unread != tc.it.Unread {
				t.Errorf("Object().Etcd = %+v, metadata %+v", o.Etcd, o.Metadata)
			}
			if o.APIVersion != "v1" || o.Kind != "PersistentVolumeClaim" {
				t.Errorf("Object() is %s %s, want v1 PersistentVolumeClaim", o.APIVersion, o.Kind)
			}
			if tc.it.Summary != nil && (o.Metadata.UID != tc.it.Summary.UID || o.Metadata.CreationTimestamp == nil) {
				t.Errorf("Object().Metadata = %+v", o.Metadata)
			}
		})
	}
	if got := (Listed{}).ClaimColumns(nil); got.Phase != "-" || got.Volume != "-" {
		t.Errorf("columns of an unread claim = %+v, want dashes", got)
	}
	if got := (Listed{}).VolumeColumns(); got.Status != "-" || got.Claim != "-" {
		t.Errorf("columns of an unread volume = %+v, want dashes", got)
	}
	var none codec.Summary
	if (ListItem{Summary: &none}).Age(now) != "-" {
		t.Error("Age of an object without creationTimestamp is not -")
	}
}
