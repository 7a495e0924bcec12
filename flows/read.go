package flows

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
)

// damagedDBHint is what to do about a db file that cannot be read to its
// end.
const damagedDBHint = "the db file is damaged: read another snapshot, or a copy from another member"

// GetAtIndex reads key as of raft index index of the session's
// write-ahead log, telling t which entry wrote it.
func (s *Session) GetAtIndex(ctx context.Context, t Terminal, key string, index uint64) (*store.KeyValue, error) {
	if s.WAL == nil {
		return nil, usageError("", "--index N reads raft index N of a write-ahead log: give --wal")
	}
	kv, ent, err := s.WAL.GetAtIndex(ctx, key, index)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%s at raft index %d: %w", session.ObjectName(s.Options.Prefix, key), index, store.ErrNotFound)
		}
		return nil, err
	}
	if ent.Index == 0 {
		t.Note(fmt.Sprintf("%s at raft index %d: revision %d of the db, unchanged by the log up to there", key, index, kv.ModRevision))
	} else {
		t.Note(fmt.Sprintf("%s at raft index %d: written by entry %d (term %d), revision %d", key, index, ent.Index, ent.Term, kv.ModRevision))
	}
	return kv, nil
}

// GetRequest is one object to read, as get reads it.
type GetRequest struct {
	Key string
	// Rev is the revision to read (0: the latest); Index, instead, a raft
	// index of the session's write-ahead log.
	Rev   int64
	Index uint64
	// At, instead, is a time: the object as the last entry of the log
	// certainly before it left it.
	At time.Time
	// Raw asks for the stored bytes, not decrypted or decoded.
	Raw bool
}

// Got is an object read: with Raw its stored bytes, else its content with
// metadata.resourceVersion set to its mod revision.
type Got struct {
	Stored  []byte
	Content map[string]any
}

// Get reads the object r names, telling t where a raft index found it and
// when the object's kind is not in this build's scheme.
func (s *Session) Get(ctx context.Context, t Terminal, r GetRequest) (Got, error) {
	if !r.At.IsZero() {
		index, err := s.IndexAtTime(ctx, t, r.Key, r.At)
		if err != nil {
			return Got{}, err
		}
		r.Index = index
	}
	if r.Index != 0 {
		kv, err := s.GetAtIndex(ctx, t, r.Key, r.Index)
		if err != nil {
			return Got{}, err
		}
		if r.Raw {
			return Got{Stored: kv.Value}, nil
		}
		cur, err := s.Planner.Open(ctx, *kv)
		if err != nil {
			return Got{}, fmt.Errorf("get %s at raft index %d: %w", session.ObjectName(s.Options.Prefix, r.Key), r.Index, err)
		}
		return Got{Content: inspect.WithResourceVersion(cur.Obj.Content, kv.ModRevision)}, nil
	}
	if r.Raw {
		kv, err := s.Reader.Get(ctx, r.Key, r.Rev)
		if errors.Is(err, store.ErrNotFound) {
			return Got{}, kubevalue.NotFound(ctx, s.Reader, s.Options.Prefix, r.Key, r.Rev, err)
		}
		if err != nil {
			return Got{}, fmt.Errorf("get %s: %w", r.Key, err)
		}
		return Got{Stored: kv.Value}, nil
	}
	cur, err := s.Planner.Load(ctx, s.Reader, r.Key, r.Rev)
	if err != nil {
		return Got{}, err
	}
	if len(cur.Obj.Undecoded) > 0 {
		t.Note(fmt.Sprintf("note: %s is not in this build's scheme; %d bytes beyond metadata were left undecoded (see -o raw)", cur.Obj.GVK, len(cur.Obj.Undecoded)))
	}
	return Got{Content: inspect.WithResourceVersion(cur.Obj.Content, cur.KV.ModRevision)}, nil
}

// RawToTerminal is the refusal of -o raw when the output is a terminal:
// binary bytes garble the session (and can send it control sequences).
// hint says how to get them anyway.
func RawToTerminal(hint string) error {
	return &RefusedError{Msg: "-o raw writes binary bytes, which would garble this terminal; nothing printed", Advice: hint}
}

// Scope resolves RESOURCE, -n and -A for ls, dump and diff
// (inspect.NewScope); an unknown resource is an *OptionError.
func (s *Session) Scope(res, namespace string, all bool) (inspect.Scope, error) {
	k, err := inspect.NewScope(s.Resolver, s.Options.Prefix, res, namespace, all)
	if err != nil {
		return k, &session.OptionError{Err: err}
	}
	return k, nil
}

