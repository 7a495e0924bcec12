package kubevalue

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// NotFoundError reports that a named object does not exist, naming it as
// kubectl does, and the other namespaces that hold an object of the same
// resource and name. It matches store.ErrNotFound.
type NotFoundError struct {
	Resource  resource.Resource
	Namespace string
	Name      string
	// Rev is the revision read (0: the latest).
	Rev int64
	// Elsewhere are the other namespaces holding an object of that
	// resource and name (searched at the latest revision only).
	Elsewhere []string
	// Err is the store's error.
	Err error
}

func (e *NotFoundError) what() string {
	if e.Resource.Singular != "" && e.Resource.Group == "" {
		return e.Resource.Singular
	}
	return e.Resource.String()
}

// Error returns, for example, "persistentvolumeclaim www-web-0 not found
// in namespace default; it exists in: demo".
func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s not found", e.what(), e.Name)
	if e.Namespace != "" {
		fmt.Fprintf(&b, " in namespace %s", e.Namespace)
	}
	if e.Rev != 0 {
		fmt.Fprintf(&b, " at revision %d", e.Rev)
	}
	if len(e.Elsewhere) > 0 {
		fmt.Fprintf(&b, "; it exists in: %s", strings.Join(e.Elsewhere, ", "))
	}
	return b.String()
}

// Unwrap returns the store's error (it wraps store.ErrNotFound).
func (e *NotFoundError) Unwrap() error { return e.Err }

// Hint says what to try next.
func (e *NotFoundError) Hint() string {
	list := "etcdpvc ls " + e.Resource.String()
	switch {
	case len(e.Elsewhere) == 1:
		return "name the namespace: -n " + e.Elsewhere[0]
	case len(e.Elsewhere) > 1:
		return "name one of those namespaces with -n"
	case e.Rev != 0:
		ns := ""
		if e.Namespace != "" {
			ns = " -n " + e.Namespace
		}
		return "`etcdpvc history " + e.Resource.String() + " " + e.Name + ns + "` lists the revisions held"
	case e.Namespace != "":
		return "`" + list + " -A` lists the names in every namespace"
	default:
		return "`" + list + "` lists the names"
	}
}

// NotFound returns the error for a key that a read did not find: err (the
// store's error, wrapping store.ErrNotFound) as a *NotFoundError naming the
// object, when key names one under prefix. At the latest revision (rev 0),
// other namespaces are searched for the same name with a keys-only
// listing; a failure of that search is ignored.
func NotFound(ctx context.Context, r store.Reader, prefix, key string, rev int64, err error) error {
	res, ns, name, ok := resource.ParseKey(prefix, key)
	if !ok {
		return fmt.Errorf("read %s: %w", key, err)
	}
	nf := &NotFoundError{Resource: res, Namespace: ns, Name: name, Rev: rev, Err: err}
	if !res.Namespaced || rev != 0 {
		return nf
	}
	var elsewhere []string
	_, lerr := r.List(ctx, res.ListPrefix(prefix, ""), store.ListOptions{KeysOnly: true, OnCompacted: AcrossCompaction}, func(kv *store.KeyValue) error {
		if _, kns, kname, ok := resource.ParseKey(prefix, kv.Key); ok && kname == name && kns != ns {
			elsewhere = append(elsewhere, kns)
		}
		return nil
	})
	if lerr == nil {
		slices.Sort(elsewhere)
		nf.Elsewhere = elsewhere
	}
	return nf
}

// AcrossCompaction is the store.ListOptions.OnCompacted of the reads of
// the latest state that may span revisions: which keys exist, the volumes
// a warning is about, the namespaces that hold a name not found; each key
// is read once, as of the revision its page was read at.
func AcrossCompaction(from, to int64) {}
