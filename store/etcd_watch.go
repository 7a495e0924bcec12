package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

// Watcher is a store whose changes can be followed as they are made: a
// live etcd cluster (etcd's watch). Db files have no watch.
type Watcher interface {
	// Watch calls fn for each change under key (every key under it with
	// o.Prefix), in revision order, until ctx is done, fn fails or o.Until
	// is passed. A start revision etcd has compacted away, or a
	// compaction that removes revisions before they reach the watch, is
	// an error matching ErrCompacted that says which revisions are lost:
	// a watch never skips a change silently.
	Watch(ctx context.Context, key string, o WatchOptions, fn func(WatchEvent) error) error
}

// WatchOptions tune Watch.
type WatchOptions struct {
	// Prefix watches every key under the key rather than the key alone.
	Prefix bool
	// From is the first revision reported (0: changes after the watch
	// starts). Etcd replays the revisions it still holds from From on.
	From int64
	// Until ends the watch once every change up to this revision has
	// been reported (0: follow until ctx is done).
	Until int64
	// NoPrev leaves out the value before each change (WatchEvent.Prev
	// stays nil), which etcd otherwise reads for every event: for a
	// watch that only counts changes.
	NoPrev bool
	// Started, if set, is called once, before the first event, with the
	// store's revision when the watch starts: changes above it are made
	// while the watch runs.
	Started func(revision int64)
	// Note, if set, is told what a user following the watch must know
	// while it runs: the watch was cut and resumed, etcd stopped answering
	// and answers again.
	Note func(msg string)
}

// WatchEvent is one change a watch reports.
type WatchEvent struct {
	Event
	// Prev is the key's value before the change; nil for a creation, and
	// when etcd no longer holds the previous revision.
	Prev *KeyValue
	// Live is true for a change made after the watch started (above the
	// revision Started was given), false for one etcd replays.
	Live bool
}

// watchQuiet is how long a watch waits for any answer from etcd (an event
// or a progress notification) before it tells o.Note that etcd is silent.
// It waits on: a watch is followed until the user ends it.
const watchQuiet = 15 * time.Second

// Watch follows etcd's watch on key (see Watcher). The events carry the
// previous value (etcd's prev_kv). A watch cut by etcd (no leader, a
// member restarting) is resumed from the revision after the last change
// reported, and o.Note is told; a resumed watch whose next revision was
// compacted meanwhile fails with ErrCompacted naming the revisions lost.
func (e *Etcd) Watch(ctx context.Context, key string, o WatchOptions, fn func(WatchEvent) error) error {
	op := "watch " + key
	if o.Prefix {
		op += " (prefix)"
	}
	resp, err := e.get(ctx, key, clientv3.WithCountOnly())
	if err != nil {
		return rpcError(op, err)
	}
	startRev := resp.Header.Revision
	if o.Started != nil {
		o.Started(startRev)
	}
	next := startRev + 1
	if o.From > 0 {
		next = o.From
	}
	if o.Until > 0 && next > o.Until {
		return nil
	}
	note := o.Note
	if note == nil {
		note = func(string) {}
	}
	streams := &streamCounter{WatchClient: pb.NewWatchClient(e.cli.ActiveConnection())}
	w := clientv3.NewWatchFromWatchClient(streams, e.cli) // clientv3.NewWatcher, counting streams
	defer w.Close()
	reported := false // a change has been reported: a compaction now loses some
	for {
		last, done, err := e.watchOnce(ctx, w, streams, key, o, next, startRev, reported, note, fn)
		if last >= next {
			next, reported = last+1, true
		}
		if done || err != nil {
			return wrapOp(op, err)
		}
		// The watch was cut: say so and resume after the last change.
		note(fmt.Sprintf("the watch was cut by etcd; resuming from revision %d", next))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(watchResumePause):
		}
	}
}

// watchResumePause is how long Watch waits before it resumes a cut watch.
const watchResumePause = time.Second

// wrapOp puts op before err (nil stays nil; a canceled context is the end
// of the watch the user asked for, not an error).
func wrapOp(op string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}

