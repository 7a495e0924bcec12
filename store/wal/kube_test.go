package wal

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// kubeCluster generates a long history of a cluster's writes through
// kube-apiserver: node leases renewed by compare on their revision,
// objects created, updated (sometimes from a stale read, which fails) and
// deleted, Events created with a lease reused for a while and expiring
// with it (revoked with its events), and the compactor every so often.
type kubeCluster struct {
	g         *modelGen
	rng       *rand.Rand
	nodes     []string
	objs      []string
	events    []string
	lease     int64 // the events' current lease
	leased    int   // events put with it
	leases    []int64
	keep      int // the leases alive at once
	staleOdds int // one update in staleOdds reads a stale state
}

// step adds one request of the cluster's traffic.
func (k *kubeCluster) step() {
	g, r := k.g, k.rng
	cur := func(key string) int64 {
		if kk := g.m.keys[key]; kk != nil {
			return kk.mod
		}
		return 0
	}
	switch x := r.IntN(100); {
	case x < 30: // a node's lease renewed
		key := k.nodes[r.IntN(len(k.nodes))]
		g.add(kubeTxn(key, cur(key), g.value(), 0, false), "renew "+key)
	case x < 55: // an object updated, now and then from a stale read
		key := k.objs[r.IntN(len(k.objs))]
		m := cur(key)
		if m == 0 {
			g.add(kubeTxn(key, 0, g.value(), 0, false), "create "+key)
			return
		}
		if p := g.past[key]; r.IntN(k.staleOdds) == 0 && len(p) > 1 {
			m = p[len(p)-2]
		}
		g.add(kubeTxn(key, m, g.value(), 0, false), "update "+key)
	case x < 60: // an object deleted
		key := k.objs[r.IntN(len(k.objs))]
		if m := cur(key); m != 0 {
			g.add(kubeTxn(key, m, nil, 0, true), "delete "+key)
		}
	case x < 85: // an event, on the lease reused for a while
		if k.lease == 0 || k.leased >= 20 {
			g.nextLease++
			k.lease, k.leased = g.nextLease, 0
			k.leases = append(k.leases, k.lease)
			g.add(&pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{ID: k.lease, TTL: 3600}}, "grant")
		}
		key := fmt.Sprintf("/registry/events/demo/ev-%d", len(g.steps))
		if len(k.events) > 0 && r.IntN(3) == 0 {
			key = k.events[r.IntN(len(k.events))]
		} else {
			k.events = append(k.events, key)
		}
		k.leased++
		g.add(kubeTxn(key, cur(key), g.value(), k.lease, false), "event "+key)
	case x < 90: // the oldest lease expires (Events live an hour)
		if len(k.leases) > k.keep {
			id := k.leases[0]
			k.leases = k.leases[1:]
			g.add(&pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: id}}, "revoke")
		}
	case x < 92:
		g.compactor()
	default:
		key := k.objs[r.IntN(len(k.objs))]
		if cur(key) == 0 {
			g.add(kubeTxn(key, 0, g.value(), 0, false), "create "+key)
		}
	}
}

// TestPrefixKubeScale works out long logs of a cluster's traffic through
// kube-apiserver (kubeCluster), cut after their first third (a purged
// log) over the db they end with, compacted as the apiserver does: Events
// living as long as the log (many of its writes anchored in the db) or
// expiring within it (few), and more conflicts or fewer. Every claim is
// checked against the truth, and most of each log must be established.
func TestPrefixKubeScale(t *testing.T) {
	n := 30000
	if testing.Short() {
		n = 6000
	}
	for _, tc := range []struct {
		seed      uint64
		keep      int
		staleOdds int
	}{
		{seed: 7, keep: 100000, staleOdds: 15},
		{seed: 8, keep: 200, staleOdds: 15},
		{seed: 9, keep: 100000, staleOdds: 4},
		{seed: 10, keep: 50, staleOdds: 40},
	} {
		t.Run(fmt.Sprintf("seed-%d-keep-%d-stale-1-in-%d", tc.seed, tc.keep, tc.staleOdds), func(t *testing.T) {
			mc := kubeScaleCase(tc.seed, n, tc.keep, tc.staleOdds)
			start := time.Now()
			st, v, wrong := mc.run(t, false)
			t.Logf("%d entries from raft index %d over a db at revision %d compacted at %d: %v; revision before the log %d, unresolved %q, %d stretches not established",
				len(mc.steps)-mc.cut, mc.cut+1, mc.m.rev, mc.m.compact, time.Since(start).Round(time.Millisecond), v.before, v.unresolved, len(v.unknown))
			st.log(t)
			if len(v.unknown) > 0 {
				t.Logf("first stretch not established: entries %d to %d: %s", v.unknown[0].FromIndex, v.unknown[0].ToIndex, v.unknown[0].Reason)
			}
			for i, w := range wrong {
				if i == 10 {
					break
				}
				t.Errorf("wrong claim: %s", w)
			}
			if st.entriesEstablished*10 < st.entries*8 {
				t.Errorf("established %d of %d entries", st.entriesEstablished, st.entries)
			}
		})
	}
}

// kubeScaleCase generates n entries of a cluster's traffic (kubeCluster:
// keep leases of Events alive at once, one update in staleOdds from a
// stale read) with a log cut after its first third.
func kubeScaleCase(seed uint64, n, keep, staleOdds int) *modelCase {
	rng := rand.New(rand.NewPCG(seed, 7))
	g := &modelGen{c: &modelChooser{rng: rng}, past: map[string][]int64{}, nextLease: 0x7a10, m: newMVCCModel(true)}
	k := &kubeCluster{g: g, rng: rng, keep: keep, staleOdds: staleOdds}
	for i := range 50 {
		k.nodes = append(k.nodes, fmt.Sprintf("/registry/leases/kube-node-lease/node-%d", i))
	}
	for i := range 2000 {
		k.objs = append(k.objs, fmt.Sprintf("/registry/configmaps/ns-%d/cm-%d", i%20, i))
	}
	for len(g.steps) < n {
		k.step()
	}
	return g.caseAt(n / 3)
}