// Unsettled returns an error wrapping ErrIncomplete when the session
// reads a log that does not establish everything a listing of the keys
// under prefix would show: revisions that stop before the log's end (a
// listing of the latest state lacks the writes the log cannot place),
// or, with past (a listing of deleted objects or of every revision), the
// log's entries the db holds that could not be worked out back from it,
// the entries that may have deleted keys the log never names, and writes under prefix whose outcome is not established (what they
// deleted may be missing); with allRevisions, also writes under prefix
// applied at revisions not established (a listing in revision order
// cannot place them).
func (s *Session) Unsettled(prefix string, past, allRevisions bool) error {
	if s.WAL == nil {
		return nil
	}
	cov := s.WAL.Coverage()
	if cov.RevisionsStop != "" {
		at := "no revision"
		if cov.LastRevision != 0 {
			at = fmt.Sprintf("revision %d only", cov.LastRevision)
		}
		return &hintedError{&incompleteError{msg: fmt.Sprintf("the log establishes the keyspace up to %s: its later writes are not in this output (%s)", at, cov.RevisionsStop)},
			s.UndeterminedHint()}
	}
	if !past {
		return nil
	}
	if cov.PrefixUnresolved != "" {
		return &hintedError{&incompleteError{msg: fmt.Sprintf("the log's %d entries up to the db's consistent index are not established (%s): objects they deleted and revisions the db compacted are not in this output", cov.InDB, cov.PrefixUnresolved)},
			s.UndeterminedHint()}
	}
	var msg, hint string
	u := s.WAL.Unestablished(prefix)
	switch {
	case allRevisions && u.Unknown > 0:
		msg = fmt.Sprintf("the log holds %s under %s whose outcome it does not establish (the first at raft index %d: %s): they are not in this output",
			inspect.Count(u.Unknown, "write", "writes"), prefix, u.First.Index, u.First.Reason)
		hint = s.UndeterminedHint() + "; `etcdpvc --wal DIR history` lists a key's writes"
	case u.Hiding > 0:
		msg = fmt.Sprintf("the log holds %s under %s whose outcome it does not establish and that may delete an object or bring one back (the first at raft index %d: %s): this output may lack or wrongly hold what they did",
			inspect.Count(u.Hiding, "write", "writes"), prefix, u.FirstHiding.Index, u.FirstHiding.Reason)
		if len(u.MayDelete) > 0 {
			// Each key named: none is left out unsaid.
			msg += fmt.Sprintf("; they may have deleted %s", strings.Join(u.MayDelete, ", "))
		}
		hint = s.UndeterminedHint() + "; `etcdpvc --wal DIR history` lists a key's writes"
	case allRevisions && u.Unplaced > 0:
		msg = fmt.Sprintf("the log applied %s under %s at revisions it does not establish (the first at raft index %d): they are not in this output, which is in revision order",
			inspect.Count(u.Unplaced, "write", "writes"), prefix, u.FirstUnplaced)
		hint = s.UndeterminedHint() + "; `etcdpvc --wal DIR history` lists a key's writes, with those"
	}
	if n := len(u.MayBeDeleted); n > 0 {
		them := "them"
		if n == 1 {
			them = "it"
		}
		what := fmt.Sprintf("%s may have been deleted: the log writes %s only with outcomes it does not establish, and the db holds nothing of %s (it compacted such a deletion away)",
			strings.Join(u.MayBeDeleted, ", "), them, them)
		if msg == "" {
			msg, hint = what, s.UndeterminedHint()+"; `etcdpvc --wal DIR history` lists a key's writes"
		} else {
			msg += "; " + what
		}
	}
	if un := cov.UnnamedUnder(prefix); len(un) > 0 {
		// Each is listed: what no source names.
		items := make([]string, len(un))
		for i, u := range un {
			items[i] = inspect.UnnamedLine(u)
		}
		what := fmt.Sprintf("%s: objects under %s deleted there may be missing from this output (the db compacted those deletions away)", strings.Join(items, "; "), prefix)
		const older = "an older snapshot of the cluster, taken before those entries, names every key they deleted: give it as --db (or as --wal-base, with the current db as --db)"
		if msg == "" {
			msg, hint = what, older
		} else {
			msg, hint = what+"; and "+msg, older+"; "+hint
		}
	}
	if msg == "" {
		return nil
	}
	return &hintedError{&incompleteError{msg: msg}, hint}
}

// DumpRequest is what dump writes: the objects of a scope (RESOURCE, -n,
// -A) as of a revision, or every revision held.
type DumpRequest struct {
	Resource, Namespace string
	AllNamespaces       bool
	AllRevisions        bool
	Rev, PageSize       int64
	YAML, ShowSecrets   bool
	// Progress, when set, is told of the dump as it goes.
	Progress Progress
	// Warn, when set, is told after the records that a dump of the latest
	// revision of a live etcd spans revisions because etcd was compacted
	// while it ran (it continues from the last key read at the newer
	// revision; a dump at Rev stops, incomplete, instead).
	Warn func(msg string)
}

