package flows

import (
	"context"
	"fmt"
	"path"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

// UnreadableRequest is what `delete --all-unreadable` deletes: every value
// the apiserver cannot read of Resource ("" every resource) in Namespace,
// or in every namespace (AllNamespaces).
type UnreadableRequest struct {
	Resource      string
	Namespace     string
	AllNamespaces bool
	// PageSize is the keys per range request of the scan (live etcd).
	PageSize int64
}

// DeleteUnreadable deletes every value in the request's scope that the
// apiserver cannot read (surgery.Planner.PlanDeleteUnreadable), found by
// one scan, through Write: every diff, one confirmation, then each value
// backed up and removed by its own compare-and-delete, each recorded in the
// audit log, with one undo line for them all. With an apiserver, the LIST
// of each resource in each namespace touched must succeed once its last
// unreadable value is gone. Run again, it finds only what is left: a run
// interrupted part way is resumed so. Without a resource, a namespace or
// every namespace must be named: a scope this wide is never the default.
func (s *Session) DeleteUnreadable(ctx context.Context, t Terminal, r UnreadableRequest, o WriteOptions) error {
	if r.Resource == "" && r.Namespace == "" && !r.AllNamespaces {
		return usageError("", "delete --all-unreadable without a RESOURCE needs -n NAMESPACE or -A (every resource of a namespace, or of the cluster)")
	}
	scope, err := inspect.NewScope(s.Resolver, s.Options.Prefix, r.Resource, r.Namespace, r.AllNamespaces)
	if err != nil {
		return err
	}
	match := func(key string) bool {
		_, _, _, _, ok := scope.Match(s.Options.Prefix, key)
		return ok
	}
	scan, err := s.Planner.PlanDeleteUnreadable(ctx, s.Reader, scope.Prefix, match, r.PageSize)
	if err != nil {
		return err
	}
	where := scopeName(scope)
	if scan.Span.Spans() {
		t.Warn(scan.Span.Note())
	}
	if len(scan.Unknown) > 0 && s.Options.Verify == verify.Always && !s.IsFile() {
		// The apiserver judges what this tool cannot: each is checked
		// before the write (its GET, or its LIST, must fail), and any
		// it reads refuses the whole write.
		t.Note(fmt.Sprintf("%s not judged here: the apiserver is asked (--verify=always)", inspect.Count(len(scan.Unknown), "value is", "values are")))
		scan.Plans = append(scan.Plans, scan.Unjudged...)
		scan.Unknown = nil
	}
	for _, u := range scan.Unknown {
		t.Warn(fmt.Sprintf("not deleted: %v", u))
	}
	// unknown is the outcome when some values could not be judged.
	unknown := func() error {
		if len(scan.Unknown) == 0 {
			return nil
		}
		them := "them"
		if len(scan.Unknown) == 1 {
			them = "it"
		}
		return &hintedError{&incompleteError{msg: fmt.Sprintf("%s not deleted: whether the apiserver can read %s is not known here",
			inspect.Count(len(scan.Unknown), "value was", "values were"), them)}, scan.Unknown[0].Hint()}
	}
	readable := scan.Read - len(scan.Plans) - len(scan.Unknown)
	if len(scan.Plans) == 0 {
		if len(scan.Unknown) == 0 {
			t.Print(fmt.Sprintf("nothing to do: the apiserver can read every one of the %s %s (at revision %d); nothing written\n",
				inspect.Count(scan.Read, "object", "objects"), where, scan.Revision))
		} else {
			t.Print(fmt.Sprintf("nothing deleted: of the %s %s (at revision %d), %d can be read and %d were not judged\n",
				inspect.Count(scan.Read, "object", "objects"), where, scan.Revision, readable, len(scan.Unknown)))
		}
		return unknown()
	}
	t.Note(fmt.Sprintf("read %s %s: the apiserver cannot read %d of them", inspect.Count(scan.Read, "object", "objects"), where, len(scan.Plans)))
	if _, err := s.Write(ctx, t, scan.Plans, o); err != nil {
		return err
	}
	return unknown()
}

// scopeName says what a scope covers: "of secrets in namespace demo",
// "in namespace demo", "of secrets in every namespace".
func scopeName(k inspect.Scope) string {
	what := "of every resource"
	if k.Resource != nil {
		what = "of " + k.Resource.Plural
		if k.Resource.Group != "" {
			what += "." + k.Resource.Group
		}
	}
	switch {
	case k.Resource != nil && !k.Resource.Namespaced:
		return what
	case k.Namespace != "":
		return what + " in namespace " + k.Namespace
	}
	return what + " in every namespace"
}

// verifyGroup is the resource and namespace of a delete of a value the
// apiserver could not read, whose check after the write is the LIST of
// that resource in that namespace; ok is false for any other plan.
func verifyGroup(p *surgery.Plan) (group string, ok bool) {
	if !p.Delete || p.Before == nil || p.Before.Obj != nil {
		return "", false
	}
	// The key without its name: the resource's path and the namespace.
	return p.GR.String() + "\x00" + path.Dir(p.Key), true
}
