package flows

import (
	"context"
	"sync"

	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

// Verifier is a verify.Verifier checking surgery's plans: the
// surgery.Verifier of every write through Session.Write and the
// recoveries. It gives the verify.Verifier one verify.Write per plan, the
// same for its check before the write and after it.
type Verifier struct {
	*verify.Verifier

	mu     sync.Mutex
	writes map[*surgery.Plan]*verify.Write
}

var _ surgery.Verifier = (*Verifier)(nil)

func newPlanVerifier(v *verify.Verifier) *Verifier {
	return &Verifier{Verifier: v, writes: map[*surgery.Plan]*verify.Write{}}
}

// write returns p's verify.Write, made once.
func (v *Verifier) write(p *surgery.Plan) *verify.Write {
	v.mu.Lock()
	defer v.mu.Unlock()
	if w, ok := v.writes[p]; ok {
		return w
	}
	w := &verify.Write{Key: p.Key, Object: p.ObjectName(), Delete: p.Delete, Expect: p.Expect, NewPlain: p.NewPlain, Before: p.Before}
	v.writes[p] = w
	return w
}

// Before checks plan p before anything is written (verify.Verifier.Before).
func (v *Verifier) Before(ctx context.Context, p *surgery.Plan) error {
	return v.Verifier.Before(ctx, v.write(p))
}

// After checks a step once its plan is written (verify.Verifier.After,
// with the revision the write made); a step not written is not checked.
func (v *Verifier) After(ctx context.Context, st surgery.Step) error {
	if st.Result == nil {
		return nil
	}
	return v.Verifier.After(ctx, v.write(st.Plan), st.Result.Revision)
}
