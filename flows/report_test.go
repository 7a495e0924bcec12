package flows

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
)

// reportState writes a namespace, a config map (written twice), one that
// cannot be decoded and one deleted into a real etcd, and returns its db
// file once stopped, with the revision of the config map's first write
// and the latest.
func reportState(t *testing.T) (db string, first, latest int64) {
	t.Helper()
	c := etcdtest.Start(t, etcdtest.Options{})
	ctx := context.Background()
	cli := c.Client(t)
	cm := corpus(t, "configmaps__demo__web-config")
	c.Put(t, "/registry/namespaces/demo", corpus(t, "namespaces__-__demo"))
	resp, err := cli.Put(ctx, "/registry/configmaps/demo/web-config", string(cm))
	if err != nil {
		t.Fatal(err)
	}
	first = resp.Header.Revision
	c.Put(t, "/registry/configmaps/demo/broken", []byte("k8s\x00not protobuf"))
	c.Put(t, "/registry/configmaps/demo/gone", cm)
	if _, err := cli.Delete(ctx, "/registry/configmaps/demo/gone"); err != nil {
		t.Fatal(err)
	}
	if resp, err = cli.Put(ctx, "/registry/configmaps/demo/web-config", string(cm)); err != nil {
		t.Fatal(err)
	}
	latest = resp.Header.Revision
	c.Stop()
	return filepath.Join(c.DataDir(0), "member", "snap", "db"), first, latest
}

// TestReports: ls, stats and history over a db file: what each writes, and
// what it says about what it could not read or find.
func TestReports(t *testing.T) {
	db, first, _ := reportState(t)
	ctx := context.Background()
	s, err := Open(ctx, session.Options{DB: db, Prefix: "/registry"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		r          ListRequest
		rows       []string // names the output holds
		incomplete bool
		note       string // told when nothing is listed
		option     string
	}{
		{name: "config maps", r: ListRequest{Resource: "cm", Namespace: "demo", Output: "table", PageSize: 10, Now: now},
			rows: []string{"web-config", "broken"}, incomplete: true},
		{name: "deleted", r: ListRequest{Resource: "cm", Namespace: "demo", Deleted: true, Output: "table", PageSize: 10, Now: now},
			// The broken config map's value carries no time: the clock
			// says its intervals are wider.
			rows: []string{"gone"}, note: "could not be read for their times"},
		{name: "as of a revision", r: ListRequest{Resource: "configmaps", AllNamespaces: true, Output: "json", PageSize: 10, Rev: first, Now: now},
			rows: []string{`"web-config"`}},
		{name: "none", r: ListRequest{Resource: "secrets", Namespace: "demo", Output: "table", PageSize: 10, Now: now},
			note: "secrets"},
		{name: "unknown resource", r: ListRequest{Resource: "nosuchthings", Output: "table", PageSize: 10, Now: now}, option: "nosuchthings"},
	} {
		t.Run("ls "+tc.name, func(t *testing.T) {
			var out bytes.Buffer
			term := &terminal{}
			err := s.List(ctx, term, &out, tc.r)
			if tc.option != "" {
				var oe *session.OptionError
				if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.option) {
					t.Fatalf("error %v, want an *OptionError naming %q", err, tc.option)
				}
				return
			}
			if errors.Is(err, ErrIncomplete) != tc.incomplete || (err != nil && !tc.incomplete) {
				t.Fatalf("error %v, want incomplete %v", err, tc.incomplete)
			}
			for _, name := range tc.rows {
				if !strings.Contains(out.String(), name) {
					t.Errorf("output lacks %s:\n%s", name, out.String())
				}
			}
			if tc.note == "" && term.notes != "" || !strings.Contains(term.notes, tc.note) {
				t.Errorf("notes %q, want one naming %q", term.notes, tc.note)
			}
		})
	}

	t.Run("stats", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressLog{}
		// The undecodable config map is counted, its version unknown:
		// incomplete.
		if err := s.Stats(ctx, &out, StatsRequest{JSON: true, Top: 5, PageSize: 10}, p, nil); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "1 value was not read: undecodable") {
			t.Fatalf("error %v, want incomplete: one value not read", err)
		}
		if !strings.Contains(out.String(), `"configmaps"`) || !strings.Contains(out.String(), db) || !strings.Contains(out.String(), `"reason": "Undecodable: `) {
			t.Errorf("stats lacks the config maps or the source:\n%s", out.String())
		}
		if !p.started || !p.done || p.total == 0 {
			t.Errorf("progress %+v, want started with the file's revisions, and done", p)
		}
	})

	for _, tc := range []struct {
		name       string
		key        string
		revisions  []int64
		err        error
		incomplete bool
	}{
		{name: "written twice", key: "web-config", revisions: []int64{first}},
		{name: "undecodable", key: "broken", incomplete: true},
		{name: "never written", key: "never", err: store.ErrNotFound},
	} {
		t.Run("history "+tc.name, func(t *testing.T) {
			ref, err := s.Resolver.ParseArgs("/registry", []string{"cm", tc.key}, "demo", "")
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = s.History(ctx, &out, ref, "json", false, time.Now())
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			case tc.incomplete:
				if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "configmap broken in namespace demo") {
					t.Fatalf("error %v, want incomplete naming the object", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			for _, rev := range tc.revisions {
				if !strings.Contains(out.String(), strconv.FormatInt(rev, 10)) {
					t.Errorf("history lacks revision %d:\n%s", rev, out.String())
				}
			}
		})
	}
}

