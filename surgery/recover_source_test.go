package surgery

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestFindRecoverSource finds the revision to recover from in a real
// etcd's history: the newest revision, a named revision, and none for a
// revision before the key existed or after its deletion, or a key never
// written.
func TestFindRecoverSource(t *testing.T) {
	_, s := startEtcd(t)
	ctx := testCtx(t)
	const (
		liveKey = "/registry/configmaps/demo/live"
		goneKey = "/registry/configmaps/demo/gone"
	)
	v := corpus(t, "configmaps__demo__web-config")
	del := func(key string) int64 {
		t.Helper()
		resp, err := s.Client().Delete(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	liveRev := create(t, s, liveKey, v)
	create(t, s, goneKey, v)
	goneDel := del(goneKey)

	for _, tc := range []struct {
		name      string
		key       string
		rev       int64
		wantRev   int64
		deletedAt int64
		err       string
	}{
		{name: "a live key: its newest revision", key: liveKey, wantRev: liveRev},
		{name: "a named revision", key: liveKey, rev: liveRev, wantRev: liveRev},
		{name: "a revision before the key existed", key: liveKey, rev: liveRev - 1,
			err: "recover " + liveKey + " at revision " + strconv.FormatInt(liveRev-1, 10) + ": "},
		{name: "a key never written", key: "/registry/configmaps/demo/never", err: "no revision with a value is held"},
		{name: "a deleted key named after its deletion", key: goneKey, rev: goneDel, err: "(the key did not exist then, or was deleted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, err := FindRecoverSource(ctx, s, tc.key, tc.rev)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("err = %v, want %q (not found)", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if from.KV.ModRevision != tc.wantRev || from.DeletedAt != tc.deletedAt {
				t.Errorf("from revision %d (deleted at %d), want %d (deleted at %d)", from.KV.ModRevision, from.DeletedAt, tc.wantRev, tc.deletedAt)
			}
		})
	}
}

