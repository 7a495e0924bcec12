package flows

import (
	"bytes"
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/store"
)

// WALLines says, one line each, what the session's write-ahead log covers
// (inspect.WALCoverageLines) and the wall-clock span its writes' objects
// tell (inspect.LogSpan); nil without --wal. A span that cannot be read is
// said, not an error: the log is still read.
func (s *Session) WALLines(ctx context.Context) []string {
	if s.WAL == nil {
		return nil
	}
	lines := inspect.WALCoverageLines(s.WAL.Coverage())
	span, err := inspect.LogSpan(ctx, s.WAL, func(kv store.KeyValue) (*metav1.ObjectMeta, bool) {
		// A header line is not worth a call to a KMS plugin, which may
		// not answer: values it encrypts are passed over.
		if bytes.HasPrefix(kv.Value, []byte("k8s:enc:kms:")) {
			return nil, false
		}
		cur, err := s.Planner.Open(ctx, kv)
		if err != nil {
			return nil, false
		}
		return cur.Obj.Meta, true
	})
	if err != nil {
		return append(lines, "object times not read: "+err.Error())
	}
	return append(lines, span.Line())
}
