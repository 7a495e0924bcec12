package verify

import (
	"fmt"
	"strings"
)

// Mode is --verify: when to ask the apiserver.
type Mode int

const (
	// Auto verifies when an apiserver answers, and writes unverified
	// (saying so) when none does.
	Auto Mode = iota
	// Always refuses to write what it cannot verify.
	Always
	// Never does not ask the apiserver.
	Never
)

// ParseMode parses --verify's value: auto, always or never.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "auto", "":
		return Auto, nil
	case "always":
		return Always, nil
	case "never":
		return Never, nil
	}
	return Auto, fmt.Errorf("--verify %q: must be auto, always or never", s)
}

func (m Mode) String() string {
	switch m {
	case Always:
		return "always"
	case Never:
		return "never"
	}
	return "auto"
}

// Reach is whether an apiserver can be asked.
type Reach int

const (
	// Reachable: an apiserver of the cluster written answered.
	Reachable Reach = iota
	// Unreachable: no kubeconfig, no answer within the timeout, or an
	// apiserver of another cluster.
	Unreachable
	// Offline: the write goes into a db file (--db/--out), which no
	// apiserver serves.
	Offline
)

// Verdict is the apiserver's answer to a server-side dry run.
type Verdict int

const (
	// Accepted: the dry run passed.
	Accepted Verdict = iota
	// Rejected: the apiserver's validation or admission refused it.
	Rejected
	// Unknown: the dry run could not be made (no answer, forbidden to
	// this user, a kind the apiserver does not serve).
	Unknown
)

// Action is what to do with a write.
type Action int

const (
	// WriteVerified: write; the apiserver accepted the edit.
	WriteVerified Action = iota
	// WriteUnverified: write, and say that nothing was verified.
	WriteUnverified
	// RefuseUnverifiable: refuse, nothing can be verified and
	// --verify=always asks for it.
	RefuseUnverifiable
	// RefuseRejected: refuse, the apiserver rejects the edit.
	RefuseRejected
)

func (a Action) String() string {
	switch a {
	case WriteVerified:
		return "write, verified"
	case WriteUnverified:
		return "write, not verified"
	case RefuseUnverifiable:
		return "refuse: cannot verify"
	case RefuseRejected:
		return "refuse: rejected"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Decide is the decision table of a write: the mode, whether an
// apiserver can be asked, and its verdict on the edit (meaningful only
// when it is Reachable).
//
//	never                        → write, not verified
//	auto/always, accepted        → write, verified
//	auto/always, rejected        → refuse
//	auto, unreachable/unknown    → write, not verified
//	always, unreachable/unknown  → refuse
//
// Offline counts as unreachable.
func Decide(mode Mode, reach Reach, verdict Verdict) Action {
	if mode == Never {
		return WriteUnverified
	}
	if reach == Reachable {
		switch verdict {
		case Accepted:
			return WriteVerified
		case Rejected:
			return RefuseRejected
		}
	}
	if mode == Always {
		return RefuseUnverifiable
	}
	return WriteUnverified
}
