package flows

import (
	"context"
	"errors"
	"fmt"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

// ReadOnly reports whether s reads a source a recover cannot write into:
// a db file or a write-ahead log, not a --out copy.
func (s *Session) ReadOnly() bool {
	return (s.Options.DB != "" || len(s.Options.WAL) > 0) && s.Options.Out == ""
}

// NoTarget is the refusal of a recover that reads the read-only s and was
// given no live etcd to write into; key names the object recovered ("":
// a namespace or a selection).
func (s *Session) NoTarget(key string) error {
	copyOut := "; or into a copy of the file with --out OUT"
	if _, kine := s.Reader.(*store.KineDB); kine {
		copyOut = " (kine's socket: --endpoints unix:///var/lib/rancher/k3s/server/kine.sock)"
	}
	if key == "" {
		return &RefusedError{Msg: fmt.Sprintf("recover: %s: %v: nothing written", s.Description, store.ErrReadOnly),
			Advice: "write into the live cluster by adding --endpoints (or --kubeadm)" + copyOut}
	}
	return &RefusedError{Msg: fmt.Sprintf("recover %s: %s: %v: nothing written", key, s.Description, store.ErrReadOnly),
		Advice: "print it with -o yaml or -o raw; write it into the live cluster by adding --endpoints (or --kubeadm)" + copyOut}
}

// PreviewRecover shows, for a recover with no target to compare with, the
// create as it would be made where the key is absent, and says what was
// not checked. Nothing is written.
func (s *Session) PreviewRecover(ctx context.Context, t Terminal, kv store.KeyValue) error {
	plan, err := s.Planner.PlanRecoverPreview(ctx, s.Reader, kv)
	if err != nil {
		return err
	}
	t.Diff(plan.Diff)
	for _, w := range plan.Warnings {
		t.Warn(w)
	}
	t.Print(fmt.Sprintf("dry run: %s; nothing written\n", plan.Description))
	t.Note("no write target was given: the diff is the object as it would be created where the key is absent; whether it exists in the live cluster was not checked (add --endpoints or --kubeadm)")
	return nil
}

// Recover creates, in s, the object kv read from src (s itself, or the
// read-only source of a recover into the live etcd s), through Write. An
// object that exists is refused: recover never replaces one.
func (s *Session) Recover(ctx context.Context, t Terminal, src *Session, kv store.KeyValue, o WriteOptions) (err error) {
	defer func() { o.Result.Failed(kv.Key, nil, s.Options.Prefix, err) }()
	if src != s {
		t.Note(fmt.Sprintf("recovering %s from %s (%s) into %s", kv.Key, src.Description, surgery.SourceRevision(kv), s.Description))
	}
	plan, err := s.Planner.PlanRecover(ctx, s.Reader, kv)
	if err != nil {
		if errors.Is(err, surgery.ErrExists) {
			msg, hint := err.Error()+"; nothing written", "recover never replaces an object: `etcdpvc get` it, and use undelete, patch or edit to change it"
			if other := s.otherIncarnation(ctx, src, kv); other != "" {
				msg += ": " + other
				hint = "recover never replaces an object, and the one that exists is not the one recovered: `etcdpvc get` it, `etcdpvc history` lists the incarnations; the deleted one can be recovered only where its name is free"
			}
			return &RefusedError{Msg: msg, Advice: hint}
		}
		return err
	}
	_, err = s.Write(ctx, t, []*surgery.Plan{plan}, o)
	return err
}

// otherIncarnation says, for a recover of kv (read from src) refused
// because its key exists in s, that the object there is another one than
// the one recovered, with another uid (the key was created again after the
// deletion); "" when both uids are not read, or are the same.
func (s *Session) otherIncarnation(ctx context.Context, src *Session, kv store.KeyValue) string {
	cur, err := s.Planner.Load(ctx, s.Reader, kv.Key, 0)
	if err != nil {
		return ""
	}
	rec, err := src.Planner.Open(ctx, kv)
	if err != nil {
		return ""
	}
	have, want := string(cur.Obj.Meta.UID), string(rec.Obj.Meta.UID)
	if have == "" || want == "" || have == want {
		return ""
	}
	return fmt.Sprintf("the key holds another object, uid %s (created at revision %d), not the one recovered, uid %s: the name was taken again after the deletion", have, cur.KV.CreateRevision, want)
}

// Recovered is what a recover would create, to print instead of writing
// it: the object (Content), or with raw the bytes it would store (Stored,
// sealed with the encryption config).
type Recovered struct {
	Content map[string]any
	Stored  []byte
}

// Recovered returns what a recover of kv would create (see Recovered).
func (s *Session) Recovered(ctx context.Context, kv store.KeyValue, raw bool) (*Recovered, error) {
	rec, err := s.Planner.Recovered(ctx, kv)
	if err != nil {
		return nil, err
	}
	if raw {
		sealed, err := s.Planner.Seal(ctx, rec.GR, kv.Key, rec.Plain)
		if err != nil {
			return nil, err
		}
		return &Recovered{Stored: sealed}, nil
	}
	obj, err := codec.DecodeAt(kv.Key, rec.Plain, false)
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w", kv.Key, err)
	}
	return &Recovered{Content: obj.Content}, nil
}