// TestDiffSessions: the states diff compares, opened once each, and its
// verdict.
func TestDiffSessions(t *testing.T) {
	db, first, latest := reportState(t)
	ctx := context.Background()
	var opened []string
	open := func(file string) (*Session, error) {
		opened = append(opened, file)
		return Open(ctx, session.Options{DB: file, Prefix: "/registry"})
	}
	rev := func(n int64) string { return "rev:" + strconv.FormatInt(n, 10) }
	for _, tc := range []struct {
		name   string
		r      DiffRequest
		err    error
		option string
		hint   string
		opened int
	}{
		{name: "the same revision", r: DiffRequest{A: rev(latest), B: rev(latest), DB: db, Resource: "cm", Namespace: "demo", Output: "table", PageSize: 10}, opened: 1},
		{name: "two revisions", r: DiffRequest{A: rev(first), B: rev(latest), DB: db, Resource: "cm", Namespace: "demo", Output: "json", PageSize: 10},
			err: inspect.ErrDiffer, opened: 1},
		{name: "a file with itself", r: DiffRequest{A: db, B: db, AllNamespaces: true, Output: "table", PageSize: 10}, opened: 1},
		{name: "not a revision", r: DiffRequest{A: "rev:x", B: db, Output: "table", PageSize: 10}, option: "rev:N needs a positive revision number"},
		{name: "a log", r: DiffRequest{A: db, B: db, WAL: []string{"wal"}, Output: "table", PageSize: 10}, option: "diff does not read --wal", hint: "dump --all-revisions"},
		{name: "a missing file", r: DiffRequest{A: db, B: filepath.Join(t.TempDir(), "none.db"), Output: "table", PageSize: 10},
			err: fs.ErrNotExist, opened: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opened = nil
			var out bytes.Buffer
			err := Diff(ctx, &out, open, tc.r)
			switch {
			case tc.option != "":
				var oe *session.OptionError
				if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.option) || !strings.Contains(Hint(err), tc.hint) {
					t.Fatalf("error %v (hint %q), want an *OptionError naming %q, hint %q", err, Hint(err), tc.option, tc.hint)
				}
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			}
			if len(opened) != tc.opened {
				t.Errorf("opened %q, want %d sessions", opened, tc.opened)
			}
		})
	}
}
