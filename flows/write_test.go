package flows

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

// terminal records what a write tells, and answers its question with
// answer (nil: yes).
type terminal struct {
	out, notes, warnings, question, hint string
	asked                                bool
	answer                               error
}

func (t *terminal) Print(s string) { t.out += s }
func (t *terminal) Diff(d string)  { t.out += d + "\n" }
func (t *terminal) Warn(m string)  { t.warnings += m + "\n" }
func (t *terminal) Note(m string)  { t.notes += m + "\n" }
func (t *terminal) Confirm(q, hint string) error {
	t.asked, t.question, t.hint = true, q, hint
	return t.answer
}

func corpus(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "corpus", "plain", name+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWrite: the one write path against a real etcd, in each of its
// outcomes: what it tells, whether it asks, and what the key holds after.
func TestWrite(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	const key = "/registry/configmaps/demo/web-config"
	ctx := context.Background()
	s, err := Open(ctx, session.Options{Endpoints: c.Endpoints(), Prefix: "/registry", Verify: verify.Never})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	notConfirmed := errors.New("not confirmed")
	for _, tc := range []struct {
		name    string
		set     string // the label team= value
		o       WriteOptions
		answer  error
		wantErr error
		asked   bool
		written bool
		want    []string
	}{
		{name: "dry run", set: "a", o: WriteOptions{DryRun: true},
			want: []string{"+    team: a", "dry run: ", "; nothing written"}},
		{name: "not confirmed", set: "a", answer: notConfirmed, wantErr: notConfirmed, asked: true,
			want: []string{"+    team: a"}},
		{name: "confirmed", set: "a", asked: true, written: true,
			want: []string{"+    team: a", "written: " + key + " revision ", "backup: ", "undo with: etcdpvc restore "}},
		{name: "yes", set: "b", o: WriteOptions{Yes: true}, written: true,
			want: []string{"-    team: a", "+    team: b", "written: ", "undo with: etcdpvc restore "}},
		{name: "no change", set: "b", o: WriteOptions{Yes: true},
			want: []string{"nothing to do: ", " is already as asked (", "; nothing written"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "dry run" {
				c.Put(t, key, corpus(t, "configmaps__demo__web-config"))
			}
			before, err := s.Reader.Get(ctx, key, 0)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := s.Planner.MakePlan(ctx, s.Reader, key, surgery.Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"team": tc.set}}, Overwrite: true})
			if err != nil {
				t.Fatal(err)
			}
			term := &terminal{answer: tc.answer}
			tc.o.BackupDir = t.TempDir()
			steps, err := s.Write(ctx, term, []*surgery.Plan{plan}, tc.o)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Write: error %v, want %v", err, tc.wantErr)
			}
			if term.asked != tc.asked {
				t.Errorf("asked %v, want %v", term.asked, tc.asked)
			}
			if tc.asked && (term.question != "Write this change to configmap web-config in namespace demo, etcd "+s.Description+"?" || !strings.Contains(term.hint, "--yes")) {
				t.Errorf("question %q, hint %q", term.question, term.hint)
			}
			for _, w := range tc.want {
				if !strings.Contains(term.out, w) {
					t.Errorf("output lacks %q:\n%s", w, term.out)
				}
			}
			after, err := s.Reader.Get(ctx, key, 0)
			if err != nil {
				t.Fatal(err)
			}
			if written := after.ModRevision != before.ModRevision; written != tc.written {
				t.Errorf("written %v, want %v (steps %v)", written, tc.written, steps)
			}
		})
	}
}

// TestWriteFile: a write into a db file is refused with what to do,
// before anything is asked; into a snapshot copy (--out) it ends with the
// copy's runbook, not an undo.
func TestWriteFile(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	const key = "/registry/configmaps/demo/web-config"
	c.Put(t, key, corpus(t, "configmaps__demo__web-config"))
	c.Stop()
	db := filepath.Join(c.DataDir(0), "member", "snap", "db")
	ctx := context.Background()
	s, err := Open(ctx, session.Options{DB: db, Prefix: "/registry"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan, err := s.Planner.MakePlan(ctx, s.Reader, key, surgery.Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"team": "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{}
	_, err = s.Write(ctx, term, []*surgery.Plan{plan}, WriteOptions{})
	if !errors.Is(err, store.ErrReadOnly) || !strings.Contains(Hint(err), "--out OUT") || term.asked {
		t.Errorf("Write into a db file: error %v, hint %q, asked %v; want read-only with a hint, not asked", err, Hint(err), term.asked)
	}
	if !s.ReadOnly() {
		t.Error("a db file is not ReadOnly")
	}
	var re *RefusedError
	if err := s.NoTarget(key); !errors.As(err, &re) || !strings.Contains(re.Msg, "nothing written") || !strings.Contains(re.Hint(), "-o yaml") {
		t.Errorf("NoTarget = %v", err)
	}
	s.Close()

	out := filepath.Join(t.TempDir(), "out.db")
	cp, err := Open(ctx, session.Options{DB: db, Out: out, Prefix: "/registry"})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if cp.ReadOnly() {
		t.Error("a snapshot copy is ReadOnly")
	}
	if plan, err = cp.Planner.MakePlan(ctx, cp.Reader, key, surgery.Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"team": "a"}}}); err != nil {
		t.Fatal(err)
	}
	term = &terminal{}
	if _, err := cp.Write(ctx, term, []*surgery.Plan{plan}, WriteOptions{Yes: true, Out: out, BackupDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(term.out, "(file "+out+")") || !strings.Contains(term.out, "snapshot: "+out+" (revision ") ||
		!strings.Contains(term.out, "etcdutl snapshot restore "+out) || strings.Contains(term.out, "undo with") {
		t.Errorf("output of a write into a snapshot copy:\n%s", term.out)
	}
}

// TestRecoverSetCheckSource: the sources a recover of a namespace or a
// selection refuses, as usage errors with what to do.
func TestRecoverSetCheckSource(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        session.Options
		rev      int64
		want     string // "" accepted
		wantHint string
	}{
		{name: "db", o: session.Options{DB: "snap.db"}},
		{name: "live at a revision", rev: 12},
		{name: "wal", o: session.Options{WAL: []string{"wal"}, DB: "snap.db"}, want: "does not read --wal"},
		{name: "live now", want: "recover namespace demo: name the source", wantHint: "`etcdpvc history namespace NAME`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := RecoverSet{RecoverSetRequest: surgery.RecoverSetRequest{Namespace: "demo", Rev: tc.rev}}
			err := r.CheckSource(tc.o)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckSource: %v", err)
				}
				return
			}
			var oe *session.OptionError
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(Hint(err), tc.wantHint) {
				t.Errorf("CheckSource: %v (hint %q), want a usage error with %q (hint %q)", err, Hint(err), tc.want, tc.wantHint)
			}
		})
	}
}