// RecoverSet is a recover of a namespace or a selection, as asked.
type RecoverSet struct {
	surgery.RecoverSetRequest
	// MaxTxnOps bounds the keys created in one transaction.
	MaxTxnOps int
	Write     WriteOptions
}

// CheckSource refuses a recover of a namespace or a selection from a
// source it cannot read as a whole: a write-ahead log, or the live etcd
// without a revision.
func (r RecoverSet) CheckSource(o session.Options) error {
	if len(o.WAL) > 0 {
		return usageError("", "recover of a namespace or a selection does not read --wal: recover each object (recover RESOURCE NAME), or give a snapshot with --db")
	}
	if o.DB == "" && r.Rev == 0 {
		what := "the objects"
		if r.Namespace != "" {
			what = "namespace " + r.Namespace
		}
		return usageError("the revision before the deletion: `etcdpvc history namespace NAME` shows when deletionTimestamp was set; pick the revision just before it",
			"recover %s: name the source: --db SNAPSHOT, or --rev N (the state at revision N of the live history)", what)
	}
	return nil
}

// PlanRecoverSet plans r, read from src and written into dst
// (surgery.Planner.PlanRecoverSet), and says where from and to. A custom
// resource whose CustomResourceDefinition is nowhere is refused, and so is
// a write into a namespace Terminating in dst. A nil dst (a dry run with
// no write target) plans every object as a create, checking nothing of a
// live cluster.
func PlanRecoverSet(ctx context.Context, t Terminal, src, dst *Session, r RecoverSet) (*surgery.SetPlan, error) {
	so, err := r.Resolve(src.Resolver)
	if err != nil {
		var re *surgery.RequestError
		if errors.As(err, &re) && re.Field != "resource" {
			return nil, usageError("", "--%s %w", re.Field, err)
		}
		return nil, usageError("", "%w", err)
	}
	planner, live, into := src.Planner, store.Reader(nil), "no write target (a dry run: nothing is checked against a live cluster)"
	if dst != nil {
		planner, live, into = dst.Planner, dst.Reader, dst.Target("")
	}
	plan, err := planner.PlanRecoverSet(ctx, src.Reader, live, so)
	if err != nil {
		var te *surgery.TerminatingError
		switch {
		case errors.Is(err, surgery.ErrMissingCRD):
			return nil, &RefusedError{Msg: err.Error() + "; nothing written", Advice: "recover the CustomResourceDefinition from an older snapshot first, or leave the custom resources out with --exclude"}
		case errors.As(err, &te):
			return nil, &RefusedError{Msg: err.Error(), Advice: te.Hint()}
		}
		return nil, err
	}
	from := src.Description
	if r.Rev != 0 {
		from = fmt.Sprintf("%s at revision %d", from, r.Rev)
	}
	t.Note(fmt.Sprintf("recovering from %s (source revision %d) into %s", from, plan.SourceRevision, into))
	return plan, nil
}

