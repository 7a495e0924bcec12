package surgery

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
)

// refusals is a Verifier that refuses the keys it names, before or after
// the write, and records its calls.
type refusals struct {
	before, after map[string]error
	calls         []string
}

func (r *refusals) Before(_ context.Context, p *Plan) error {
	r.calls = append(r.calls, "before "+p.Key)
	return r.before[p.Key]
}

func (r *refusals) After(_ context.Context, s Step) error {
	r.calls = append(r.calls, "after "+s.Plan.Key)
	return r.after[s.Plan.Key]
}

// TestExecuteVerifier checks Execute's use of its Verifier: a refusal
// before writes nothing, even for a plan before the refused one; a
// refusal after the write leaves the writes made and is an ErrNotAccepted
// naming the backup.
func TestExecuteVerifier(t *testing.T) {
	errNo := errors.New("the apiserver says no")
	tests := []struct {
		name          string
		before, after map[string]error
		wantErr       error
		wantWritten   int
		wantCalls     string
	}{
		{name: "accepted", wantWritten: 2,
			wantCalls: "before " + pvcKey + ",before " + nsKey + ",after " + pvcKey + ",after " + nsKey},
		{name: "second refused before", before: map[string]error{nsKey: errNo}, wantErr: errNo,
			wantCalls: "before " + pvcKey + ",before " + nsKey},
		{name: "first refused after", after: map[string]error{pvcKey: errNo}, wantErr: ErrNotAccepted, wantWritten: 2,
			wantCalls: "before " + pvcKey + ",before " + nsKey + ",after " + pvcKey + ",after " + nsKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			_, s := startEtcd(t)
			pvcRev := create(t, s, pvcKey, corpus(t, pvcFile))
			nsRev := create(t, s, nsKey, corpus(t, nsFile))
			first, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
			if err != nil {
				t.Fatal(err)
			}
			second, err := Planner{}.MakePlan(ctx, s, nsKey, Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"a": "b"}}})
			if err != nil {
				t.Fatal(err)
			}
			v := &refusals{before: tc.before, after: tc.after}
			steps, err := Execute(ctx, s, []*Plan{first, second}, ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}, Verifier: v})
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Execute = %v, want %v", err, tc.wantErr)
			}
			written := 0
			for _, st := range steps {
				if st.Written() {
					written++
				}
			}
			if written != tc.wantWritten {
				t.Errorf("%d written, want %d", written, tc.wantWritten)
			}
			if tc.wantWritten == 0 {
				if get(t, s, pvcKey).ModRevision != pvcRev || get(t, s, nsKey).ModRevision != nsRev {
					t.Errorf("a key was written")
				}
			}
			if got := strings.Join(v.calls, ","); got != tc.wantCalls {
				t.Errorf("calls %s, want %s", got, tc.wantCalls)
			}
			if errors.Is(err, ErrNotAccepted) {
				for _, want := range []string{"written, but the apiserver rejects it", steps[0].Result.BackupPath, errNo.Error()} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
			}
		})
	}
}
