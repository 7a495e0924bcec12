package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// truthEvent is one change etcd made to one key, as its watch sent it.
type truthEvent struct {
	Rev            int64
	Key            string
	Deleted        bool
	Value          []byte
	CreateRevision int64
	Version        int64
	Lease          int64
}

// oracle records every event etcd makes, from revision 1, through a
// clientv3 watch on the whole keyspace started before any traffic: what
// etcd did, against which every claim of the tool is checked.
type oracle struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	events []truthEvent // in revision order, a revision's events in its order
	last   int64        // the last revision received (a watch progress notify included)
	err    error
}

// startOracle starts the watch; stop ends it.
func startOracle(t *testing.T, cli *clientv3.Client) *oracle {
	t.Helper()
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	o := &oracle{cancel: cancel, done: make(chan struct{})}
	wch := cli.Watch(ctx, "", clientv3.WithPrefix(), clientv3.WithRev(1), clientv3.WithProgressNotify())
	go func() {
		defer close(o.done)
		for resp := range wch {
			o.mu.Lock()
			if err := resp.Err(); err != nil && ctx.Err() == nil {
				o.err = err
			}
			for _, ev := range resp.Events {
				kv := ev.Kv
				o.events = append(o.events, truthEvent{
					Rev: kv.ModRevision, Key: string(kv.Key), Deleted: ev.Type == clientv3.EventTypeDelete,
					Value: kv.Value, CreateRevision: kv.CreateRevision, Version: kv.Version, Lease: kv.Lease,
				})
				o.last = max(o.last, kv.ModRevision)
			}
			if resp.IsProgressNotify() {
				o.last = max(o.last, resp.Header.GetRevision())
			}
			o.mu.Unlock()
		}
	}()
	t.Cleanup(o.stop)
	return o
}

// waitFor waits until the watch has sent every event up to revision rev.
func (o *oracle) waitFor(t *testing.T, cli *clientv3.Client, rev int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		o.mu.Lock()
		last, err := o.last, o.err
		o.mu.Unlock()
		if err != nil {
			t.Fatalf("the oracle's watch: %v", err)
		}
		if last >= rev {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the oracle's watch reached revision %d, not %d, in a minute", last, rev)
		}
		// A progress request makes etcd send the watch's revision when no
		// event is due.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = cli.RequestProgress(ctx)
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the watch.
func (o *oracle) stop() {
	o.cancel()
	<-o.done
}

// history is every event of key, oldest first.
func (o *oracle) history(key string) []truthEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []truthEvent
	for _, e := range o.events {
		if e.Key == key {
			out = append(out, e)
		}
	}
	return out
}

// at is key's newest event at or before revision rev (nil: none; a
// deletion: the key did not exist at rev).
func (o *oracle) at(key string, rev int64) *truthEvent {
	var last *truthEvent
	for _, e := range o.history(key) {
		if e.Rev > rev {
			break
		}
		last = &e
	}
	return last
}

// eventAt is key's event at revision rev, nil if rev did not change it.
func (o *oracle) eventAt(key string, rev int64) *truthEvent {
	for _, e := range o.history(key) {
		if e.Rev == rev {
			return &e
		}
	}
	return nil
}

// all is every event, in revision order.
func (o *oracle) all() []truthEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]truthEvent(nil), o.events...)
}

// stateAt is the live keys at revision rev and their newest events.
func (o *oracle) stateAt(rev int64) map[string]truthEvent {
	state := map[string]truthEvent{}
	for _, e := range o.all() {
		if e.Rev > rev {
			break
		}
		if e.Deleted {
			delete(state, e.Key)
		} else {
			state[e.Key] = e
		}
	}
	return state
}

// boltDB is what an etcd db or snapshot file holds, read with bbolt
// (etcd's own storage) and etcd's mvccpb: every revision it keeps, its
// consistent index and compaction.
type boltDB struct {
	ConsistentIndex uint64
	Revision        int64 // the newest revision it holds
	CompactRevision int64 // 0: never compacted
	Events          []truthEvent
}

// readBoltDB reads path, which nothing else has open.
func readBoltDB(t *testing.T, path string) *boltDB {
	t.Helper()
	db, err := bbolt.Open(path, 0o400, &bbolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open %s with bbolt: %v", path, err)
	}
	defer db.Close()
	out := &boltDB{}
	err = db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket([]byte("meta"))
		if meta == nil {
			return fmt.Errorf("no meta bucket")
		}
		if v := meta.Get([]byte("consistent_index")); len(v) == 8 {
			out.ConsistentIndex = binary.BigEndian.Uint64(v)
		}
		if v := meta.Get([]byte("finishedCompactRev")); len(v) >= 8 {
			out.CompactRevision = int64(binary.BigEndian.Uint64(v[:8]))
		}
		keys := tx.Bucket([]byte("key"))
		if keys == nil {
			return fmt.Errorf("no key bucket")
		}
		return keys.ForEach(func(k, v []byte) error {
			if len(k) < 17 {
				return fmt.Errorf("revision key %x", k)
			}
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return fmt.Errorf("revision %x: %w", k, err)
			}
			rev := int64(binary.BigEndian.Uint64(k[:8]))
			out.Revision = max(out.Revision, rev)
			out.Events = append(out.Events, truthEvent{
				Rev: rev, Key: string(kv.Key), Deleted: len(k) == 18 && k[17] == 't',
				Value: bytes.Clone(kv.Value), CreateRevision: kv.CreateRevision, Version: kv.Version, Lease: kv.Lease,
			})
			return nil
		})
	})
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	sort.SliceStable(out.Events, func(i, j int) bool { return out.Events[i].Rev < out.Events[j].Rev })
	return out
}

// sameEvent reports whether two events of one key agree in every field
// etcd keeps (a deletion: only in being one).
func sameEvent(a, b truthEvent) bool {
	if a.Key != b.Key || a.Rev != b.Rev || a.Deleted != b.Deleted {
		return false
	}
	if a.Deleted {
		return true
	}
	return bytes.Equal(a.Value, b.Value) && a.CreateRevision == b.CreateRevision && a.Version == b.Version && a.Lease == b.Lease
}
