package surgery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// RecoverFrom is the revision recover recreates an object from.
type RecoverFrom struct {
	KV store.KeyValue
	// DeletedAt is the revision of the deletion that ended the key after
	// KV (0: the key was not deleted since, or the revision was named; -1:
	// deleted at a revision a write-ahead log does not establish).
	DeletedAt int64
	// Holder is the newest revision of the object created under the key
	// after that deletion, which holds the name still (nil: none). KV is
	// then the zero value when the deleted object's values are not held.
	Holder *store.KeyValue
}

// FindRecoverSource finds the revision to recover key from in r: rev when
// given, else the last revision with a value r holds before the key's
// last deletion (RecoverFrom.Holder names what was created after it, for
// the caller to tell whether it is the same object), or, for a key never
// deleted, its newest one. Nothing to recover from matches
// store.ErrNotFound: the message says whether the key did not exist at
// rev, or whether only its deletion is left (the revisions before it
// compacted).
func FindRecoverSource(ctx context.Context, r store.Reader, key string, rev int64) (*RecoverFrom, error) {
	if rev != 0 {
		kv, err := r.Get(ctx, key, rev)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("recover %s at revision %d: %w (the key did not exist then, or was deleted)", key, rev, err)
			}
			return nil, fmt.Errorf("recover %s: %w", key, err)
		}
		return &RecoverFrom{KV: *kv}, nil
	}
	var (
		live, last *store.KeyValue // the newest value; the last before the last deletion
		deleted    int64
		events     int
	)
	info, err := r.History(ctx, key, func(ev store.Event) error {
		events++
		if ev.Deleted {
			if deleted = ev.KV.ModRevision; deleted == 0 {
				deleted = -1 // a deletion a write-ahead log applied at a revision it does not establish
			}
			last, live = live, nil
			return nil
		}
		kv := ev.KV
		live = &kv
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w", key, err)
	}
	switch {
	case deleted == 0 && live != nil:
		return &RecoverFrom{KV: *live}, nil
	case live != nil:
		from := &RecoverFrom{DeletedAt: deleted, Holder: live}
		if last != nil {
			from.KV = *last
		}
		return from, nil
	case last == nil && events > 0:
		return nil, &DeletionOnlyError{Key: key, DeletedAt: deleted, CompactRevision: info.CompactRevision}
	case last == nil:
		return nil, fmt.Errorf("recover %s: no revision with a value is held: %w", key, store.ErrNotFound)
	}
	return &RecoverFrom{KV: *last, DeletedAt: deleted}, nil
}

// DeletionOnlyError is FindRecoverSource's store.ErrNotFound for a key
// whose history holds its deletion and no value before it.
type DeletionOnlyError struct {
	Key       string
	DeletedAt int64
	// CompactRevision is the history's (store.HistoryInfo).
	CompactRevision int64
}

func (e *DeletionOnlyError) Error() string {
	return fmt.Sprintf("recover %s: only its deletion at revision %d is held; the revisions before it were compacted (compaction revision %d): %v", e.Key, e.DeletedAt, e.CompactRevision, store.ErrNotFound)
}

func (e *DeletionOnlyError) Unwrap() error { return store.ErrNotFound }

// Recovered is what recover would create from a stored revision: the
// value with its deletion cleared (as Undelete does).
type Recovered struct {
	GR schema.GroupResource
	// Plain is the recovered object's plaintext.
	Plain []byte
}

// Recovered decrypts and decodes kv and clears its deletion: the object
// recover would create, without writing it.
func (c Planner) Recovered(ctx context.Context, kv store.KeyValue) (*Recovered, error) {
	cur, err := c.Open(ctx, kv)
	if err != nil {
		return nil, fmt.Errorf("recover %s from revision %d: %w", kv.Key, kv.ModRevision, err)
	}
	plain, err := Undelete{}.Transform(cur)
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w", kv.Key, err)
	}
	return &Recovered{GR: cur.GR, Plain: plain}, nil
}

