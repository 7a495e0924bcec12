package flows

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// SelectedRequest is what `delete RESOURCE -l SEL --field-selector SEL
// --older-than DURATION` deletes: the objects of Resource in Namespace (or
// every namespace: AllNamespaces) that match every part of the selection
// given, readable or not by the apiserver's rule.
type SelectedRequest struct {
	Resource      string
	Namespace     string
	AllNamespaces bool
	// LabelSelector and FieldSelector are kubectl's -l and
	// --field-selector ("": not given).
	LabelSelector, FieldSelector string
	// OlderThan, above 0, keeps the objects whose time (ObjectTime) is
	// before Now less OlderThan.
	OlderThan time.Duration
	Now       time.Time
	// PageSize is the keys per range request of the scan (live etcd).
	PageSize int64
}

// ObjectTime is the time --older-than compares: an Event's lastTimestamp,
// else the last of its series (series.lastObservedTime), else its
// eventTime, else (every other object, or an Event with none of them)
// metadata.creationTimestamp; the zero time when none is set, which no
// --older-than selects.
func ObjectTime(content map[string]any) time.Time {
	if kind, _ := content["kind"].(string); kind == "Event" {
		series, _ := content["series"].(map[string]any)
		for _, v := range []any{content["lastTimestamp"], series["lastObservedTime"], content["eventTime"]} {
			if t, ok := parseTime(v); ok {
				return t
			}
		}
	}
	meta, _ := content["metadata"].(map[string]any)
	t, _ := parseTime(meta["creationTimestamp"])
	return t
}

