package flows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
)

// compactingWriter compacts etcd at its newest revision (after a write of
// its own, so that the compaction passes the revision being read) on
// every write to it, or on the first only: the read that feeds it meets a
// compaction at a set point, not by timing.
type compactingWriter struct {
	t           *testing.T
	cli         *clientv3.Client
	out         bytes.Buffer
	once        bool
	compactions int
}

func (w *compactingWriter) Write(p []byte) (int, error) {
	if !w.once || w.compactions == 0 {
		ctx := context.Background()
		resp, err := w.cli.Put(ctx, "/compact-point", "x")
		if err == nil {
			_, err = w.cli.Compact(ctx, resp.Header.Revision)
		}
		if err != nil {
			w.t.Errorf("compact: %v", err)
		}
		w.compactions++
	}
	return w.out.Write(p)
}

// TestReadsAcrossCompaction: dump and ls of the latest revision continue
// across compactions, write every object once and warn of the revisions
// they span; at a set revision (--rev) they stop at the compaction,
// incomplete (ErrIncomplete), after the objects written, with the hint of
// where else to read.
// compactionState starts an etcd holding n ConfigMaps in namespace demo
// (labelled version=label when label is set) and opens a session on it.
func compactionState(t *testing.T, label string) (*etcdtest.Cluster, *clientv3.Client, *Session) {
	c := etcdtest.Start(t, etcdtest.Options{})
	putConfigMaps(t, c.Client(t), label)
	s, err := Open(context.Background(), session.Options{Endpoints: c.Endpoints(), Prefix: "/registry"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return c, c.Client(t), s
}

// n is how many ConfigMaps compactionState writes.
const n = 600

// putConfigMaps writes the n ConfigMaps, labelled version=label when
// label is set.
func putConfigMaps(t *testing.T, cli *clientv3.Client, label string) {
	ctx := context.Background()
	obj, err := codec.Decode(corpus(t, "configmaps__demo__web-config"))
	if err != nil {
		t.Fatal(err)
	}
	if label != "" {
		obj.Meta.Labels = map[string]string{"version": label}
	}
	var ops []clientv3.Op
	for i := range n {
		name := fmt.Sprintf("cm-%04d", i)
		obj.Meta.Name = name
		v, err := codec.EncodeTyped(obj.Typed, codec.FormatProtobuf)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, clientv3.OpPut("/registry/configmaps/demo/"+name, string(v)))
		if len(ops) == 100 {
			if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}
}

func TestReadsAcrossCompaction(t *testing.T) {
	_, cli, s := compactionState(t, "")
	ctx := context.Background()
	head := func() int64 {
		resp, err := cli.Get(ctx, "/x")
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	type read func(w *compactingWriter, rev int64, warn func(string)) error
	dump := func(w *compactingWriter, rev int64, warn func(string)) error {
		return s.Dump(ctx, w, DumpRequest{Resource: "configmaps", AllNamespaces: true, PageSize: 10, Rev: rev, Warn: warn})
	}
	ls := func(w *compactingWriter, rev int64, warn func(string)) error {
		tm := &terminal{}
		err := s.List(ctx, tm, w, ListRequest{Resource: "configmaps", AllNamespaces: true, Output: "json", PageSize: 10, Rev: rev})
		if tm.warnings != "" {
			warn(strings.TrimSuffix(tm.warnings, "\n"))
		}
		return err
	}
	for _, tc := range []struct {
		name   string
		read   read
		record string // how each object's output starts
		end    string // how the output ends
	}{
		{"dump", dump, `{"key":"/registry/configmaps/demo/cm-`, ""},
		{"ls", ls, `{"apiVersion":"v1","kind":"ConfigMap"`, "\n]"},
	} {
		t.Run(tc.name+"/latest", func(t *testing.T) {
			w := &compactingWriter{t: t, cli: cli}
			var warnings []string
			if err := tc.read(w, 0, func(m string) { warnings = append(warnings, m) }); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if got := strings.Count(w.out.String(), fmt.Sprintf("demo/cm-%04d\"", i)); tc.name == "dump" && got != 1 {
					t.Errorf("cm-%04d written %d times", i, got)
				}
			}
			if got := strings.Count(w.out.String(), tc.record); got != n {
				t.Errorf("%d objects written, want %d", got, n)
			}
			if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "the read spans revisions ") {
				t.Errorf("warnings %q, want one of the revisions spanned (%d compactions)", warnings, w.compactions)
			}
			if tc.name == "ls" && !json.Valid(w.out.Bytes()) {
				t.Errorf("the List is not valid JSON:\n...%s", w.out.String()[max(0, w.out.Len()-200):])
			}
			if tc.name == "ls" && !strings.Contains(w.out.String(), `"readFromRevision": `) {
				t.Errorf("the List does not carry the revisions read:\n...%s", w.out.String()[max(0, w.out.Len()-200):])
			}
		})
		t.Run(tc.name+"/rev", func(t *testing.T) {
			w := &compactingWriter{t: t, cli: cli, once: true}
			rev := head()
			err := tc.read(w, rev, func(m string) { t.Errorf("warned %q", m) })
			var ce *store.CompactedError
			if !errors.Is(err, ErrIncomplete) || !errors.As(err, &ce) || ce.Revision != rev || Hint(err) != compactedHint {
				t.Fatalf("error %v (hint %q), want an incomplete read of revision %d with the compaction hint", err, Hint(err), rev)
			}
			got := strings.Count(w.out.String(), tc.record)
			if got == 0 || got >= n || !strings.Contains(err.Error(), fmt.Sprintf("stopped after %d ", got)) {
				t.Errorf("%d objects written before %v", got, err)
			}
			if !strings.HasSuffix(strings.TrimSpace(w.out.String()), tc.end+strings.Repeat("\n}", len(tc.end)/2)) {
				t.Errorf("output does not end as it should:\n...%s", w.out.String()[max(0, w.out.Len()-200):])
			}
		})
	}
}

// TestDiffAcrossCompaction: a live side of diff continues across
// compactions, compares every object once and says which revisions it
// spans; a rev:N side stops at the compaction, incomplete.
func TestDiffAcrossCompaction(t *testing.T) {
	c, cli, _ := compactionState(t, "1")
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "before.db")
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	putConfigMaps(t, cli, "2") // every object differs
	open := func(file string) (*Session, error) {
		if file == "" {
			return Open(ctx, session.Options{Endpoints: c.Endpoints(), Prefix: "/registry"})
		}
		return Open(ctx, session.Options{DB: file, Prefix: "/registry"})
	}

	t.Run("live", func(t *testing.T) {
		w := &compactingWriter{t: t, cli: cli}
		var warnings []string
		err := Diff(ctx, w, open, DiffRequest{A: db, B: "live", Resource: "configmaps", AllNamespaces: true, Output: "diff", PageSize: 10,
			Warn: func(m string) { warnings = append(warnings, m) }})
		if !errors.Is(err, inspect.ErrDiffer) {
			t.Fatalf("error %v, want the states to differ", err)
		}
		if got := len(regexp.MustCompile(`(?m)^MODIFIED `).FindAllString(w.out.String(), -1)); got != n {
			t.Errorf("%d objects MODIFIED, want %d", got, n)
		}
		if !strings.Contains(w.out.String(), "(etcd was compacted during the read)") {
			t.Errorf("summary does not say the live side spans revisions:\n...%s", w.out.String()[max(0, w.out.Len()-300):])
		}
		if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "B (live) spans revisions ") || w.compactions < 2 {
			t.Errorf("warnings %q after %d compactions", warnings, w.compactions)
		}
	})
	t.Run("rev", func(t *testing.T) {
		w := &compactingWriter{t: t, cli: cli, once: true}
		head, err := cli.Get(ctx, "/x")
		if err != nil {
			t.Fatal(err)
		}
		rev := head.Header.Revision
		putConfigMaps(t, cli, "3") // live differs from rev
		err = Diff(ctx, w, open, DiffRequest{A: "rev:" + strconv.FormatInt(rev, 10), B: "live", Resource: "configmaps", AllNamespaces: true, Output: "diff", PageSize: 10,
			Warn: func(m string) { t.Errorf("warned %q", m) }})
		var ce *store.CompactedError
		if !errors.Is(err, ErrIncomplete) || !errors.As(err, &ce) || ce.Revision != rev || Hint(err) != compactedHint {
			t.Fatalf("error %v (hint %q), want an incomplete diff of revision %d with the compaction hint", err, Hint(err), rev)
		}
		if !strings.HasPrefix(err.Error(), "diff stopped after ") {
			t.Errorf("error %v", err)
		}
	})
}
