package surgery

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// Sentinels of restore's refusals.
var (
	// ErrOtherCluster means the backup was taken from another etcd cluster
	// than the one reached (their cluster IDs differ). The error is an
	// *OtherClusterError.
	ErrOtherCluster = errors.New("the backup was taken from another etcd cluster")
	// ErrPlaintextIntoEncrypted means a restore would store a plaintext
	// value where the resource is encrypted at rest, and no encryption
	// config was given to seal it.
	ErrPlaintextIntoEncrypted = errors.New("restore would store plaintext in a resource encrypted at rest")
)

// OtherClusterError reports a backup taken from another cluster than the
// one reached. It matches ErrOtherCluster.
type OtherClusterError struct {
	Backup string
	// Recorded is the backup's cluster ID and RecordedEndpoints its
	// endpoints; Live is the reached cluster's ID ("" when it could not be
	// read) and LiveEndpoints how it was reached.
	Recorded, Live                   string
	RecordedEndpoints, LiveEndpoints []string
	// Identity names what Recorded and Live are: "" for an etcd cluster
	// ID, or the kube-system namespace uid a backup taken through kine
	// records.
	Identity string
}

func (e *OtherClusterError) Error() string { return otherClusterText(e) }

// Is reports whether target is ErrOtherCluster.
func (e *OtherClusterError) Is(target error) bool { return target == ErrOtherCluster }

// clusterReader is a store that knows its etcd cluster ID (the live one).
type clusterReader interface {
	ClusterID(ctx context.Context) (uint64, error)
	Endpoints() []string
}

// checkCluster compares the cluster a backup records with the one r
// reaches, or the kube-system namespace uids when the backup records one
// instead (kine). A mismatch (or a live identity that cannot be read) is an
// *OtherClusterError unless force, then a warning.
func (c Planner) checkCluster(ctx context.Context, r store.Reader, b *Backup, force bool) ([]string, error) {
	recorded := b.ClusterID()
	cr, live := r.(clusterReader)
	switch {
	case recorded == "" && b.KubeSystemUID() != "":
		return c.checkKubeSystem(ctx, r, b, force)
	case recorded == "" && b.Version >= 2:
		return []string{noIdentityWarning(b)}, nil
	case recorded == "":
		return nil, nil // version 1: ReadBackup's warning says it
	case !live:
		return []string{fmt.Sprintf("backup %s was taken from etcd cluster ID %s; a db file has no cluster ID to compare it with", filepath.Base(b.Path), recorded)}, nil
	}
	var recEndpoints []string
	if b.Source != nil {
		recEndpoints = b.Source.Endpoints
	}
	id, err := cr.ClusterID(ctx)
	e := &OtherClusterError{Backup: b.Path, Recorded: recorded, RecordedEndpoints: recEndpoints, LiveEndpoints: cr.Endpoints()}
	if err == nil {
		e.Live = FormatClusterID(id)
		if e.Live == recorded {
			return nil, nil
		}
	}
	if !force {
		if err != nil {
			return nil, fmt.Errorf("%w (%v)", e, err)
		}
		return nil, e
	}
	return []string{e.Error() + "; restoring anyway, as forced"}, nil
}