// WriteRecoverSet writes plan into s unless it has nothing to write, as
// every write is made: each object is checked with the apiserver first
// (Session.NewVerifier, the decision table of single writes: a refusal
// refuses the whole plan), r.Write.DryRun stops there, then it asks
// (unless r.Write.Yes) and surgery.WriteRecoverSet writes through
// surgery.Execute, telling each object written and verified, then the
// summary, the verification's and how to undo it. Objects of the source
// that could not be read make it incomplete (ErrIncomplete). A plan with
// no write target (plan.Preview) is only printed.
func (s *Session) WriteRecoverSet(ctx context.Context, t Terminal, plan *surgery.SetPlan, r RecoverSet) (err error) {
	var res *surgery.RecoverSetResult
	var v *Verifier
	defer func() { recordSet(r.Write, plan, res, err, v) }()
	totals := plan.Totals()
	writes, unread := totals.Writes(), totals.Unreadable
	incomplete := func() error {
		if unread == 0 {
			return nil
		}
		return &incompleteError{msg: fmt.Sprintf("%d objects of the source could not be read and were not recovered (listed as unreadable)", unread)}
	}
	if plan.Preview {
		if !r.Write.DryRun {
			return s.NoTarget("")
		}
		t.Print("dry run: nothing written; not verified: no write target was given, so no apiserver was asked\n")
		return incomplete()
	}
	if writes == 0 {
		t.Print("nothing to do: every object is skipped or exists; nothing written\n")
		return incomplete()
	}
	items := plan.Writes()
	for _, it := range items {
		// A replace overwrites what exists: its diff, as any edit shows.
		if it.Action == surgery.ActionReplace && it.Plan.Diff != "" {
			t.Diff(it.Plan.Diff)
		}
	}
	v, err = s.NewVerifier(ctx, func(msg string) { t.Print(msg + "\n") })
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := v.Before(ctx, it.Plan); err != nil {
			return setVerifyRefusal(plan, err)
		}
	}
	if r.Write.DryRun {
		t.Print("dry run: nothing written\n")
		return incomplete()
	}
	w, err := store.AsWriter(s.Reader)
	if err != nil {
		return &hintedError{fmt.Errorf("%s: %w", s.Description, err), readOnlyHint}
	}
	if err := surgery.ProbeBackupDir(surgery.BackupDirOrDefault(r.Write.BackupDir)); err != nil {
		return err
	}
	// The members before the question, as Write compares them.
	plans := make([]*surgery.Plan, len(items))
	for i, it := range items {
		plans[i] = it.Plan
	}
	if err := surgery.CheckMembers(ctx, w, plans); err != nil {
		return err
	}
	if !r.Write.Yes {
		if err := t.Confirm(fmt.Sprintf("Write the %d objects planned above to %s?", writes, s.Target("")), "re-run with --yes to write the plan above, or --dry-run to only see it"); err != nil {
			return err
		}
	}
	ao := s.ApplyOptions(ctx, t, r.Write)
	id := surgery.ResumedOperation(ao.BackupDir, plan)
	resumed := id != ""
	if resumed {
		// The objects an earlier run created are here: this run goes on
		// with its operation, so that one undo line undoes both.
		t.Note(fmt.Sprintf("resuming operation %s, whose writes audit.log records for objects that exist as it left them: this run's writes join it", id))
		ao.OperationID = id
		if r.Write.Result != nil {
			r.Write.Result.OperationID = id
		}
	}
	var werr error
	res, werr = surgery.WriteRecoverSet(ctx, w, plan, surgery.RecoverSetWriteOptions{ApplyOptions: ao, MaxTxnOps: r.MaxTxnOps, Verifier: v,
		OnWritten: func(it *surgery.SetItem) {
			t.Print(fmt.Sprintf("written: %s (%s)\n", it.Key, string(it.Action)))
		}})
	if res != nil {
		for _, w := range res.Warnings {
			t.Warn(w)
		}
	}
	out := plan.Outcome(res, werr)
	t.Print(fmt.Sprintf("summary: %d written, %s, %d not written, %d unreadable; backups and audit.log in %s\n",
		out.Written, out.SkipReasons, out.NotWritten, out.Unreadable, ao.BackupDir))
	undo := setUndo(res)
	if resumed && undo != "" {
		undo = surgery.OperationUndo(ao.OperationID, ao.BackupDir)
	}
	if out.Written > 0 {
		t.Print(v.Summary() + "\n")
		t.Print(fmt.Sprintf("undo with: %s\n", undo))
		r.Write.Result.setRestore(undo)
	}
	if werr != nil {
		if errors.Is(werr, surgery.ErrNotAccepted) {
			return &hintedError{werr, fmt.Sprintf("the writes are made, but the apiserver does not accept those named: undo them with %s (or each with `etcdpvc restore BACKUP`, its backup named above) and see the runbook's section on verification", undo)}
		}
		if errors.Is(werr, surgery.ErrNotRecorded) {
			return &hintedError{werr, notRecordedHint(undo)}
		}
		if errors.Is(werr, surgery.ErrPartial) && undo != "" {
			werr = &hintedError{werr, "run the same command again to resume, or undo what was written with " + undo}
		}
		return s.partialCopy(werr)
	}
	if done, err := s.finishSnapshot(t); done && err != nil {
		return err
	}
	return incomplete()
}

