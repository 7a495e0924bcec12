package surgery

import (
	"slices"
	"testing"
)

func TestStepOutcome(t *testing.T) {
	created := Step{Plan: &Plan{Key: "/registry/configmaps/demo/a"}, Result: &Result{Revision: 12, BackupPath: "/b/1.json"}}
	updated := Step{Plan: &Plan{Key: "/registry/configmaps/demo/b", Expect: 7}, Result: &Result{Revision: 13, BackupPath: "/b/2.json", Warnings: []string{"w"}}}
	deleted := Step{Plan: &Plan{Key: "/registry/configmaps/demo/c", Expect: 9, Delete: true}, Result: &Result{Revision: 14, BackupPath: "/b/3.json"}}
	notWritten := Step{Plan: &Plan{Key: "/registry/configmaps/demo/d", Expect: 3}, Err: ErrPartial}
	for _, tc := range []struct {
		name string
		step Step
		want Outcome
		ok   bool
	}{
		{"a create", created, Outcome{Key: created.Plan.Key, From: "absent", Revision: 12, Backup: "/b/1.json", Undo: "etcdpvc restore /b/1.json"}, true},
		{"an update", updated, Outcome{Key: updated.Plan.Key, From: "7", Revision: 13, Backup: "/b/2.json", Undo: "etcdpvc restore /b/2.json", Warnings: []string{"w"}}, true},
		{"a deletion", deleted, Outcome{Deleted: true, Key: deleted.Plan.Key, From: "9", Revision: 14, Backup: "/b/3.json", Undo: "etcdpvc restore /b/3.json"}, true},
		{"not written", notWritten, Outcome{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.step.Outcome()
			if ok != tc.ok || got.Deleted != tc.want.Deleted || got.Key != tc.want.Key || got.From != tc.want.From || got.Revision != tc.want.Revision ||
				got.Backup != tc.want.Backup || got.Undo != tc.want.Undo || !slices.Equal(got.Warnings, tc.want.Warnings) {
				t.Errorf("Outcome() = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if got, want := UndoSteps([]Step{created, updated, notWritten, deleted}), "etcdpvc restore /b/3.json && etcdpvc restore /b/2.json && etcdpvc restore /b/1.json"; got != want {
		t.Errorf("UndoSteps = %q, want %q", got, want)
	}
	if got := UndoSteps([]Step{notWritten}); got != "" {
		t.Errorf("UndoSteps of nothing written = %q", got)
	}
}