// PlanRestore plans undoing the write a backup was taken for.
//
// For an edit, it puts the backup's stored bytes back, byte for byte
// (ciphertext included), only while the key still holds the value
// etcdpvc's write produced (its sha256 is the backup's NewSHA256), as a
// compare-and-swap on the key's current revision, or when the key was
// deleted since, as a create. With an encryption config, a backup value
// not stored the way the resource's first provider stores it (plaintext
// where the resource is now encrypted) is sealed with that provider
// instead; without one, a plaintext backup value is refused where the key
// now holds an encrypted one (ErrPlaintextIntoEncrypted).
//
// For a create (the backup records the key as absent), it deletes the key
// with a compare-and-delete, only while the key still holds exactly the
// bytes etcdpvc created, unchanged since (version 1, at the revision the
// audit log records).
//
// If someone changed the key after that write, it refuses with a
// *ChangedError (ErrChangedSinceBackup) carrying the diff, unless force is
// set; a current value that cannot be decoded is then shown as a raw diff.
// A backup taken from another cluster (r is a live etcd with another
// cluster ID) is refused with an *OtherClusterError unless force. The
// restored value must be the object its key names (ErrKeyMismatch) and the
// same object as the one at the key (kind, name, namespace, uid), forced
// or not. A key that already holds the original gives a NoOp plan.
func (c Planner) PlanRestore(ctx context.Context, r store.Reader, b *Backup, force bool) (*Plan, error) {
	what := fmt.Sprintf("restore %s from %s", b.Key, b.Path)
	if err := b.loadAuditLog(); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing written", what, err)
	}
	warnings := append([]string(nil), b.Warnings...)
	cw, err := c.checkCluster(ctx, r, b, force)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; nothing written", what, err)
	}
	warnings = append(warnings, cw...)
	var p *Plan
	if b.Absent {
		p, err = c.planUncreate(ctx, r, b, force, what)
	} else {
		p, err = c.planPutBack(ctx, r, b, force, what)
	}
	if err != nil {
		return nil, err
	}
	p.Warnings = append(warnings, p.Warnings...)
	return p, nil
}

// planPutBack plans writing a backup's value back.
func (c Planner) planPutBack(ctx context.Context, r store.Reader, b *Backup, force bool, what string) (*Plan, error) {
	gr, known := c.GroupResource(b.Key)
	plain, _, stale, err := c.Decrypt(ctx, gr, known, b.Key, b.Value)
	if err != nil {
		if b.NewSHA256 == "" {
			return c.planPutBackRaw(ctx, r, b, force, what, err)
		}
		return nil, fmt.Errorf("%s: backup value: %w", what, err)
	}
	bobj, err := codec.DecodeAt(b.Key, plain, c.ShowSecrets)
	if err != nil {
		if b.NewSHA256 == "" {
			return c.planPutBackRaw(ctx, r, b, force, what, err)
		}
		return nil, fmt.Errorf("%s: backup value: %w", what, err)
	}
	if res, _, _, ok := resource.ParseKey(c.StorePrefix(), b.Key); ok && b.NewSHA256 == "" {
		// A delete's backup of an object of another kind than its key's
		// resource (which the apiserver could not read): its bytes go
		// back as they were.
		if kerr := resource.CheckKind(res, bobj.GVK.GroupVersion().String(), bobj.GVK.Kind); kerr != nil {
			return c.planPutBackRaw(ctx, r, b, force, what, kerr)
		}
	}
	if err := c.checkKey(b.Key, bobj); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing written", what, err)
	}
	p := &Plan{
		Key:         b.Key,
		GR:          gr,
		NewPlain:    plain,
		NewStored:   b.Value,
		Description: fmt.Sprintf("restore %s from backup %s of revision %d (%s)", b.Key, filepath.Base(b.Path), b.ModRevision, secretOperation(b.Operation, gr == secretsGR)),
	}
	backupPlain := codec.Detect(b.Value) != codec.FormatEncrypted
	if c.Enc != nil && stale {
		// The backup holds the value as another provider (or none) stored
		// it: seal it the way the apiserver would write it now.
		if p.NewStored, err = c.Seal(ctx, gr, b.Key, plain); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		how := "in the clear"
		if !backupPlain {
			how = "with another provider or key"
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("the backup holds %s stored %s; the encryption config's first provider for %s is %s, so restore writes the same object sealed with it, not the backup's bytes", b.Key, how, gr, c.Enc.Providers(gr)[0]))
	}
	newName := fmt.Sprintf("%s (backup of revision %d)", b.Key, b.ModRevision)

	kv, err := r.Get(ctx, b.Key, 0)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted since: create it again, without the lease, which is
		// probably gone too.
		if p.Diff, err = c.RenderDiff(b.Key+" (absent)", nil, 0, newName, bobj, 0); err != nil {
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
	p.Expect, p.Lease = kv.ModRevision, kv.Lease
	sum := digest(kv.Value)
	if sum == b.SHA256 && b.mayStillApply(kv.ModRevision) {
		// The write may still be on its way (a frozen member holds it):
		// fence it off, as Apply's resolve does.
		return planFence(p, b, kv, gr), nil
	}
	if sum == b.SHA256 {
		p.Before, p.NoOp = &kubevalue.Current{KV: *kv, GR: gr}, true
		p.NoOpReason = fmt.Sprintf("%s already holds the value of backup %s (revision %d): restored before, or never changed", b.Key, filepath.Base(b.Path), kv.ModRevision)
		return p, nil
	}
	if c.Enc == nil && backupPlain && codec.Detect(kv.Value) == codec.FormatEncrypted {
		return nil, fmt.Errorf("%s: %w: the key now holds a value encrypted at rest (%s) and the backup's value is plaintext; give the cluster's --encryption-config so that restore seals it; nothing written",
			what, ErrPlaintextIntoEncrypted, envelopeName(kv.Value))
	}
	cur, openErr := c.Open(ctx, *kv)
	if openErr != nil {
		// The current value cannot be read: only a forced restore replaces
		// it, shown as a raw diff.
		p.Before = &kubevalue.Current{KV: *kv, GR: gr}
		p.Diff = c.rawDiff(b.Key, gr.Resource, kv.Value, kv.ModRevision, p.NewStored, newName, openErr)
		if !force {
			return nil, &ChangedError{Key: b.Key, Backup: b.Path, Revision: kv.ModRevision, Diff: p.Diff, Undecodable: openErr}
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("the current value of %s (revision %d) cannot be read (%v); the forced restore replaces it", b.Key, kv.ModRevision, openErr))
		p.Warnings = append(p.Warnings, c.warnings(ctx, r, nil, bobj, false)...)
		return p, nil
	}
	p.Before = cur
	if p.Diff, err = c.RenderDiff(fmt.Sprintf("%s (revision %d)", b.Key, kv.ModRevision), cur.Obj, kv.ModRevision, newName, bobj, kv.ModRevision); err != nil {
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
	} else if rev, ok := auditRevision(b); ok && rev != kv.ModRevision && !auditFence(b, kv) {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s holds the value etcdpvc's write produced, but at revision %d, not %d as the audit log records: something wrote the same value again", b.Key, kv.ModRevision, rev))
	}
	p.Warnings = append(p.Warnings, c.warnings(ctx, r, cur, bobj, terminating(cur.Obj.Meta) && !terminating(bobj.Meta))...)
	return p, nil
}

