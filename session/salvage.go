package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/salvage"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// SalvageOptions are the options a salvage of o's DB runs with: o's
// prefix and hash cache (a trailer verified earlier is not hashed again),
// and the check a revision is kept by: the newest revision of each
// key whose value the apiserver can read, by delete's rule
// (surgery.Planner.Unreadable, decrypting with enc). A value whose
// readability is not known here (encrypted with no encryption config
// given) is kept as it is, and so is a key that names no object.
func SalvageOptions(ctx context.Context, o Options, enc *encryption.Config) salvage.Options {
	p := surgery.Planner{Codec: kubevalue.Codec{Enc: enc, Prefix: o.Prefix}}
	return salvage.Options{Prefix: o.Prefix, HashCacheDir: o.HashCacheDir, Readable: func(key string, value []byte) error {
		why, known := p.Unreadable(ctx, store.KeyValue{Key: key, Value: value})
		if why != nil && known {
			return why
		}
		return nil
	}}
}

// openSalvage salvages o.DB into a temporary snapshot (removed by Close)
// and opens that, read-only. What was lost is said once on o.Warn, and
// kept in s.Salvaged.
func (s *Session) openSalvage(ctx context.Context, o Options) error {
	dir, err := os.MkdirTemp("", "etcdpvc-salvage-")
	if err != nil {
		return openError(StoreDB, fmt.Errorf("salvage %s: a temporary directory for what survives: %w", o.DB, err), o)
	}
	s.cleanup = func() { os.RemoveAll(dir) }
	out := filepath.Join(dir, "salvaged.db")
	res, _, err := salvage.SalvageFile(ctx, o.DB, out, SalvageOptions(ctx, o, s.Enc))
	if err != nil {
		return openError(StoreDB, err, o)
	}
	b, err := store.OpenBolt(out, store.BoltOptions{LockTimeout: -1, Warn: o.Warn})
	if err != nil {
		return openError(StoreDB, fmt.Errorf("salvage %s: read what survives: %w", o.DB, err), o)
	}
	s.Reader, s.Bolt, s.Description, s.Salvaged = b, b, o.DB+" (salvaged)", res.Report
	if msg := SalvageLoss(res.Report); msg != "" {
		o.warn("--salvage: %s", msg)
	}
	return nil
}

// SalvageLoss says in one line what a salvage did not establish ("" when
// it is complete): pages unreadable, revision ranges lost, keys dropped.
func SalvageLoss(r *salvage.Report) string {
	if r == nil || r.Complete {
		return ""
	}
	var parts []string
	if r.PagesUnreadable > 0 {
		parts = append(parts, fmt.Sprintf("%d pages unreadable", r.PagesUnreadable))
	}
	if n := len(r.LostRanges); n > 0 {
		parts = append(parts, fmt.Sprintf("%d ranges of revisions the index names lost", n))
	}
	if n := len(r.Dropped); n > 0 {
		parts = append(parts, fmt.Sprintf("%d keys whose newest revision could not be read", n))
	}
	if r.Tree == "" {
		parts = append(parts, "no usable meta page (leaf pages recognised by their contents)")
	}
	if len(parts) == 0 {
		parts = append(parts, "the scan could not establish that nothing was lost")
	}
	return "what survives of the file is read, not all of it: " + strings.Join(parts, ", ") + " (`etcdpvc --db FILE salvage --out NEW.db` writes it out with the full report)"
}