// TestRecoverSetWrite: a namespace recovered from the live history at a
// revision before its deletion, planned and written through the library,
// then planned again: what was created exists identical.
func TestRecoverSetWrite(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	ctx := context.Background()
	ns, cm := "/registry/namespaces/demo", "/registry/configmaps/demo/web-config"
	c.Put(t, ns, corpus(t, "namespaces__-__demo"))
	resp, err := c.Client(t).Put(ctx, cm, string(corpus(t, "configmaps__demo__web-config")))
	if err != nil {
		t.Fatal(err)
	}
	rev := resp.Header.Revision
	for _, k := range []string{cm, ns} {
		if _, err := c.Client(t).Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, session.Options{Endpoints: c.Endpoints(), Prefix: "/registry", Verify: verify.Never})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := RecoverSet{RecoverSetRequest: surgery.RecoverSetRequest{Namespace: "demo", Rev: rev}, MaxTxnOps: 8, Write: WriteOptions{Yes: true, BackupDir: t.TempDir()}}
	if err := r.CheckSource(s.Options); err != nil {
		t.Fatal(err)
	}
	term := &terminal{}
	plan, err := PlanRecoverSet(ctx, term, s, s, r)
	if err != nil {
		t.Fatal(err)
	}
	if n := plan.Totals().Create; n != 2 || !strings.Contains(term.notes, "at revision") {
		t.Fatalf("plan creates %d, notes %q; want the namespace and its configmap, and where from", n, term.notes)
	}
	if err := s.WriteRecoverSet(ctx, term, plan, r); err != nil {
		t.Fatalf("WriteRecoverSet: %v\n%s", err, term.out)
	}
	for _, w := range []string{"written: " + ns + " (create)", "written: " + cm + " (create)", "summary: 2 written, ", "undo with: etcdpvc restore --operation "} {
		if !strings.Contains(term.out, w) {
			t.Errorf("output lacks %q:\n%s", w, term.out)
		}
	}
	for _, k := range []string{ns, cm} {
		if _, err := s.Reader.Get(ctx, k, 0); err != nil {
			t.Errorf("%s after the recover: %v", k, err)
		}
	}
	term = &terminal{}
	if plan, err = PlanRecoverSet(ctx, term, s, s, r); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteRecoverSet(ctx, term, plan, r); err != nil || !strings.Contains(term.out, "nothing to do: every object is skipped or exists") {
		t.Errorf("second recover: %v\n%s", err, term.out)
	}

	// A name that does not resolve is a usage error.
	r.Namespace, r.Resource, r.Selector = "", "configmaps", "a=("
	var oe *session.OptionError
	if _, err := PlanRecoverSet(ctx, term, s, s, r); !errors.As(err, &oe) || !strings.HasPrefix(err.Error(), "--selector ") {
		t.Errorf("bad selector: %v, want a usage error naming --selector", err)
	}
}

// TestEncryptDecryptValue: a value read from a file is decrypted and
// encrypted as the apiserver would; a key outside the prefix, or none for
// an encrypted value, is a usage error.
func TestEncryptDecryptValue(t *testing.T) {
	ctx := context.Background()
	cfg := filepath.Join(t.TempDir(), "enc.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - name: k1
        secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
  - identity: {}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	o := session.Options{Prefix: "/registry", EncryptionConfig: cfg}
	const key = "/registry/secrets/demo/web-secret"
	plain := corpus(t, "secrets__demo__web-secret")
	sealed, err := EncryptValue(ctx, o, key, plain)
	if err != nil {
		t.Fatal(err)
	}
	if codec.Detect(sealed) != codec.FormatEncrypted {
		t.Fatalf("EncryptValue did not encrypt: %q", sealed[:16])
	}
	got, err := DecryptValue(ctx, o, key, sealed)
	if err != nil || string(got) != string(plain) {
		t.Fatalf("DecryptValue: %v; round trip equal %v", err, string(got) == string(plain))
	}
	if got, err := DecryptValue(ctx, session.Options{}, key, plain); err != nil || string(got) != string(plain) {
		t.Errorf("DecryptValue of a plain value: %v", err)
	}
	for _, k := range []string{"", "/other/secrets/demo/web-secret"} {
		var oe *session.OptionError
		if _, err := DecryptValue(ctx, o, k, sealed); !errors.As(err, &oe) {
			t.Errorf("DecryptValue(key %q): %v, want a usage error", k, err)
		}
	}
}
