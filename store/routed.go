package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Route sends every key under Prefix to Store: the kube-apiserver's
// --etcd-servers-overrides keeps some resources (events, say) in another
// etcd than the rest.
type Route struct {
	// Prefix is a key prefix ending in "/", such as "/registry/events/".
	Prefix string
	// Store holds the keys under Prefix.
	Store Reader
}

// Routed is a Reader and Writer over one main store and the stores of its
// routes, chosen by key prefix. Get, History and CompareAndSwap go to the
// store of the key's route, else to the main store. A List within one
// route's prefix goes to that store; a List spanning route prefixes lists
// the main store without the keys under them (the apiserver never reads
// those) and merges in, in key order, each route's store's keys. Revisions
// are per etcd: a spanning List returns the main store's revision, and a
// spanning List at a given revision is refused.
type Routed struct {
	main   Reader
	routes []Route // sorted by Prefix
}

var (
	_ Reader = (*Routed)(nil)
	_ Writer = (*Routed)(nil)
)

// NewRouted returns a Routed store. Each prefix must end in "/", and no
// prefix may contain another: a key belongs to one store only. Close
// closes main and every route's store.
func NewRouted(main Reader, routes []Route) (*Routed, error) {
	rs := append([]Route(nil), routes...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Prefix < rs[j].Prefix })
	for i, r := range rs {
		if !strings.HasSuffix(r.Prefix, "/") || r.Prefix == "/" {
			return nil, fmt.Errorf("route %q: a prefix must end in \"/\" and not be the whole keyspace", r.Prefix)
		}
		if r.Store == nil {
			return nil, fmt.Errorf("route %q: no store", r.Prefix)
		}
		if i > 0 && strings.HasPrefix(r.Prefix, rs[i-1].Prefix) {
			return nil, fmt.Errorf("routes %q and %q overlap", rs[i-1].Prefix, r.Prefix)
		}
	}
	return &Routed{main: main, routes: rs}, nil
}

// storeFor returns the store that holds key.
func (r *Routed) storeFor(key string) Reader {
	for _, rt := range r.routes {
		if strings.HasPrefix(key, rt.Prefix) {
			return rt.Store
		}
	}
	return r.main
}

// Get reads key from its store.
func (r *Routed) Get(ctx context.Context, key string, rev int64) (*KeyValue, error) {
	return r.storeFor(key).Get(ctx, key, rev)
}

// History reads key's history from its store.
func (r *Routed) History(ctx context.Context, key string, fn func(Event) error) (HistoryInfo, error) {
	return r.storeFor(key).History(ctx, key, fn)
}

// CompareAndSwap writes key in its store.
func (r *Routed) CompareAndSwap(ctx context.Context, key string, expect int64, value []byte, lease int64) (int64, error) {
	w, err := AsWriter(r.storeFor(key))
	if err != nil {
		return 0, err
	}
	return w.CompareAndSwap(ctx, key, expect, value, lease)
}

// List lists prefix across the stores that hold keys under it; see Routed.
func (r *Routed) List(ctx context.Context, prefix string, opts ListOptions, fn func(*KeyValue) error) (int64, error) {
	var inner []Route
	for _, rt := range r.routes {
		if strings.HasPrefix(prefix, rt.Prefix) {
			return rt.Store.List(ctx, prefix, opts, fn)
		}
		if strings.HasPrefix(rt.Prefix, prefix) {
			inner = append(inner, rt)
		}
	}
	if len(inner) == 0 {
		return r.main.List(ctx, prefix, opts, fn)
	}
	if opts.Revision != 0 {
		var ps []string
		for _, rt := range inner {
			ps = append(ps, rt.Prefix)
		}
		return 0, fmt.Errorf("list %s at revision %d: %s live in other etcds, whose revisions differ; list each of them on its own", prefix, opts.Revision, strings.Join(ps, ", "))
	}
	next := 0
	// flush lists the routes whose keys all sort before key ("" : all).
	flush := func(key string) error {
		for ; next < len(inner) && (key == "" || inner[next].Prefix < key); next++ {
			if _, err := inner[next].Store.List(ctx, inner[next].Prefix, opts, fn); err != nil {
				return &routeError{err}
			}
		}
		return nil
	}
	rev, err := r.main.List(ctx, prefix, opts, func(kv *KeyValue) error {
		for _, rt := range inner {
			if strings.HasPrefix(kv.Key, rt.Prefix) {
				return nil // left over from before the override; not the apiserver's
			}
		}
		// A key outside every route prefix that sorts after a prefix sorts
		// after every key under it.
		if err := flush(kv.Key); err != nil {
			return err
		}
		return fn(kv)
	})
	if err != nil {
		var re *routeError
		if errors.As(err, &re) {
			return rev, re.err
		}
		return rev, err
	}
	if err := flush(""); err != nil {
		return rev, err.(*routeError).err
	}
	return rev, nil
}

// routeError carries a route store's List error through the main store's
// List, so it is returned as the route store gave it.
type routeError struct{ err error }

func (e *routeError) Error() string { return e.err.Error() }
func (e *routeError) Unwrap() error { return e.err }

// Info describes the main store.
func (r *Routed) Info(ctx context.Context) (Info, error) {
	return r.main.Info(ctx)
}

// Close closes every store.
func (r *Routed) Close() error {
	errs := []error{r.main.Close()}
	for _, rt := range r.routes {
		errs = append(errs, rt.Store.Close())
	}
	return errors.Join(errs...)
}

// Watch follows key in the store that holds it. A prefix watch that spans
// route prefixes is refused: the stores' revisions are unrelated, so no
// one order of their changes exists (watch each route's prefix on its own).
func (r *Routed) Watch(ctx context.Context, key string, o WatchOptions, fn func(WatchEvent) error) error {
	s := r.storeFor(key)
	if o.Prefix {
		var inner []string
		for _, rt := range r.routes {
			if strings.HasPrefix(rt.Prefix, key) && !strings.HasPrefix(key, rt.Prefix) {
				inner = append(inner, rt.Prefix)
			}
		}
		if len(inner) > 0 {
			return fmt.Errorf("watch %s: %s live in other etcds, whose revisions differ: %w", key, strings.Join(inner, ", "), ErrSpansStores)
		}
	}
	w, ok := s.(Watcher)
	if !ok {
		return fmt.Errorf("watch %s: %w", key, ErrNoWatch)
	}
	return w.Watch(ctx, key, o, fn)
}
