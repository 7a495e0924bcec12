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
	// last is, per group of deletes checked by one LIST (verifyGroup),
	// the last plan of the group Before was asked about.
	last map[string]*surgery.Plan
	// verdicts are what After found of each plan written (Verdict).
	verdicts map[*surgery.Plan]verdict
}

var _ surgery.Verifier = (*Verifier)(nil)

func newPlanVerifier(v *verify.Verifier) *Verifier {
	return &Verifier{Verifier: v, writes: map[*surgery.Plan]*verify.Write{}, last: map[string]*surgery.Plan{}, verdicts: map[*surgery.Plan]verdict{}}
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
// The plans are asked about in the order they are written.
func (v *Verifier) Before(ctx context.Context, p *surgery.Plan) error {
	if g, ok := verifyGroup(p); ok {
		v.mu.Lock()
		v.last[g] = p
		v.mu.Unlock()
	}
	return v.Verifier.Before(ctx, v.write(p))
}

// After checks a step once its plan is written (verify.Verifier.After,
// with the revision the write made); a step not written is not checked.
// Of several deletes of values the apiserver could not read in one
// resource and namespace, only the last is checked: the LIST of that
// resource there fails until every one of them is gone.
func (v *Verifier) After(ctx context.Context, st surgery.Step) error {
	if st.Result == nil {
		return nil
	}
	if g, ok := verifyGroup(st.Plan); ok {
		v.mu.Lock()
		last := v.last[g]
		v.mu.Unlock()
		if last != nil && last != st.Plan {
			v.verdict(st.Plan, surgery.VerificationWithGroup, "checked with the last delete of its resource and namespace (one LIST)")
			return nil
		}
	}
	before := v.Tally()
	err := v.Verifier.After(ctx, v.write(st.Plan), st.Result.Revision)
	after := v.Tally()
	reach, why := v.Reach()
	switch {
	case err != nil:
		v.verdict(st.Plan, surgery.VerificationNotAccepted, "not accepted: "+err.Error())
	case reach != verify.Reachable:
		v.verdict(st.Plan, surgery.VerificationNotVerified, "not verified: "+why)
	case after.Verified > before.Verified:
		v.verdict(st.Plan, surgery.VerificationVerified, "verified")
	default:
		v.verdict(st.Plan, surgery.VerificationNotVerified, "not verified")
	}
	return err
}

// verdict is what the check after a write found: one of surgery's
// Verification* constants, and the same in words.
type verdict struct{ outcome, words string }

func (v *Verifier) verdict(p *surgery.Plan, outcome, words string) {
	v.mu.Lock()
	v.verdicts[p] = verdict{outcome, words}
	v.mu.Unlock()
}

// Verdict sets what the check after the write found of plan p in rec:
// its VerificationOutcome, and its Verification in words ("verified",
// "not verified[: why]", "not accepted: …"). A plan not checked, because
// not written, sets nothing; a nil v sets "not verified".
func (v *Verifier) Verdict(p *surgery.Plan, rec *surgery.Record) {
	d := verdict{surgery.VerificationNotVerified, "not verified"}
	if v != nil {
		v.mu.Lock()
		d = v.verdicts[p]
		v.mu.Unlock()
	}
	rec.VerificationOutcome, rec.Verification = d.outcome, d.words
}
