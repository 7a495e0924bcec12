package flows

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apiresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/etcdpvc/etcdpvc/surgery"
)

// ResizeRecover lowers the storage request of the claim at key to to
// (surgery.ResizeRecover) through Write, then tells what the resizer and
// the kubelet will do. A refusal of the recipe is a *RefusedError.
func (s *Session) ResizeRecover(ctx context.Context, t Terminal, key string, to apiresource.Quantity, o WriteOptions) error {
	plan, err := s.Planner.MakePlan(ctx, s.Reader, key, surgery.ResizeRecover{To: to})
	if err != nil {
		err = recipeError(err)
		o.Result.Failed(key, nil, s.Options.Prefix, err)
		return err
	}
	// The claim and its volume as read before the write: after it, a
	// snapshot copy written with --out is closed.
	pvc, pv := s.Planner.ResizeSubjects(ctx, s.Reader, plan)
	if _, err := s.Write(ctx, t, []*surgery.Plan{plan}, o); err != nil {
		return err
	}
	if pvc != nil {
		t.Print(surgery.ResizeNextSteps(pvc, pv, to, nextStepsWhen(o)))
	}
	return nil
}

// Rebind binds the volume to the claim namespace/claim
// (surgery.Planner.PlanRebind): both writes through Write, the volume
// first, then what the binder will do. A rebind half done says what was
// written and how to undo it (RebindPartial).
func (s *Session) Rebind(ctx context.Context, t Terminal, volume, namespace, claim string, force bool, o WriteOptions) error {
	rb, err := s.Planner.PlanRebind(ctx, s.Reader, volume, namespace, claim, force)
	if err != nil {
		return recipeError(err)
	}
	for _, w := range rb.Warnings {
		t.Warn(w)
	}
	steps, err := s.Write(ctx, t, rb.Plans(), o)
	if err != nil {
		if errors.Is(err, surgery.ErrPartial) {
			return RebindPartial(t, rb, steps, err)
		}
		return err
	}
	for _, st := range steps {
		if st.Written() {
			t.Print(surgery.RebindNextSteps(volume, namespace, claim, nextStepsWhen(o)))
			return nil
		}
	}
	return nil
}

// RebindPartial reports a rebind whose volume was written and whose claim
// was not (or may not have been): the lines that say so, and the error
// with how to undo the volume's write.
func RebindPartial(t Terminal, rb *surgery.Rebind, steps []surgery.Step, err error) error {
	lines, hint, ok := rb.HalfDone(steps, err)
	if !ok {
		return err
	}
	for _, l := range lines {
		t.Note(l)
	}
	return &hintedError{fmt.Errorf("rebind: %w", err), hint}
}

// nextStepsWhen says when the controllers will see a recipe's write: now,
// once it is written (a dry run), or once the cluster runs on the edited
// copy of its db (Out).
func nextStepsWhen(o WriteOptions) string {
	switch {
	case o.DryRun:
		return "Once written"
	case o.Out != "":
		return "Once the cluster runs on " + o.Out + ","
	default:
		return "Now"
	}
}

// recipeError makes a recipe's refusal (surgery.ErrRefused) a
// *RefusedError: nothing written.
func recipeError(err error) error {
	if errors.Is(err, surgery.ErrRefused) {
		return &RefusedError{Msg: strings.TrimSuffix(err.Error(), ": "+surgery.ErrRefused.Error()) + "; nothing written"}
	}
	return err
}
