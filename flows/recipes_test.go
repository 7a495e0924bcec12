package flows

import (
	"errors"
	"fmt"
	"testing"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// TestRecipeError: a recipe's refusal becomes a refusal that says nothing
// was written; other errors pass as they are.
func TestRecipeError(t *testing.T) {
	refused := fmt.Errorf("claim www-web-1 is not Bound: %w", surgery.ErrRefused)
	var re *RefusedError
	if err := recipeError(refused); !errors.As(err, &re) || re.Msg != "claim www-web-1 is not Bound; nothing written" {
		t.Errorf("recipeError(refusal) = %v", err)
	}
	if err := recipeError(store.ErrNotFound); err != store.ErrNotFound {
		t.Errorf("recipeError(not found) = %v", err)
	}
}

// TestNextStepsWhen: when the controllers see a recipe's write.
func TestNextStepsWhen(t *testing.T) {
	for _, tc := range []struct {
		o    WriteOptions
		want string
	}{
		{WriteOptions{}, "Now"},
		{WriteOptions{Yes: true}, "Now"},
		{WriteOptions{DryRun: true, Out: "out.db"}, "Once written"},
		{WriteOptions{Out: "out.db"}, "Once the cluster runs on out.db,"},
	} {
		if got := nextStepsWhen(tc.o); got != tc.want {
			t.Errorf("nextStepsWhen(%+v) = %q, want %q", tc.o, got, tc.want)
		}
	}
}