// parseTime reads a time as the apiserver writes it in JSON (RFC 3339,
// MicroTime's fraction included).
func parseTime(v any) (time.Time, bool) {
	s, _ := v.(string)
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// DeleteSelected deletes the objects r selects, found by one scan, through
// Write: one line per object (not its whole diff), the count and bytes,
// one confirmation, then each value backed up (after a check that the
// backup directory's file system has room for them all) and removed by a
// compare-and-delete on the revision the scan read, o.MaxTxnOps keys per
// transaction, with one undo line. A selection must be explicit: a label
// or field selector, or --older-than. A value that cannot be read cannot
// be matched: it is named, left alone, and the outcome is incomplete.
func (s *Session) DeleteSelected(ctx context.Context, t Terminal, r SelectedRequest, o WriteOptions) error {
	if r.Resource == "" {
		return usageError("name the resource: `etcdpvc delete events -A --older-than 24h`", "delete with -l, --field-selector or --older-than needs a RESOURCE")
	}
	if r.LabelSelector == "" && r.FieldSelector == "" && r.OlderThan <= 0 {
		return usageError("select what goes: -l SELECTOR, --field-selector SELECTOR or --older-than DURATION; one object is RESOURCE NAME", "delete %s: no selection: a whole resource is never deleted by default", r.Resource)
	}
	if r.Namespace != "" && r.AllNamespaces {
		return usageError("", "-n and -A exclude each other")
	}
	scope, err := inspect.NewScope(s.Resolver, s.Options.Prefix, r.Resource, r.Namespace, r.AllNamespaces)
	if err != nil {
		return err
	}
	sel, err := s.listSelection(ctx, scope, r.LabelSelector, r.FieldSelector, 0)
	if err != nil {
		return err
	}
	why := selectionWords(r)
	cutoff := r.Now.Add(-r.OlderThan)
	type seen struct {
		object  bool
		plan    *surgery.Plan
		skipped string
	}
	mapFn := func(kv *store.KeyValue) (seen, error) {
		_, ns, name, parsed, ok := scope.Match(s.Options.Prefix, kv.Key)
		switch {
		case ok && !parsed:
			return seen{object: true, skipped: fmt.Sprintf("not deleted: %s names no single object, so the selection cannot be matched", kv.Key)}, nil
		case !ok || !sel.MatchesKey(ns, name):
			return seen{object: ok}, nil
		}
		held := *kv
		held.Value = append([]byte(nil), kv.Value...)
		cur, err := s.Planner.Open(ctx, held)
		if err != nil {
			return seen{object: true, skipped: fmt.Sprintf("not deleted: %s: its value cannot be read here, so the selection cannot be matched (%v)", kv.Key, err)}, nil
		}
		if !sel.Matches(ns, name, cur.Obj.Content) {
			return seen{object: true}, nil
		}
		if r.OlderThan > 0 {
			at := ObjectTime(cur.Obj.Content)
			if at.IsZero() || !at.Before(cutoff) {
				return seen{object: true}, nil
			}
		}
		p, err := s.Planner.PlanDeleteSelected(cur, why)
		if p != nil {
			p.Before = heldLight(cur)
		}
		return seen{object: true, plan: p}, err
	}
	var plans []*surgery.Plan
	var skipped []string
	read := 0
	var span store.Span
	rev, err := store.ListMap(ctx, s.Reader, scope.Prefix, store.ListOptions{PageSize: r.PageSize, OnCompacted: span.Record}, 0, mapFn, func(x seen) error {
		if x.object {
			read++
		}
		if x.plan != nil {
			plans = append(plans, x.plan)
		}
		if x.skipped != "" {
			skipped = append(skipped, x.skipped)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan %s: %w; nothing written", scope.Prefix, err)
	}
	if span.Spans() {
		t.Warn(span.Note())
	}
	for _, w := range skipped {
		t.Warn(w)
	}
	incomplete := func() error {
		if len(skipped) == 0 {
			return nil
		}
		return &hintedError{&incompleteError{msg: fmt.Sprintf("%s not deleted: the selection could not be matched against them (unreadable here, or naming no single object)",
			inspect.Count(len(skipped), "value was", "values were"))},
			"a value the apiserver cannot read is deleted by `etcdpvc delete --all-unreadable RESOURCE`"}
	}
	where := scopeName(scope)
	if len(plans) == 0 && len(skipped) > 0 {
		t.Print(fmt.Sprintf("nothing deleted: of the %s %s (at revision %d), %d could not be matched (%s); nothing written\n",
			inspect.Count(read, "object", "objects"), where, rev, len(skipped), why))
		return incomplete()
	}
	if len(plans) == 0 {
		t.Print(fmt.Sprintf("nothing to do: none of the %s %s (at revision %d) is selected (%s); nothing written\n",
			inspect.Count(read, "object", "objects"), where, rev, why))
		return incomplete()
	}
	var bytes int64
	leased := 0
	for _, p := range plans {
		bytes += int64(len(p.Before.KV.Value))
		if p.Lease != 0 {
			leased++
		}
	}
	t.Print(fmt.Sprintf("selected %d of the %s %s (%s): %d bytes of stored values\n",
		len(plans), inspect.Count(read, "object", "objects"), where, why, bytes))
	t.Warn("delete removes the selected objects from etcd directly: no finalizers run, admission is skipped, and nothing they own is garbage-collected until the garbage collector notices")
	if leased > 0 {
		t.Warn(fmt.Sprintf("%s attached to a lease (Events are, for their TTL); the undo creates each without its lease (nothing expires it then)", inspect.Count(leased, "of them is", "of them are")))
	}
	o.Brief = true
	if _, err := s.Write(ctx, t, plans, o); err != nil {
		return err
	}
	return incomplete()
}

// heldLight is what a selection's plan keeps of cur until the write: the
// key as stored (its value is the backup, its revision the compare), and
// of the object decoded only its kind, name, namespace and uid, which
// name it in the records and the apiserver's checks. Every plan of a
// selection is held until the one confirmation; the object decoded whole
// (typed, as content, its metadata with managedFields) took about eight
// times the value, which for the Events that fill a db is more memory than
// a control-plane node has.
func heldLight(cur *kubevalue.Current) *kubevalue.Current {
	light := &kubevalue.Current{KV: cur.KV, GR: cur.GR, Encrypted: cur.Encrypted, Stale: cur.Stale}
	if o := cur.Obj; o != nil {
		light.Obj = &codec.Object{Format: o.Format, GVK: o.GVK}
		if o.Meta != nil {
			light.Obj.Meta = &metav1.ObjectMeta{Name: o.Meta.Name, Namespace: o.Meta.Namespace, UID: o.Meta.UID}
		}
	}
	return light
}

// selectionWords says what a selection chose: "-l app=web, older than 1h0m0s".
func selectionWords(r SelectedRequest) string {
	var parts []string
	if r.LabelSelector != "" {
		parts = append(parts, "-l "+r.LabelSelector)
	}
	if r.FieldSelector != "" {
		parts = append(parts, "--field-selector "+r.FieldSelector)
	}
	if r.OlderThan > 0 {
		parts = append(parts, "older than "+r.OlderThan.String())
	}
	return strings.Join(parts, ", ")
}
