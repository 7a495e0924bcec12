package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// rpc runs one RPC under CommandTimeout.
func (e *Etcd) rpc(ctx context.Context, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.CommandTimeout)
	defer cancel()
	return fn(ctx)
}

// get runs one range request with the configured consistency.
func (e *Etcd) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	var resp *clientv3.GetResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.Get(ctx, key, append(append([]clientv3.OpOption(nil), opts...), e.read...)...)
		return err
	})
	return resp, err
}

// Get returns key at revision rev (0: latest), read with the configured
// consistency. A missing key gives an error wrapping ErrNotFound; a
// compacted revision one wrapping ErrCompacted.
func (e *Etcd) Get(ctx context.Context, key string, rev int64) (*KeyValue, error) {
	op := "get " + key
	if rev > 0 {
		op = fmt.Sprintf("get %s at revision %d", key, rev)
	}
	resp, err := e.get(ctx, key, clientv3.WithRev(rev))
	if err != nil {
		return nil, rpcError(op, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	return keyValue(resp.Kvs[0], true), nil
}

// List reads the keys under prefix page by page, each page continuing from
// the last key + "\x00" and pinned to one revision (the first page's, or
// opts.Revision).
//
// A compaction past that revision while the list runs (kube-apiserver
// compacts every 5 minutes) fails the next page. With opts.OnCompacted set
// and opts.Revision 0, List then continues from the key after the last one
// it handed fn, at the store's current revision, as kube-apiserver's
// reflectors relist: every key is handed over once, each as of the
// revision its page was read at, and OnCompacted is told each revision
// the read moves to. The page after a compaction is read at the latest
// revision, which no compaction can remove, and pins the pages after it:
// the read always moves on (maxRelists bounds compactions met in a row
// without a key read, which that leaves for a store that loses pages).
// Otherwise a compaction after some keys were handed over fails List with
// a *CompactedError (which matches ErrCompacted), saying how far it got.
//
// Each page is read without making the server count the rest of the range.
// A unary Range with a limit makes etcd count every remaining key in the
// range on every page, so paging N keys costs O(N²/page) server CPU (on
// 100k keys that was 80% of the listing time, and it grows quadratically:
// the last thing a sick cluster needs). On etcd ≥ 3.7 a page is therefore
// read with the RangeStream RPC, which the server answers in chunks from
// short read transactions and never counts; the client stops the stream as
// soon as it has the page. An older etcd answers Unimplemented and pages
// fall back to unary Range requests.
//
// It returns the revision the list started at.
func (e *Etcd) List(ctx context.Context, prefix string, opts ListOptions, fn func(*KeyValue) error) (int64, error) {
	op := "list " + prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return 0, fmt.Errorf("list %q: prefix must end in \"/\" (use get for a single key)", prefix)
	}
	start, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	if prefix == "" {
		start, end = "\x00", "\x00" // every key: [\x00, ∞)
	}
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	rev := opts.Revision
	if rev == 0 {
		// Pin every page to the current revision: a single-key read is the
		// cheapest way to learn it.
		resp, err := e.get(ctx, start)
		if err != nil {
			return 0, rpcError(op, err)
		}
		rev = resp.Header.Revision
	}
	first := rev
	var (
		read    int64  // keys handed to fn
		lastKey string // the last of them
		relists int    // compactions met since a key was last handed over
	)
	count := func(kv *KeyValue) error {
		if err := fn(kv); err != nil {
			return err
		}
		read++
		lastKey = kv.Key
		relists = 0
		return nil
	}
	stream := !e.noStream.Load()
	// relist: the last page met a compaction; the next is read at the
	// latest revision (a compaction cannot remove it), which then pins
	// the rest.
	relist := false
	for {
		var (
			last string
			more bool
			err  error
		)
		if relist {
			var at int64
			last, more, at, err = e.rangePage(ctx, start, end, 0, pageSize, opts.KeysOnly, count)
			if err == nil {
				relist = false
				opts.OnCompacted(rev, at)
				rev = at
			}
		} else if stream {
			last, more, err = e.streamPage(ctx, start, end, rev, pageSize, opts.KeysOnly, count)
			if status.Code(errors.Unwrap(err)) == codes.Unimplemented || status.Code(err) == codes.Unimplemented {
				e.noStream.Store(true)
				stream = false
				continue
			}
		} else {
			last, more, _, err = e.rangePage(ctx, start, end, rev, pageSize, opts.KeysOnly, count)
		}
		if err != nil {
			var cb *callbackError
			if errors.As(err, &cb) {
				return first, fmt.Errorf("%s: %w", op, cb.err)
			}
			if !errors.Is(err, rpctypes.ErrCompacted) {
				return first, rpcError(fmt.Sprintf("%s at revision %d", op, rev), err)
			}
			if read > 0 {
				start = lastKey + "\x00"
			}
			if opts.OnCompacted == nil || opts.Revision != 0 {
				if read == 0 {
					return first, rpcError(fmt.Sprintf("%s at revision %d", op, rev), err)
				}
				return first, &CompactedError{Op: op, Revision: rev, Read: read, Last: lastKey}
			}
			if relists++; relists > maxRelists {
				return first, fmt.Errorf("%s: etcd compacted each revision read %d times in a row before a key could be read: %w", op, maxRelists, ErrCompacted)
			}
			relist = true
			continue
		}
		if !more {
			return first, nil
		}
		start = last + "\x00"
	}
}

// CompactedError is a List of one revision that etcd compacted away after
// part of it had been handed to the callback: Read keys, up to Last, were
// read at Revision; the rest of that revision is gone. It matches
// ErrCompacted.
type CompactedError struct {
	// Op is the read ("list /registry/").
	Op       string
	Revision int64
	Read     int64
	Last     string
}

// callbackError carries an error returned by List's callback, so that it
// is not mistaken for an RPC error.
type callbackError struct{ err error }

// rangePage reads one page with a unary Range.
// rangePage reads one page with a unary range at rev (0: the latest, which
// no compaction can remove; at is then the revision read).
func (e *Etcd) rangePage(ctx context.Context, start, end string, rev, pageSize int64, keysOnly bool, fn func(*KeyValue) error) (last string, more bool, at int64, err error) {
	ropts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize), clientv3.WithRev(rev)}
	if keysOnly {
		ropts = append(ropts, clientv3.WithKeysOnly())
	}
	resp, err := e.get(ctx, start, ropts...)
	if err != nil {
		return "", false, 0, err
	}
	for _, kv := range resp.Kvs {
		if err := fn(keyValue(kv, !keysOnly)); err != nil {
			return "", false, 0, &callbackError{err}
		}
	}
	at = resp.Header.Revision
	if !resp.More || len(resp.Kvs) == 0 {
		return "", false, at, nil
	}
	return string(resp.Kvs[len(resp.Kvs)-1].Key), true, at, nil
}

