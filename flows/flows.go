// Package flows holds what each command does once its store is open: the
// reads and reports (get, ls, stats, dump, history, diff, doctor), the
// writes (edits, recipes, restore, recover, recover of a set, snapshot
// copies) through surgery's one executor, the apiserver's checks around
// them, and what an error means for the exit status and the hint
// (ExitStatus, Hint). The command line parses flags into session.Options,
// calls Open and one method of Session, and prints what it returns.
package flows

import (
	"context"

	"github.com/etcdpvc/etcdpvc/session"
)

// Session is an open store (session.Session) with the commands' flows as
// its methods.
type Session struct {
	*session.Session
}

// Open opens the store o names (session.Open) for the flows.
func Open(ctx context.Context, o session.Options) (*Session, error) {
	s, err := session.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Session{s}, nil
}
