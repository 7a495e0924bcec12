package inspect

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/etcdpvc/etcdpvc/internal/regular"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// The lookups of names for shell completion: resource names, object names
// and namespaces read from etcd, claims as NAMESPACE/NAME, and backup
// files. Each returns candidates starting with what is being typed; the
// shell glue (scripts, parsing the command line) is the CLI's.

// ResourceNames lists every built-in resource's plural and short names, as
// kubectl spells them: RESOURCE.GROUP when the plural alone names another
// resource.
func ResourceNames() []string {
	var out []string
	for _, r := range resource.All() {
		name := r.Plural
		if r.Group != "" && !resourceNameUnique(r) {
			name = r.String()
		}
		out = append(out, name)
		out = append(out, r.ShortNames...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// resourceNameUnique reports whether r's plural alone names it.
func resourceNameUnique(r resource.Resource) bool {
	found, err := resource.Lookup(r.Plural)
	return err == nil && found.Group == r.Group
}

// NameQuery asks for the names of one resource's objects.
type NameQuery struct {
	// Prefix is the kube-apiserver's --etcd-prefix.
	Prefix string
	// Resource is the resource as typed ("pvc", "namespaces").
	Resource string
	// Namespace is the namespace to list; "" is "default" for a namespaced
	// resource unless AllNamespaces. It is ignored for a cluster-scoped
	// resource.
	Namespace     string
	AllNamespaces bool
	// Typed is the start of the name being typed.
	Typed string
	// Max bounds the names returned (0: no bound).
	Max int
}

// errEnoughNames stops a listing once it has Max names.
var errEnoughNames = errors.New("enough names")

// CompleteNames lists the names of q's objects starting with q.Typed, in
// key order, at most q.Max of them. An unknown resource is an error.
func CompleteNames(ctx context.Context, r store.Reader, resolver resource.Resolver, q NameQuery) ([]string, error) {
	res, err := resolver.Lookup(q.Resource)
	if err != nil {
		return nil, err
	}
	ns := q.Namespace
	if !res.Namespaced {
		ns = ""
	} else if ns == "" && !q.AllNamespaces {
		ns = "default"
	}
	return listNames(ctx, r, q.Prefix, res.ListPrefix(q.Prefix, ns), q.Max, func(_, name string) (string, bool) {
		return name, strings.HasPrefix(name, q.Typed)
	})
}

// CompleteClaims lists persistent volume claims as NAMESPACE/NAME starting
// with typed, at most max of them (0: no bound): those of the namespace
// typed once typed holds a "/", else those of every namespace.
func CompleteClaims(ctx context.Context, r store.Reader, prefix, typed string, max int) ([]string, error) {
	list := prefix + "/persistentvolumeclaims/"
	if ns, _, ok := strings.Cut(typed, "/"); ok {
		list += ns + "/"
	}
	return listNames(ctx, r, prefix, list, max, func(ns, name string) (string, bool) {
		c := ns + "/" + name
		return c, strings.HasPrefix(c, typed)
	})
}

// listNames lists the keys under list and keeps what keep makes of their
// namespace and name, at most max (0: no bound).
func listNames(ctx context.Context, r store.Reader, prefix, list string, max int, keep func(ns, name string) (string, bool)) ([]string, error) {
	var out []string
	page := int64(max)
	_, err := r.List(ctx, list, store.ListOptions{KeysOnly: true, PageSize: page, OnCompacted: anyRevision}, func(kv *store.KeyValue) error {
		_, ns, name, ok := resource.ParseKey(prefix, kv.Key)
		if !ok {
			return nil
		}
		if c, ok := keep(ns, name); ok {
			out = append(out, c)
		}
		if max > 0 && len(out) >= max {
			return errEnoughNames
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnoughNames) {
		return nil, err
	}
	return out, nil
}

// CompleteBackups lists backup files (*.json, not hidden), newest first,
// as typed would continue: those of the directory typed once typed holds
// a "/", else those of dir as absolute paths.
func CompleteBackups(dir, typed string) ([]string, error) {
	var prefix string
	if i := strings.LastIndex(typed, "/"); i >= 0 {
		prefix = typed[:i+1]
		dir = prefix
	} else {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		prefix = dir + string(filepath.Separator)
	}
	entries, err := regular.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, en := range entries {
		if n := en.Name(); en.Type().IsRegular() && strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	// Backup names start with their UTC timestamp: newest first.
	slices.Sort(names)
	slices.Reverse(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out, nil
}

// anyRevision is the store.ListOptions.OnCompacted of the reads that may
// span revisions without saying so: completion's names, and doctor's
// samples and counts of the latest state (a first key, a Secret, how many
// Secrets are stored in the clear), each key read once at whichever
// revision its page was read at.
func anyRevision(from, to int64) {}