// watchOnce runs one etcd watch from revision next. It returns the last
// revision reported, whether the watch is over (ctx done, Until passed)
// and why it failed; a watch etcd cut without failing it returns neither.
func (e *Etcd) watchOnce(ctx context.Context, w clientv3.Watcher, streams *streamCounter, key string, o WatchOptions, next, startRev int64, reported bool,
	note func(string), fn func(WatchEvent) error) (last int64, done bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if e.cfg.Consistency == Linearizable {
		wctx = clientv3.WithRequireLeader(wctx)
	}
	opts := []clientv3.OpOption{clientv3.WithRev(next)}
	if !o.NoPrev {
		opts = append(opts, clientv3.WithPrevKV())
	}
	if o.Prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	wch := w.Watch(wctx, key, opts...)
	quiet := time.NewTimer(watchQuiet)
	defer quiet.Stop()
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
	go requestProgress(wctx, w)
	// silent: etcd has not answered for watchQuiet; lost: the connection
	// to etcd is down. Each was said, and is said to be over at the next
	// answer.
	silent, lost := false, false
	// opened is how many watch streams the client had opened when this
	// watch first answered (0: it has not yet): a later one is clientv3
	// reopening the watch's stream, which etcd cut.
	var opened int64
	resumedFrom := func() int64 {
		if last >= next {
			return last + 1
		}
		return next
	}
	for {
		select {
		case resp, ok := <-wch:
			if !ok {
				return last, ctx.Err() != nil, nil
			}
			switch {
			case lost:
				note(fmt.Sprintf("etcd answers again: the watch resumed from revision %d", resumedFrom()))
			case silent:
				note("etcd answers again")
			}
			silent, lost = false, false
			if opened == 0 {
				opened = streams.opened.Load()
			}
			quiet.Reset(watchQuiet)
			if resp.CompactRevision != 0 {
				return last, true, compactedWatch(next, last, resp.CompactRevision, reported)
			}
			if err := resp.Err(); err != nil {
				if resp.Canceled && ctx.Err() == nil && !errors.Is(err, context.Canceled) && transientWatchError(err) {
					return last, false, nil
				}
				if ctx.Err() != nil {
					return last, true, nil
				}
				return last, true, rpcError(fmt.Sprintf("watch from revision %d", next), err)
			}
			for _, ev := range resp.Events {
				if o.Until > 0 && ev.Kv.ModRevision > o.Until {
					return last, true, nil
				}
				we := WatchEvent{Event: event(ev), Live: ev.Kv.ModRevision > startRev}
				if ev.PrevKv != nil {
					we.Prev = keyValue(ev.PrevKv, true)
				}
				if ev.Type == mvccpb.DELETE && ev.PrevKv != nil {
					// etcd's delete event carries the key only.
					we.KV.Key = string(ev.PrevKv.Key)
				}
				if err := fn(we); err != nil {
					return last, true, err
				}
				last = ev.Kv.ModRevision
				reported = true
				if o.Until > 0 && last == o.Until {
					return last, true, nil
				}
			}
			if o.Until > 0 && resp.IsProgressNotify() && resp.Header.Revision >= o.Until {
				return last, true, nil
			}
		case <-tick.C:
			// clientv3 resumes a watch whose stream broke by itself, and
			// says nothing: the connection's state tells.
			if e.cli.ActiveConnection().GetState() != connectivity.Ready && !lost {
				note("lost the connection to etcd: the watch resumes where it stopped when etcd answers again, skipping no change (Ctrl-C ends the watch)")
				lost = true
			}
			if n := streams.opened.Load(); opened > 0 && n > opened {
				// Another member answers: the connection was not lost.
				opened = n
				if !lost {
					note("etcd cut the watch's stream (a member going away): it was reopened, on another member when --endpoints names several, and resumed after the last change printed, skipping none")
				}
			}
		case <-quiet.C:
			if !silent && !lost {
				note(fmt.Sprintf("etcd has not answered for %v; still waiting (Ctrl-C ends the watch)", watchQuiet))
				silent = true
			}
			quiet.Reset(watchQuiet)
		case <-ctx.Done():
			return last, true, nil
		}
	}
}

// streamCounter is the watch client of a watch (clientv3's own, counting
// the streams it opens): clientv3 reopens a stream etcd cut, on another
// member when it can, without a word to the watcher; a new stream is what
// tells.
type streamCounter struct {
	pb.WatchClient
	opened atomic.Int64
}

// Watch opens a watch stream.
func (s *streamCounter) Watch(ctx context.Context, opts ...grpc.CallOption) (pb.Watch_WatchClient, error) {
	ws, err := s.WatchClient.Watch(ctx, opts...)
	if err == nil {
		s.opened.Add(1)
	}
	return ws, err
}

// requestProgress asks etcd for a progress notification on the watch of
// ctx every progressInterval until ctx is done: an idle watch that is
// followed gets an answer (once it has caught up; etcd ignores the
// request before), which tells that etcd still answers. It runs apart from
// the watch's loop, since the request waits while clientv3 reconnects.
func requestProgress(ctx context.Context, w clientv3.Watcher) {
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_ = w.RequestProgress(ctx)
		}
	}
}

// transientWatchError reports whether a watch canceled by etcd with err
// may be resumed: leader loss and a member going away, not a refusal
// (permission denied, a request too large).
func transientWatchError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"no leader", "leader changed", "stopped", "unavailable", "connection", "transport", "EOF"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// compactedWatch is the error of a watch etcd answers with its compact
// revision: at its start (nothing reported yet and next at or below it)
// the revisions asked for are gone; later, the changes from the revision
// after the last one reported up to the compaction are lost.
func compactedWatch(next, last, compactRev int64, reported bool) error {
	if !reported {
		return fmt.Errorf("revision %d is compacted: the oldest revision etcd holds is %d (compaction at revision %d): %w",
			next, compactRev+1, compactRev, ErrCompacted)
	}
	return fmt.Errorf("etcd compacted revision %d before the watch had read revisions %d to %d: changes in them may be lost, so the watch stops: %w",
		compactRev, last+1, compactRev, ErrCompacted)
}