// RecoverSetRequest names, as the user gave them, the objects of a
// RecoverSet; Resolve turns it into RecoverSetOptions.
type RecoverSetRequest struct {
	// Namespace recovers a namespace and what it held.
	Namespace string
	// Resource, InNamespace (default "default" for a namespaced resource),
	// AllNamespaces and Selector (a label selector) name a selection.
	Resource      string
	InNamespace   string
	AllNamespaces bool
	Selector      string
	// Include and Exclude are resource names.
	Include, Exclude []string
	Rev              int64
	ReplaceDifferent bool
}

// RequestError is a name in a RecoverSetRequest that does not resolve:
// Field is "resource", "selector", "include" or "exclude".
type RequestError struct {
	Field, Name string
	Err         error
}

func (e *RequestError) Error() string {
	if e.Field == "resource" {
		return e.Err.Error()
	}
	return e.Name + ": " + e.Err.Error()
}

func (e *RequestError) Unwrap() error { return e.Err }

// Resolve looks the request's resources up with res and parses its
// selector.
func (q RecoverSetRequest) Resolve(res resource.Resolver) (RecoverSetOptions, error) {
	so := RecoverSetOptions{Namespace: q.Namespace, Rev: q.Rev, ReplaceDifferent: q.ReplaceDifferent}
	if q.Resource != "" {
		r, err := res.Lookup(q.Resource)
		if err != nil {
			return so, &RequestError{Field: "resource", Name: q.Resource, Err: err}
		}
		so.Resource = &r
		if r.Namespaced && !q.AllNamespaces {
			so.InNamespace = q.InNamespace
			if so.InNamespace == "" {
				so.InNamespace = "default"
			}
		}
		if q.Selector != "" {
			sel, err := labels.Parse(q.Selector)
			if err != nil {
				return so, &RequestError{Field: "selector", Name: q.Selector, Err: err}
			}
			so.Selector = sel
		}
	}
	for _, list := range []struct {
		names []string
		to    *[]resource.Resource
		field string
	}{{q.Include, &so.Include, "include"}, {q.Exclude, &so.Exclude, "exclude"}} {
		for _, n := range list.names {
			r, err := res.Lookup(n)
			if err != nil {
				return so, &RequestError{Field: list.field, Name: n, Err: err}
			}
			*list.to = append(*list.to, r)
		}
	}
	return so, nil
}

// SetTotals counts a SetPlan's items by action.
type SetTotals struct {
	Create, Replace, Unreadable int
	// Skipped counts the items skipped or left as they exist, and
	// SkipReasons says why ("0 skipped", "3 skipped (1 event, 2 exists-identical)").
	Skipped     int
	SkipReasons string
}

// Writes is the number of objects the plan writes.
func (t SetTotals) Writes() int { return t.Create + t.Replace }

// Totals counts the plan's items.
func (p *SetPlan) Totals() SetTotals {
	t := SetTotals{Create: p.Count(ActionCreate), Replace: p.Count(ActionReplace), Unreadable: p.Count(ActionUnreadable)}
	reasons := p.SkipReasons()
	var parts []string
	for _, r := range slices.Sorted(func(yield func(string) bool) {
		for k := range reasons {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Skipped += reasons[r]
		parts = append(parts, fmt.Sprintf("%d %s", reasons[r], r))
	}
	t.SkipReasons = "0 skipped"
	if t.Skipped > 0 {
		t.SkipReasons = fmt.Sprintf("%d skipped (%s)", t.Skipped, strings.Join(parts, ", "))
	}
	return t
}

// SetOutcome is what a WriteRecoverSet did.
type SetOutcome struct {
	SetTotals
	// Written counts the objects written; NotWritten those planned and not
	// written (or not known to be) after an error.
	Written, NotWritten int
}

// Outcome sums up a WriteRecoverSet of the plan that returned res and err.
func (p *SetPlan) Outcome(res *RecoverSetResult, err error) SetOutcome {
	o := SetOutcome{SetTotals: p.Totals()}
	if res != nil {
		o.Written = len(res.Written)
	}
	if err != nil {
		o.NotWritten = o.Writes() - o.Written
	}
	return o
}