// TestFindRecoverSourceDeleted finds the last value before a deletion.
func TestFindRecoverSourceDeleted(t *testing.T) {
	_, s := startEtcd(t)
	ctx := testCtx(t)
	const key = "/registry/persistentvolumeclaims/demo/www-web-0"
	create(t, s, key, corpus(t, pvcBound))
	resp, err := s.Client().Put(ctx, key, string(corpus(t, pvcFile)))
	if err != nil {
		t.Fatal(err)
	}
	last := resp.Header.Revision
	dresp, err := s.Client().Delete(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	from, err := FindRecoverSource(ctx, s, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if from.KV.ModRevision != last || from.DeletedAt != dresp.Header.Revision {
		t.Fatalf("from revision %d deleted at %d, want %d deleted at %d", from.KV.ModRevision, from.DeletedAt, last, dresp.Header.Revision)
	}
	// The recovered object is the terminating claim without its deletion.
	rec, err := Planner{}.Recovered(ctx, from.KV)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := codec.Decode(rec.Plain)
	if err != nil {
		t.Fatal(err)
	}
	md := obj.Content["metadata"].(map[string]any)
	if md["deletionTimestamp"] != nil || md["name"] != "www-web-0" || rec.GR.Resource != "persistentvolumeclaims" {
		t.Errorf("recovered %s metadata %v", rec.GR, md)
	}
}

func TestRecoverSetRequestResolve(t *testing.T) {
	var res resource.Resolver
	for _, tc := range []struct {
		name    string
		q       RecoverSetRequest
		check   func(t *testing.T, o RecoverSetOptions)
		errText string
		field   string
	}{
		{name: "a namespace", q: RecoverSetRequest{Namespace: "demo", Rev: 7, ReplaceDifferent: true},
			check: func(t *testing.T, o RecoverSetOptions) {
				if o.Namespace != "demo" || o.Rev != 7 || !o.ReplaceDifferent || o.Resource != nil {
					t.Errorf("options %+v", o)
				}
			}},
		{name: "a namespaced resource defaults to namespace default", q: RecoverSetRequest{Resource: "cm"},
			check: func(t *testing.T, o RecoverSetOptions) {
				if o.Resource == nil || o.Resource.Path != "configmaps" || o.InNamespace != "default" {
					t.Errorf("options %+v", o)
				}
			}},
		{name: "every namespace", q: RecoverSetRequest{Resource: "cm", InNamespace: "demo", AllNamespaces: true, Selector: "app=web"},
			check: func(t *testing.T, o RecoverSetOptions) {
				if o.InNamespace != "" || o.Selector == nil || o.Selector.String() != "app=web" {
					t.Errorf("options %+v", o)
				}
			}},
		{name: "a cluster-scoped resource has no namespace", q: RecoverSetRequest{Resource: "pv", InNamespace: "demo"},
			check: func(t *testing.T, o RecoverSetOptions) {
				if o.InNamespace != "" {
					t.Errorf("namespace %q for persistentvolumes", o.InNamespace)
				}
			}},
		{name: "include and exclude", q: RecoverSetRequest{Namespace: "demo", Include: []string{"events"}, Exclude: []string{"secrets", "cm"}},
			check: func(t *testing.T, o RecoverSetOptions) {
				if len(o.Include) != 1 || o.Include[0].Path != "events" || len(o.Exclude) != 2 || o.Exclude[1].Path != "configmaps" {
					t.Errorf("include %v exclude %v", o.Include, o.Exclude)
				}
			}},
		{name: "an unknown resource", q: RecoverSetRequest{Resource: "nosuch"}, field: "resource", errText: "nosuch"},
		{name: "an unknown --exclude", q: RecoverSetRequest{Namespace: "demo", Exclude: []string{"nosuch"}}, field: "exclude", errText: "nosuch: "},
		{name: "a bad selector", q: RecoverSetRequest{Resource: "cm", Selector: "a in ("}, field: "selector", errText: "a in (: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := tc.q.Resolve(res)
			if tc.field != "" {
				var re *RequestError
				if !errors.As(err, &re) || re.Field != tc.field || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want a %s error naming %q", err, tc.field, tc.errText)
				}
				if tc.field == "resource" && !errors.Is(err, resource.ErrUnknownResource) {
					t.Errorf("err = %v, want resource.ErrUnknownResource", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o)
		})
	}
}

func TestSetPlanTotals(t *testing.T) {
	plan := &SetPlan{Items: []*SetItem{
		{Action: ActionCreate}, {Action: ActionCreate}, {Action: ActionReplace},
		{Action: ActionIdentical}, {Action: ActionUnreadable},
		{Action: ActionSkipped, Reason: "events are recreated by their controllers"},
	}}
	tot := plan.Totals()
	if tot.Create != 2 || tot.Replace != 1 || tot.Unreadable != 1 || tot.Writes() != 3 || tot.Skipped != 2 {
		t.Errorf("totals %+v", tot)
	}
	if !strings.HasPrefix(tot.SkipReasons, "2 skipped (") || !strings.Contains(tot.SkipReasons, "1 exists-identical") {
		t.Errorf("skip reasons %q", tot.SkipReasons)
	}
	if got := (&SetPlan{}).Totals().SkipReasons; got != "0 skipped" {
		t.Errorf("empty plan: %q", got)
	}
	for _, tc := range []struct {
		name                string
		res                 *RecoverSetResult
		err                 error
		written, notWritten int
	}{
		{"all written", &RecoverSetResult{Written: make([]SetWritten, 3)}, nil, 3, 0},
		{"stopped after one", &RecoverSetResult{Written: make([]SetWritten, 1)}, ErrPartial, 1, 2},
		{"nothing written", nil, errors.New("refused"), 0, 3},
	} {
		out := plan.Outcome(tc.res, tc.err)
		if out.Written != tc.written || out.NotWritten != tc.notWritten || out.Unreadable != 1 {
			t.Errorf("%s: outcome %+v, want %d written, %d not written", tc.name, out, tc.written, tc.notWritten)
		}
	}
}