// setVerifyRefusal is the refusal of a RecoverSet by the verification
// before it (err, from Verifier.Before); an object that cannot be checked
// because its namespace is created by the plan itself gets a hint of its
// own.
func setVerifyRefusal(plan *surgery.SetPlan, err error) error {
	var ue *verify.UnverifiableError
	if !errors.As(err, &ue) || ue.MissingNamespace == "" {
		return err
	}
	for _, it := range plan.Items {
		if it.Resource.Path == "namespaces" && it.Action == surgery.ActionCreate && it.Name == ue.MissingNamespace {
			return &hintedError{err, fmt.Sprintf("the objects of namespace %s cannot be checked before the namespace exists: recover the namespace object first with the same flags (`recover --etcd-key %s --verify=always`), then run this command again; or use --verify=auto, which checks each object after its write", it.Name, it.Key)}
		}
	}
	return err
}

// recordSet records in o.Result what WriteRecoverSet did with each item
// of plan (surgery.SetPlan.Records), each written one with the
// verification's verdict; a dry run's creates and replaces are dry-run.
func recordSet(o WriteOptions, plan *surgery.SetPlan, res *surgery.RecoverSetResult, err error, v *Verifier) {
	if o.Result == nil || plan == nil {
		return
	}
	recs := plan.Records(res, err, o.Result.OperationID, OutcomeOf)
	for i, it := range plan.Items {
		switch {
		case recs[i].Outcome == surgery.OutcomeWritten:
			v.Verdict(it.Plan, &recs[i])
		case o.DryRun && (err == nil || errors.Is(err, ErrIncomplete)) && it.Plan != nil && (it.Action == surgery.ActionCreate || it.Action == surgery.ActionReplace):
			recs[i].Outcome, recs[i].Reason = surgery.OutcomeDryRun, "dry run: nothing written"
		}
	}
	o.Result.add(recs...)
}

// setUndo is the command that undoes what a recovery of a set wrote: its
// one backup's restore, or the restore of its operation.
func setUndo(res *surgery.RecoverSetResult) string {
	if res == nil || len(res.Written) == 0 {
		return ""
	}
	first := res.Written[0].Record
	if len(res.Written) == 1 || first.OperationID == "" {
		return surgery.UndoCommand(res.Written[0].BackupPath)
	}
	return surgery.OperationUndo(first.OperationID, res.BackupDir)
}
