package surgery

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/store"
)

// PlanRestore plans putting a backup's original stored bytes back, byte for
// byte (ciphertext included). It does so only while the key still holds
// the value etcdpvc's backed-up write produced (its sha256 is the backup's
// NewSHA256), as a compare-and-swap on the key's current revision, or when
// the key was deleted since, as a create. If someone changed the key after
// that write, it refuses with a *ChangedError (ErrChangedSinceBackup)
// carrying the diff, unless force is set. The restored object must be the
// same object (kind, name, namespace, uid) as the one at the key. A key
// that already holds the original bytes gives a NoOp plan.
func (c Codec) PlanRestore(ctx context.Context, r store.Reader, b *Backup, force bool) (*Plan, error) {
	what := fmt.Sprintf("restore %s from %s", b.Key, b.Path)
	if b.Absent {
		return nil, fmt.Errorf("%s: the backup records that the key did not exist before etcdpvc's write; undoing that write means deleting the key, which restore does not do", what)
	}
	gr, known := c.groupResource(b.Key)
	plain, _, _, err := c.decrypt(ctx, gr, known, b.Key, b.Value)
	if err != nil {
		return nil, fmt.Errorf("%s: backup value: %w", what, err)
	}
	bobj, err := codec.Decode(plain)
	if err != nil {
		return nil, fmt.Errorf("%s: backup value: %w", what, err)
	}
	p := &Plan{
		Key:         b.Key,
		GR:          gr,
		NewPlain:    plain,
		NewStored:   b.Value,
		Description: fmt.Sprintf("restore %s from backup %s of revision %d (%s)", b.Key, filepath.Base(b.Path), b.ModRevision, secretOperation(b.Operation, gr == secretsGR)),
	}
	newName := fmt.Sprintf("%s (backup of revision %d)", b.Key, b.ModRevision)

	kv, err := r.Get(ctx, b.Key, 0)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted since: create it again, without the lease, which is
		// probably gone too.
		if p.Diff, err = c.renderDiff(b.Key+" (absent)", nil, 0, newName, bobj, 0); err != nil {
			return nil, err
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s was deleted after etcdpvc's write; restore creates it again", b.Key))
		if b.Lease != 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("the key was attached to lease %d; it is restored without a lease, so etcd will not expire it", b.Lease))
		}
		p.Warnings = append(p.Warnings, c.warnings(ctx, r, nil, bobj, !terminating(bobj.Meta))...)
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	cur, err := c.open(ctx, *kv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	p.Before, p.Expect, p.Lease = cur, kv.ModRevision, kv.Lease
	sum := digest(kv.Value)
	if sum == b.SHA256 {
		p.NoOp = true
		return p, nil
	}
	if p.Diff, err = c.renderDiff(fmt.Sprintf("%s (revision %d)", b.Key, kv.ModRevision), cur.Obj, kv.ModRevision, newName, bobj, kv.ModRevision); err != nil {
		return nil, err
	}
	if _, err := verifyNew(b.Key, cur.Obj, plain); err != nil {
		return nil, fmt.Errorf("%s: the key now holds another object: %w", what, err)
	}
	if sum != b.NewSHA256 {
		if !force {
			return nil, &ChangedError{Key: b.Key, Backup: b.Path, Revision: kv.ModRevision, Diff: p.Diff}
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s was changed after etcdpvc's write (now revision %d); the forced restore discards that change", b.Key, kv.ModRevision))
	} else if rev, ok := auditRevision(b); ok && rev != kv.ModRevision {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s holds the value etcdpvc's write produced, but at revision %d, not %d as the audit log records: something wrote the same value again", b.Key, kv.ModRevision, rev))
	}
	p.Warnings = append(p.Warnings, c.warnings(ctx, r, cur, bobj, terminating(cur.Obj.Meta) && !terminating(bobj.Meta))...)
	return p, nil
}

// auditRevision looks in the audit log beside a backup for the write that
// backup was taken for, and returns the revision that write produced.
func auditRevision(b *Backup) (int64, bool) {
	if b.Path == "" {
		return 0, false
	}
	f, err := os.Open(filepath.Join(filepath.Dir(b.Path), AuditLogName))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	base := filepath.Base(b.Path)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var rev int64
	found := false
	for sc.Scan() {
		var rec AuditRecord
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		if filepath.Base(rec.Backup) == base && rec.Key == b.Key && rec.NewSHA256 == b.NewSHA256 {
			rev, found = rec.ToRevision, true
		}
	}
	return rev, found
}