// streamPage reads one page of at most pageSize keys with a RangeStream
// and stops the stream when the page is full. more is true when the page
// filled up before the range ended. A stream that fails part way returns
// the last key handed to fn with the error.
func (e *Etcd) streamPage(ctx context.Context, start, end string, rev, pageSize int64, keysOnly bool, fn func(*KeyValue) error) (last string, more bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.CommandTimeout)
	defer cancel()
	ropts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithRev(rev)}
	if keysOnly {
		ropts = append(ropts, clientv3.WithKeysOnly())
	}
	ch, err := e.cli.GetStream(ctx, start, append(ropts, e.read...)...)
	if err != nil {
		return "", false, err
	}
	// drain lets the stream's goroutine finish after a cancel.
	drain := func() {
		cancel()
		for range ch {
		}
	}
	var n int64
	for r := range ch {
		if err := r.Err(); err != nil {
			drain()
			if n > 0 && status.Code(err) == codes.Unimplemented {
				return last, false, fmt.Errorf("range stream failed mid-page: %w", err)
			}
			return last, false, err
		}
		for _, kv := range r.Kvs {
			if n == pageSize {
				drain()
				return last, true, nil
			}
			if err := fn(keyValue(kv, !keysOnly)); err != nil {
				drain()
				return "", false, &callbackError{err}
			}
			last = string(kv.Key)
			n++
		}
	}
	return last, false, nil
}

// History calls fn for every revision of key that etcd still holds, oldest
// first, deletions included (Event.Deleted, KV.ModRevision the revision of
// the delete). It reads the store's revision first, then replays a watch
// from revision 1 up to that revision.
//
// When history has been compacted, HistoryInfo.CompactRevision is set and
// the history starts with the key's value as of the compact revision (its
// ModRevision may be older: compaction keeps each live key's newest
// revision), followed by every later event. A compaction that lands while
// the history is being read fails History with ErrCompacted, rather than
// leave a gap.
//
// The watch is replayed by the server from its backend; that is cheap on a
// cluster compacted regularly (kube-apiserver compacts every 5 minutes).
// Each wait for the server is bounded by CommandTimeout.
func (e *Etcd) History(ctx context.Context, key string, fn func(Event) error) (HistoryInfo, error) {
	op := "history " + key
	resp, err := e.get(ctx, key, clientv3.WithCountOnly())
	if err != nil {
		return HistoryInfo{}, rpcError(op, err)
	}
	info := HistoryInfo{Revision: resp.Header.Revision}

	w := clientv3.NewWatcher(e.cli)
	defer w.Close()
	emitted := false
	emit := func(ev Event) error {
		emitted = true
		return fn(ev)
	}
	start := int64(1)
	for attempt := 0; ; attempt++ {
		if start > info.Revision {
			return info, nil
		}
		compactRev, err := e.replay(ctx, w, key, start, info.Revision, emit)
		if err != nil {
			return info, fmt.Errorf("%s: %w", op, err)
		}
		if compactRev == 0 {
			return info, nil
		}
		if emitted {
			return info, fmt.Errorf("%s: compacted at revision %d while reading: %w", op, compactRev, ErrCompacted)
		}
		if attempt == 5 {
			return info, fmt.Errorf("%s: compaction keeps moving (revision %d): %w", op, compactRev, ErrCompacted)
		}
		info.CompactRevision = compactRev
		// The key's state at the compact revision is still held.
		kv, err := e.Get(ctx, key, compactRev)
		switch {
		case errors.Is(err, ErrCompacted):
			start = compactRev // compacted again: learn the new revision
			continue
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return info, fmt.Errorf("%s: %w", op, err)
		default:
			if err := emit(Event{KV: *kv}); err != nil {
				return info, fmt.Errorf("%s: %w", op, err)
			}
		}
		start = compactRev + 1
	}
}