// Progress is told of a long read: Start with the revisions it reads
// (0: unknown), Update after each record, Done at its end, before the
// output is flushed.
type Progress interface {
	Start(total int64)
	Update(records, valueBytes, rev int64)
	Done()
}

// Dump writes the records r asks for to w (inspect.Dump). A db file damaged
// part way, a log whose revisions stop before its end (for the latest state
// or every revision), and values that could not be read are incomplete
// (ErrIncomplete) after the records written.
func (s *Session) Dump(ctx context.Context, out io.Writer, r DumpRequest) error {
	if _, ok := s.Reader.(store.Archive); r.AllRevisions && !ok {
		return usageError("", "--all-revisions needs --db or --wal: live etcd replays a key's history only one key at a time (use `etcdpvc history`)")
	}
	scope, err := s.Scope(r.Resource, r.Namespace, r.AllNamespaces)
	if err != nil {
		return err
	}
	prefix := s.Options.Prefix
	planner := s.Planner
	planner.ShowSecrets = r.ShowSecrets // the start of an undecodable Secret's value, in its error
	do := inspect.DumpOptions{
		Codec: planner.Codec, Prefix: scope.Prefix, AllRevisions: r.AllRevisions, Revision: r.Rev, PageSize: r.PageSize,
		YAML: r.YAML, ShowSecrets: r.ShowSecrets,
		Match: func(key string) (resource.Resource, string, string, bool, bool) { return scope.Match(prefix, key) },
	}
	var span store.Span
	if r.Rev == 0 && !r.AllRevisions {
		do.OnCompacted = span.Record
	}
	if p := r.Progress; p != nil {
		var total int64
		if r.AllRevisions {
			if info, err := s.Reader.Info(ctx); err == nil {
				total = info.Revision
			}
		}
		p.Start(total)
		do.Progress = p.Update
	}
	w := bufio.NewWriterSize(out, 256<<10)
	res, err := inspect.Dump(ctx, s.Reader, w, do)
	if r.Progress != nil {
		r.Progress.Done()
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil && errors.Is(err, store.ErrCorrupt) {
		// The records written stand; the rest of the file is not readable.
		return &hintedError{&incompleteError{msg: fmt.Sprintf("dump stopped after %s: %v", inspect.Count(int(res.Records), "record", "records"), err)},
			damagedDBHint}
	}
	if err != nil {
		// The records written of a compacted revision stand too.
		return compactedIncomplete(err, "dump", inspect.Count(int(res.Records), "record", "records"))
	}
	if span.Spans() && r.Warn != nil {
		r.Warn(span.Note())
	}
	if werr := s.Unsettled(scope.Prefix, r.AllRevisions, r.AllRevisions); werr != nil && (r.Rev == 0 || r.AllRevisions) {
		return werr
	}
	if res.Unread.Total() > 0 {
		return &hintedError{&incompleteError{msg: res.Unread.Message() + "; their records say why"}, res.Unread.Hint()}
	}
	return nil
}

// DecodeInput decodes one stored value read from a file or a pipe, as
// decode reads it: raw bytes, or etcdctl's -w json output
// (codec.ReadInput). key, when "", is the one the input names; decrypt
// gives the plaintext of the value stored under a key. The content has
// metadata.resourceVersion set when the input names a mod revision; t is
// told when the kind is not in this build's scheme.
func DecodeInput(t Terminal, r io.Reader, key string, decrypt func(key string, value []byte) ([]byte, error)) (map[string]any, error) {
	in, err := codec.ReadInput(r)
	if err != nil {
		return nil, err
	}
	if key == "" {
		key = in.Key
	}
	plain, err := decrypt(key, in.Value)
	if err != nil && in.NewlineUnknown {
		// etcdctl's newline, which no cipher text survives: the value
		// without it is taken when it, and only it, decrypts. When neither
		// does, the error said is the one that names the key, if only the
		// value without the newline got that far (aescbc refuses the
		// newline's odd length before it tries the key).
		p, err2 := decrypt(key, in.Value[:len(in.Value)-1])
		switch {
		case err2 == nil:
			plain, err = p, nil
		case errors.Is(err2, encryption.ErrWrongKey) && !errors.Is(err, encryption.ErrWrongKey):
			err = err2
		}
	}
	if err != nil {
		return nil, err
	}
	obj, err := codec.DecodeAt(key, plain, false)
	if err != nil {
		return nil, err
	}
	content := obj.Content
	if in.ModRevision != 0 {
		content = inspect.WithResourceVersion(content, in.ModRevision)
	}
	if len(obj.Undecoded) > 0 {
		t.Note(fmt.Sprintf("note: %s is not in this build's scheme; %d bytes beyond metadata were left undecoded", obj.GVK, len(obj.Undecoded)))
	}
	return content, nil
}