// planUncreate plans undoing a create: deleting the key while it still
// holds exactly what etcdpvc created.
func (c Planner) planUncreate(ctx context.Context, r store.Reader, b *Backup, force bool, what string) (*Plan, error) {
	gr, _ := c.GroupResource(b.Key)
	p := &Plan{
		Key:         b.Key,
		GR:          gr,
		Delete:      true,
		Description: fmt.Sprintf("restore %s from backup %s: delete the key that %q created", b.Key, filepath.Base(b.Path), b.Operation),
	}
	kv, err := r.Get(ctx, b.Key, 0)
	if errors.Is(err, store.ErrNotFound) && b.mayStillApply(0) {
		if err := pendingCreate(ctx, r, b); err != nil {
			return nil, err
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		p.NoOp = true
		p.Description = fmt.Sprintf("%s is already absent, as before %q", b.Key, b.Operation)
		p.NoOpReason = fmt.Sprintf("%s is already absent, as before the create backup %s records", b.Key, filepath.Base(b.Path))
		if b.mayStillApply(0) {
			p.NoOpReason += "; audit.log records that create as of unknown outcome, and every member answers without holding the key: it did not land"
		}
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	p.Expect, p.Lease = kv.ModRevision, kv.Lease
	var changed []string
	same := digest(kv.Value) == b.NewSHA256
	if !same {
		changed = append(changed, "it holds other bytes than etcdpvc created")
	}
	switch rev, ok := auditRevision(b); {
	case same && kv.ModRevision != kv.CreateRevision && auditFence(b, kv):
		// Rewritten with its own bytes by etcdpvc itself: a fence.
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s is at revision %d, where etcdpvc rewrote it with its own bytes so that a delete whose answer was lost could not apply (audit.log records the fence): not a change by someone else", b.Key, kv.ModRevision))
	case kv.ModRevision != kv.CreateRevision && kv.Version == 0:
		// kine counts no versions.
		changed = append(changed, fmt.Sprintf("it was written since it was created (at revision %d, now at revision %d)", kv.CreateRevision, kv.ModRevision))
	case kv.ModRevision != kv.CreateRevision:
		changed = append(changed, fmt.Sprintf("it was written %d times since it was created", kv.Version-1))
	case ok && (kv.CreateRevision != rev || kv.ModRevision != rev):
		changed = append(changed, fmt.Sprintf("it was created at revision %d and is at revision %d, not at revision %d as the audit log records", kv.CreateRevision, kv.ModRevision, rev))
	}
	cur, openErr := c.Open(ctx, *kv)
	if openErr != nil {
		p.Before = &kubevalue.Current{KV: *kv, GR: gr}
		p.Diff = c.rawDiff(b.Key, gr.Resource, kv.Value, kv.ModRevision, nil, b.Key+" (deleted)", openErr)
	} else {
		p.Before = cur
		if p.Diff, err = c.RenderDiff(fmt.Sprintf("%s (revision %d)", b.Key, kv.ModRevision), cur.Obj, kv.ModRevision, b.Key+" (deleted)", nil, 0); err != nil {
			return nil, err
		}
	}
	if len(changed) > 0 {
		if !force {
			return nil, &ChangedError{Key: b.Key, Backup: b.Path, Revision: kv.ModRevision, Diff: p.Diff, Undecodable: openErr}
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s was changed after etcdpvc created it (%s); the forced restore deletes it anyway", b.Key, strings.Join(changed, "; ")))
	}
	if kv.Lease != 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s is attached to lease %x; restoring the delete's backup would create it without that lease", b.Key, kv.Lease))
	}
	if cur != nil {
		p.Warnings = append(p.Warnings, fmt.Sprintf("restore deletes %s from etcd directly: no finalizers run and nothing it owns is garbage-collected until the garbage collector notices", kubectlName(strings.ToLower(cur.Obj.GVK.Kind), cur.Obj.Meta.Namespace, cur.Obj.Meta.Name)))
	}
	return p, nil
}

// planPutBackRaw plans putting back the bytes a delete's backup holds
// (the write left the key absent: NewSHA256 is empty) when they cannot
// be read (why): they were deleted for that (delete), and go back byte
// for byte, neither decoded nor sealed again. The key must be absent, as
// the delete left it, or hold those very bytes (nothing to do); anything
// else is refused unless force. The reason stays out of the description
// (the backup and the audit log record it): a Secret's error may quote
// nothing, but it says what the value is not.
func (c Planner) planPutBackRaw(ctx context.Context, r store.Reader, b *Backup, force bool, what string, why error) (*Plan, error) {
	gr, _ := c.GroupResource(b.Key)
	p := &Plan{
		Key:         b.Key,
		GR:          gr,
		NewStored:   b.Value,
		Description: fmt.Sprintf("restore %s from backup %s of revision %d (%s): its stored bytes, which cannot be read", b.Key, filepath.Base(b.Path), b.ModRevision, secretOperation(b.Operation, gr == secretsGR)),
	}
	newName := fmt.Sprintf("%s (backup of revision %d, raw bytes: %v)", b.Key, b.ModRevision, why)
	p.Warnings = append(p.Warnings, fmt.Sprintf("the backup's value cannot be read (%v): restore writes its bytes back as they were, and the apiserver will not read them either", why))
	kv, err := r.Get(ctx, b.Key, 0)
	if errors.Is(err, store.ErrNotFound) {
		p.Diff = fmt.Sprintf("--- %s (absent)\n+++ %s\n-(no value)\n+%d bytes, sha256 %s\n", b.Key, newName, len(b.Value), digest(b.Value))
		if b.Lease != 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("the key was attached to lease %d; it is restored without a lease, so etcd will not expire it", b.Lease))
		}
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	p.Expect, p.Lease = kv.ModRevision, kv.Lease
	p.Before = &kubevalue.Current{KV: *kv, GR: gr}
	if digest(kv.Value) == b.SHA256 && b.mayStillApply(kv.ModRevision) {
		return planFence(p, b, kv, gr), nil
	}
	if digest(kv.Value) == b.SHA256 {
		p.NoOp = true
		p.NoOpReason = fmt.Sprintf("%s already holds the bytes of backup %s (revision %d): restored before", b.Key, filepath.Base(b.Path), kv.ModRevision)
		return p, nil
	}
	p.Diff = c.rawDiff(b.Key, gr.Resource, kv.Value, kv.ModRevision, b.Value, newName, fmt.Errorf("the key was written again after the delete"))
	if !force {
		return nil, &ChangedError{Key: b.Key, Backup: b.Path, Revision: kv.ModRevision, Diff: p.Diff}
	}
	p.Warnings = append(p.Warnings, fmt.Sprintf("%s was written again after etcdpvc deleted it (now revision %d); the forced restore replaces it with the deleted bytes", b.Key, kv.ModRevision))
	return p, nil
}

// envelopeName names the provider header of an encrypted value.
func envelopeName(v []byte) string {
	if e, ok := codec.ParseEncryptionHeader(v); ok {
		return fmt.Sprintf("k8s:enc:%s:%s:%s", e.Provider, e.Version, e.KeyName)
	}
	return "k8s:enc:"
}

// rawDiff shows two stored values that cannot both be decoded: their sizes,
// digests and, around the first byte where they differ, the bytes
// themselves, quoted. A Secret's bytes are shown only with ShowSecrets.
// newValue nil means the key is deleted.
func (c Planner) rawDiff(key, res string, old []byte, oldRev int64, newValue []byte, newName string, why error) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s (revision %d, raw bytes: %v)\n+++ %s\n", key, oldRev, why, newName)
	if newValue == nil {
		fmt.Fprintf(&sb, "-%d bytes, sha256 %s\n+(no value)\n", len(old), digest(old))
		return sb.String()
	}
	at := 0
	for at < len(old) && at < len(newValue) && old[at] == newValue[at] {
		at++
	}
	fmt.Fprintf(&sb, "@@ %d bytes (sha256 %s) → %d bytes (sha256 %s); they differ from byte %d @@\n", len(old), digest(old), len(newValue), digest(newValue), at)
	if res == "secrets" && !c.ShowSecrets {
		sb.WriteString(" (a Secret's bytes are not shown; --show-secrets shows them)\n")
		return sb.String()
	}
	const before, after = 32, 96
	window := func(v []byte) string {
		start := max(0, at-before)
		end := min(len(v), at+after)
		s := strconv.Quote(string(v[start:end]))
		if start > 0 {
			s = "…" + s
		}
		if end < len(v) {
			s += "…"
		}
		return s
	}
	fmt.Fprintf(&sb, "-%s\n+%s\n", window(old), window(newValue))
	if at+after < max(len(old), len(newValue)) {
		// The ends too: a trailing newline or a truncation shows there.
		const tail = 24
		end := func(v []byte) string {
			if len(v) <= tail {
				return strconv.Quote(string(v))
			}
			return "…" + strconv.Quote(string(v[len(v)-tail:]))
		}
		fmt.Fprintf(&sb, "@@ last bytes @@\n-%s\n+%s\n", end(old), end(newValue))
	}
	return sb.String()
}

// auditRevision looks in the audit log beside a backup for the write that
// backup was taken for, and returns the revision that write produced. A
// write of unknown outcome, or only intended, says nothing of it.
func auditRevision(b *Backup) (int64, bool) {
	base := filepath.Base(b.Path)
	var rev int64
	found := false
	for _, rec := range b.auditLog() {
		if filepath.Base(rec.Backup) == base && rec.Key == b.Key && rec.NewSHA256 == b.NewSHA256 && rec.ToRevision != 0 {
			rev, found = rec.ToRevision, true
		}
	}
	return rev, found
}

// auditFence reports whether the audit log beside backup b records a
// fence etcdpvc wrote at kv's revision with kv's bytes (Record.Fence: a
// write of kv's key whose answer was lost, fenced off): kv then holds
// what it held before the fence, not a change by someone else.
func auditFence(b *Backup, kv *store.KeyValue) bool {
	if kv == nil {
		return false
	}
	sum := digest(kv.Value)
	for _, rec := range b.auditLog() {
		if rec.Key == kv.Key && rec.Fence == kv.ModRevision && rec.SHA256 == sum {
			return true
		}
	}
	return false
}