// replay watches key from revision start and calls fn for each event up to
// revision until. It returns the compact revision when start has been
// compacted away (having called fn for nothing).
func (e *Etcd) replay(ctx context.Context, w clientv3.Watcher, key string, start, until int64, fn func(Event) error) (compactRev int64, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if e.cfg.Consistency == Linearizable {
		wctx = clientv3.WithRequireLeader(wctx)
	}
	wch := w.Watch(wctx, key, clientv3.WithRev(start))
	idle := time.NewTimer(e.cfg.CommandTimeout)
	defer idle.Stop()
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
	for {
		select {
		case resp, ok := <-wch:
			if !ok {
				if err := ctx.Err(); err != nil {
					return 0, err
				}
				return 0, fmt.Errorf("watch from revision %d closed: %w", start, ErrUnavailable)
			}
			if resp.CompactRevision != 0 {
				return resp.CompactRevision, nil
			}
			if err := resp.Err(); err != nil {
				return 0, rpcError(fmt.Sprintf("watch from revision %d", start), err)
			}
			for _, ev := range resp.Events {
				if ev.Kv.ModRevision > until {
					return 0, nil
				}
				if err := fn(event(ev)); err != nil {
					return 0, err
				}
				if ev.Kv.ModRevision == until {
					return 0, nil
				}
			}
			if resp.IsProgressNotify() && resp.Header.Revision >= until {
				return 0, nil
			}
			idle.Reset(e.cfg.CommandTimeout)
		case <-tick.C:
			// Answered only once the watch has caught up; ignored before.
			_ = w.RequestProgress(wctx)
		case <-idle.C:
			return 0, fmt.Errorf("watch from revision %d: no progress in %v: %w: %w", start, e.cfg.CommandTimeout, ErrUnavailable, context.DeadlineExceeded)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// event converts a watch event.
func event(ev *clientv3.Event) Event {
	if ev.Type == mvccpb.DELETE {
		return Event{KV: KeyValue{Key: string(ev.Kv.Key), ModRevision: ev.Kv.ModRevision}, Deleted: true}
	}
	return Event{KV: *keyValue(ev.Kv, true)}
}

// keyValue converts a clientv3 key-value.
func keyValue(kv *mvccpb.KeyValue, withValue bool) *KeyValue {
	out := &KeyValue{
		Key:            string(kv.Key),
		CreateRevision: kv.CreateRevision,
		ModRevision:    kv.ModRevision,
		Version:        kv.Version,
		Lease:          kv.Lease,
	}
	if out.Version == 0 && out.CreateRevision != 0 && out.CreateRevision == out.ModRevision {
		// kine counts no versions: every key it serves has Version 0.
		// One not written since its creation has Version 1, as etcd
		// would say; the others keep 0, a count not known.
		out.Version = 1
	}
	if withValue {
		out.Value = kv.Value
		if out.Value == nil {
			out.Value = []byte{}
		}
	}
	return out
}

// compactRevision returns the store's compact revision (0 if none).
func (e *Etcd) compactRevision(ctx context.Context) (int64, error) {
	_, err := e.get(ctx, "/", clientv3.WithCountOnly(), clientv3.WithRev(1))
	switch {
	case err == nil:
		return 0, nil
	case !errors.Is(err, rpctypes.ErrCompacted):
		return 0, rpcError("read at revision 1", err)
	}
	w := clientv3.NewWatcher(e.cli)
	defer w.Close()
	wctx, cancel := context.WithTimeout(ctx, e.cfg.CommandTimeout)
	defer cancel()
	for resp := range w.Watch(wctx, "/", clientv3.WithRev(1)) {
		if resp.CompactRevision != 0 {
			return resp.CompactRevision, nil
		}
		if err := resp.Err(); err != nil {
			return 0, rpcError("watch from revision 1", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("watch from revision 1: no compaction reported: %w: %w", ErrUnavailable, context.DeadlineExceeded)
}
