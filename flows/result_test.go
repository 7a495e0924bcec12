package flows

import (
	"errors"
	"fmt"
	"testing"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// TestOutcomeOf maps the errors a write stops at onto record outcomes, as
// their exit statuses do.
func TestOutcomeOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&surgery.ConflictError{Key: "/k", Read: 4, Current: 5, Cause: &store.ConflictError{Key: "/k"}}, surgery.OutcomeConflict},
		{fmt.Errorf("write: %w", surgery.ErrUncertain), surgery.OutcomeUncertain},
		{&RefusedError{Msg: "not confirmed"}, surgery.OutcomeRefused},
		{fmt.Errorf("plan: %w", surgery.ErrNotApplicable), surgery.OutcomeRefused},
		{fmt.Errorf("%w: x", surgery.ErrPartial), surgery.OutcomeNotWritten},
		{errors.New("boom"), surgery.OutcomeNotWritten},
	} {
		if got := OutcomeOf(tc.err); got != tc.want {
			t.Errorf("OutcomeOf(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestResultDocument: one record per key (the first wins), the error,
// and a nil Result records nothing.
func TestResultDocument(t *testing.T) {
	r := NewResult("20261203T003510Z-1f2e3d4c")
	r.Failed("/registry/pods/demo/a", nil, "", &RefusedError{Msg: "no"})
	r.Failed("/registry/pods/demo/a", nil, "", errors.New("later"))
	doc := r.Document(errors.New("failed"))
	if doc.APIVersion != surgery.RecordListAPIVersion || doc.Kind != surgery.RecordListKind || doc.OperationID != r.OperationID || doc.Error != "failed" {
		t.Fatalf("document: %+v", doc)
	}
	if len(doc.Items) != 1 || doc.Items[0].Outcome != surgery.OutcomeRefused || doc.Items[0].Name != "a" || doc.Items[0].Namespace != "demo" || doc.Items[0].Schema != surgery.RecordSchema {
		t.Fatalf("items: %+v", doc.Items)
	}
	var none *Result
	none.Failed("/k", nil, "", errors.New("x"))
	if d := none.Document(nil); len(d.Items) != 0 || d.Items == nil {
		t.Fatalf("nil Result: %+v", d)
	}
}
