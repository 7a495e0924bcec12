package connect

import (
	"context"

	"github.com/etcdpvc/etcdpvc/inspect"
)

// WALLines says, one line each, what the session's write-ahead log covers
// (store.WALCoverage.Lines) and the wall-clock span its writes' objects
// tell (inspect.LogSpan); nil without --wal. A span that cannot be read is
// said, not an error: the log is still read.
func (s *Session) WALLines(ctx context.Context) []string {
	if s.WAL == nil {
		return nil
	}
	lines := s.WAL.Coverage().Lines()
	span, err := inspect.LogSpan(ctx, s.WAL)
	if err != nil {
		return append(lines, "object times not read: "+err.Error())
	}
	return append(lines, span.Line())
}
