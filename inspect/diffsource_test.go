package inspect

import (
	"errors"
	"testing"
)

func TestDiffSources(t *testing.T) {
	for _, tc := range []struct {
		name, db, a, b string
		wantA, wantB   DiffSource
		strA, strB     string
		err            string
	}{
		{name: "two files", a: "a.db", b: "b.db", wantA: DiffSource{File: "a.db"}, wantB: DiffSource{File: "b.db"}, strA: "a.db", strB: "b.db"},
		{name: "file and live", a: "a.db", b: "live", wantA: DiffSource{File: "a.db"}, wantB: DiffSource{}, strA: "a.db", strB: "live etcd"},
		{name: "rev of the other side's file", a: "rev:12", b: "b.db",
			wantA: DiffSource{File: "b.db", Rev: 12, IsRev: true}, wantB: DiffSource{File: "b.db"}, strA: "b.db at revision 12", strB: "b.db"},
		{name: "rev of live", a: "live", b: "rev:3",
			wantA: DiffSource{}, wantB: DiffSource{Rev: 3, IsRev: true}, strA: "live etcd", strB: "live etcd at revision 3"},
		{name: "two revs of --db", db: "s.db", a: "rev:1", b: "rev:2",
			wantA: DiffSource{File: "s.db", Rev: 1, IsRev: true}, wantB: DiffSource{File: "s.db", Rev: 2, IsRev: true}, strA: "s.db at revision 1", strB: "s.db at revision 2"},
		{name: "two revs, live", a: "rev:1", b: "rev:2",
			wantA: DiffSource{Rev: 1, IsRev: true}, wantB: DiffSource{Rev: 2, IsRev: true}, strA: "live etcd at revision 1", strB: "live etcd at revision 2"},
		{name: "empty A", a: "", b: "b.db", err: "diff: an empty state: give a file, live or rev:N"},
		{name: "rev zero", a: "a.db", b: "rev:0", err: `diff: "rev:0": rev:N needs a positive revision number`},
		{name: "rev not a number", a: "rev:x", b: "b.db", err: `diff: "rev:x": rev:N needs a positive revision number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, err := DiffSources(tc.db, tc.a, tc.b)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || !errors.Is(err, ErrDiffSource) {
					t.Fatalf("err = %v, want %q (ErrDiffSource)", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a != tc.wantA || b != tc.wantB {
				t.Errorf("sources %+v, %+v; want %+v, %+v", a, b, tc.wantA, tc.wantB)
			}
			if a.String() != tc.strA || b.String() != tc.strB {
				t.Errorf("named %q, %q; want %q, %q", a, b, tc.strA, tc.strB)
			}
		})
	}
	if got, want := (DiffSource{File: "a.db", Rev: 5}).At(9), "a.db at revision 9"; got != want {
		t.Errorf("At = %q, want %q", got, want)
	}
}
