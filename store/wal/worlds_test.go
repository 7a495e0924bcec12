package wal

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdpvc/etcdpvc/walread"
)

// worldsStats counts what the world search established.
type worldsStats struct {
	cases, incomplete, noWorld int
	entries, entriesEst        int
	revs, revsEst              int
	writes, writesEst          int
	xEst                       int
	steps                      int64
}

func (a *worldsStats) add(b worldsStats) {
	a.cases += b.cases
	a.incomplete += b.incomplete
	a.noWorld += b.noWorld
	a.entries += b.entries
	a.entriesEst += b.entriesEst
	a.revs += b.revs
	a.revsEst += b.revsEst
	a.writes += b.writes
	a.writesEst += b.writesEst
	a.xEst += b.xEst
	a.steps += b.steps
}

func (a *worldsStats) log(t *testing.T) {
	t.Logf("cases %d: incomplete %d, no world %d, revision before the log established in %d (%s)", a.cases, a.incomplete, a.noWorld, a.xEst, pct(a.xEst, a.cases))
	t.Logf("entries with an established outcome: %d of %d (%s)", a.entriesEst, a.entries, pct(a.entriesEst, a.entries))
	t.Logf("entries that made a revision, revision established: %d of %d (%s)", a.revsEst, a.revs, pct(a.revsEst, a.revs))
	t.Logf("key changes with an established revision: %d of %d (%s)", a.writesEst, a.writes, pct(a.writesEst, a.writes))
	t.Logf("steps %d (%.1f a case)", a.steps, float64(a.steps)/float64(max(a.cases, 1)))
}

// runWorlds searches the worlds of mc's log from its cut (from raft index
// 1 when exact) over its db and checks every claim against the truth.
func (mc *modelCase) runWorlds(t *testing.T, exact bool) (worldsStats, *worldsResult, []string) {
	ctx := context.Background()
	keys := newPxKeys()
	var entries []pxEntry
	cut := mc.cut
	if exact {
		cut = 0
	}
	for i := cut; i < len(mc.steps); i++ {
		entries = append(entries, compactEntry(mustEntry(t, uint64(i+1), mc.steps[i].req), walread.Pos{}, keys))
	}
	x, err := loadDBIndex(ctx, mc.m, keys, mc.m.rev-int64(len(entries)), mc.m.rev)
	if err != nil {
		t.Fatal(err)
	}
	res := solveWorlds(ctx, entries, keys, exact, mc.m.rev, mc.m, x)
	st := worldsStats{cases: 1, steps: res.steps}
	var wrong []string
	claim := func(format string, args ...any) { wrong = append(wrong, fmt.Sprintf(format, args...)) }
	switch {
	case !res.complete:
		st.incomplete++
	case res.worlds == 0:
		st.noWorld++
		claim("no consistent world found (the true one is): %s", res.noWorld)
	}
	est := res.established()
	before := mc.before
	if exact {
		before = 1
	}
	if v, ok := res.x.get(); est && ok {
		st.xEst++
		if v != before {
			claim("the revision before the log: claimed %d, true %d", v, before)
		}
	}
	// Whether each key existed before the log: the model replayed up to
	// the cut.
	atCut := newMVCCModel(mc.m.keepTombAtCompact)
	for _, st := range mc.steps[:cut] {
		atCut.apply(st.req)
	}
	for k, name := range keys.names {
		if v, ok := res.pre[k].get(); est && ok && (v == 1) != (atCut.keys[name] != nil) {
			claim("%s: claimed to exist before the log %v, true %v", name, v == 1, atCut.keys[name] != nil)
		}
	}
	// What settle fixed holds in the true world (the search takes it as
	// given; where the search does not finish it is what is claimed).
	if st := res.settled; st != nil {
		for i := range entries {
			tr := mc.steps[cut+i].truth
			if st.made[i] >= 0 && (st.made[i] == 1) != (tr.rev != 0) || st.rev[i] != 0 && st.rev[i] != tr.rev {
				claim("entry %d (%s): settled as made %d at revision %d, true revision %d", i, mc.steps[cut+i].desc, st.made[i], st.rev[i], tr.rev)
			}
		}
	}
	for i := range entries {
		s := mc.steps[cut+i]
		tr := s.truth
		at := fmt.Sprintf("entry %d (raft index %d, %s)", i, entries[i].index, s.desc)
		c := &res.entries[i]
		st.entries++
		if o, ok := c.outcome.get(); est && ok {
			st.entriesEst++
			if Outcome(o) != tr.outcome {
				claim("%s: claimed %v, true %v (%s)", at, Outcome(o), tr.outcome, tr.why)
			}
		}
		if tr.rev != 0 {
			st.revs++
		}
		if r, ok := c.rev.get(); est && ok {
			if r != tr.rev {
				claim("%s: claimed revision %d, true %d", at, r, tr.rev)
			} else if tr.rev != 0 {
				st.revsEst++
			}
		}
		truth := map[string]*modelWrite{}
		for j := range tr.writes {
			truth[tr.writes[j].key] = &tr.writes[j]
			st.writes++
		}
		check := func(what string, key int32, del bool, w *xWriteClaim) {
			name := keys.names[key]
			tw := truth[name]
			if tw != nil && tw.del != del {
				tw = nil
			}
			if del && res.lazy[[2]int32{int32(i), key}] {
				return // it may have been attached to the lease before the log: not established
			}
			a, ok := w.applied.get()
			if !est || !ok {
				return
			}
			if (a == 1) != (tw != nil) {
				claim("%s: %s of %s: claimed applied %v, true %v", at, what, name, a == 1, tw != nil)
				return
			}
			if tw == nil {
				return
			}
			if m, ok := w.mod.get(); ok {
				if m != tw.mod {
					claim("%s: %s of %s: claimed revision %d, true %d", at, what, name, m, tw.mod)
				} else {
					st.writesEst++
				}
			}
			if del {
				return
			}
			if v, ok := w.create.get(); ok && v != tw.create {
				claim("%s: %s of %s: claimed create revision %d, true %d", at, what, name, v, tw.create)
			}
			if v, ok := w.version.get(); ok && v != tw.version {
				claim("%s: %s of %s: claimed version %d, true %d", at, what, name, v, tw.version)
			}
		}
		pe := &entries[i]
		for b, ops := range [][]pxOp{pe.succ, pe.fail} {
			for j, op := range ops {
				oi := res.opBase[i] + int32(j)
				if b == 1 {
					oi += int32(len(pe.succ))
				}
				check("op", op.key, op.del, &res.ops[oi])
			}
		}
		for k, w := range res.dyn {
			if k[0] == int32(i) {
				check("delete", k[1], true, w)
			}
		}
		// A key the truth deleted by a revoke or range delete that no
		// world lists: a claim that it was not deleted, unless the
		// key's state before the log is not established (a revoke of a
		// lease from before the log may have deleted a key the log
		// names later, as it may have deleted keys the log never names:
		// neither is listed, and the key's state before the log is left
		// open; see replay).
		if pe.kind == walread.KindLeaseRevoke || pe.ranged {
			for name, tw := range truth {
				id, ok := keys.ids[name]
				if !ok || !tw.del || !est {
					continue
				}
				if pre, ok := res.pre[id].get(); pe.kind == walread.KindLeaseRevoke && (!ok || pre != 1) {
					continue
				}
				if w := res.dyn[[2]int32{int32(i), id}]; w == nil && !res.lazy[[2]int32{int32(i), id}] {
					claim("%s: the delete of %s is in no world", at, name)
				}
			}
		}
	}
	return st, res, wrong
}

// checkWorldsSeed checks one generated case (and, when its log holds the
// whole history, the same from raft index 1).
func checkWorldsSeed(t *testing.T, mc *modelCase) (worldsStats, *worldsResult, []string) {
	st, res, wrong := mc.runWorlds(t, false)
	if mc.cut == 0 {
		_, _, w := mc.runWorlds(t, true)
		for _, x := range w {
			wrong = append(wrong, "from raft index 1 (exact): "+x)
		}
	}
	return st, res, wrong
}

// TestWorldsModel is a model-based property test of the world search:
// the generated histories of TestPrefixModel (with and without range
// deletes), each claim the search establishes checked against the truth.
func TestWorldsModel(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	if s := os.Getenv("ETCDPVC_WORLDS_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	for _, ranged := range []bool{false, true} {
		var total worldsStats
		var bad []uint64
		for seed := range uint64(n) {
			var mc *modelCase
			if ranged {
				mc = rangeModelCase(seed, nil)
			} else {
				mc = genModelCase(&modelChooser{rng: rand.New(rand.NewPCG(seed, modelStream))})
			}
			st, res, wrong := checkWorldsSeed(t, mc)
			total.add(st)
			if !res.complete && os.Getenv("ETCDPVC_WORLDS_ALL") != "" {
				t.Logf("ranged %v seed %d: incomplete after %d steps: %s", ranged, seed, res.steps, res.why)
			}
			if len(wrong) > 0 {
				bad = append(bad, seed)
				if len(bad) <= 5 {
					t.Errorf("ranged %v seed %d: %d wrong claims, the first: %s", ranged, seed, len(wrong), wrong[0])
					if len(bad) <= 2 {
						t.Logf("worlds %d, X %+v; the case:\n%s", res.worlds, res.x, mc.describe())
					}
				}
			}
		}
		t.Logf("range deletes %v:", ranged)
		total.log(t)
		if len(bad) > 0 {
			t.Errorf("ranged %v: wrong claims in %d of %d cases: %v", ranged, len(bad), n, bad)
		}
	}
}

// TestWorldsSeed runs one seed of TestWorldsModel, named by
// ETCDPVC_WORLDS_SEED (and ETCDPVC_WORLDS_RANGED=1), with its history.
func TestWorldsSeed(t *testing.T) {
	v := os.Getenv("ETCDPVC_WORLDS_SEED")
	if v == "" {
		t.Skip("ETCDPVC_WORLDS_SEED not set")
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("ETCDPVC_WORLDS_SEED: %v", err)
	}
	var mc *modelCase
	if os.Getenv("ETCDPVC_WORLDS_RANGED") != "" {
		mc = rangeModelCase(seed, nil)
	} else {
		mc = genModelCase(&modelChooser{rng: rand.New(rand.NewPCG(seed, modelStream))})
	}
	debugWorldsChoices = map[string]int{}
	defer func() { debugWorldsChoices = nil }()
	st, res, wrong := mc.runWorlds(t, false)
	for _, w := range wrong {
		t.Errorf("wrong claim: %s", w)
	}
	type kc struct {
		k string
		n int
	}
	var top []kc
	for k, n := range debugWorldsChoices {
		top = append(top, kc{k, n})
	}
	slices.SortFunc(top, func(a, b kc) int { return b.n - a.n })
	for i, c := range top {
		if i == 25 {
			break
		}
		t.Logf("branch point %6d× %s", c.n, c.k)
	}
	t.Logf("complete %v (%s), worlds %d, steps %d, X %+v, no world: %s", res.complete, res.why, res.worlds, st.steps, res.x, res.noWorld)
	t.Logf("the case:\n%s", mc.describe())
}

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

// TestWorldsKubeScale works out long logs of a cluster's traffic through
// kube-apiserver (kubeCluster), cut after their first third (a purged
// log) over the db they end with, compacted as the apiserver does: Events
// living as long as the log (many of its writes anchored in the db) or
// expiring within it (few), and more conflicts or fewer. Every claim is
// checked against the truth, and most of each log must be established
// (by the search, or where it does not finish by settle).
func TestWorldsKubeScale(t *testing.T) {
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

// TestWorldsMemo: the memo changes what the search establishes in nothing
// (a state reached again has the future it had the first time), only how
// long it takes: over the model's cases the claims are the same with it
// and without it, and it takes fewer steps.
func TestWorldsMemo(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 150
	}
	var with, without int64
	for seed := range uint64(n) {
		mc := rangeModelCase(seed, nil)
		_, a, _ := mc.runWorlds(t, false)
		worldsMemo = false
		_, b, _ := mc.runWorlds(t, false)
		worldsMemo = true
		with, without = with+a.steps, without+b.steps
		if a.complete != b.complete || !a.complete {
			continue
		}
		same := func(what string, x, y *xClaim) {
			xv, xok := x.get()
			yv, yok := y.get()
			if xok != yok || xok && xv != yv {
				t.Errorf("seed %d: %s: with the memo %v (%v), without %v (%v)", seed, what, xv, xok, yv, yok)
			}
		}
		same("the revision before the log", &a.x, &b.x)
		for i := range a.entries {
			same(fmt.Sprintf("entry %d outcome", i), &a.entries[i].outcome, &b.entries[i].outcome)
			same(fmt.Sprintf("entry %d revision", i), &a.entries[i].rev, &b.entries[i].rev)
		}
		for i := range a.ops {
			same(fmt.Sprintf("op %d applied", i), &a.ops[i].applied, &b.ops[i].applied)
			same(fmt.Sprintf("op %d revision", i), &a.ops[i].mod, &b.ops[i].mod)
			same(fmt.Sprintf("op %d create", i), &a.ops[i].create, &b.ops[i].create)
			same(fmt.Sprintf("op %d version", i), &a.ops[i].version, &b.ops[i].version)
		}
		for k := range a.pre {
			same(fmt.Sprintf("key %d before the log", k), &a.pre[k], &b.pre[k])
		}
		for k, w := range a.dyn {
			v := b.dyn[k]
			if v == nil {
				t.Errorf("seed %d: delete %v only with the memo", seed, k)
				continue
			}
			same(fmt.Sprintf("delete %v applied", k), &w.applied, &v.applied)
			same(fmt.Sprintf("delete %v revision", k), &w.mod, &v.mod)
		}
		if len(a.dyn) != len(b.dyn) || len(a.lazy) != len(b.lazy) {
			t.Errorf("seed %d: deletes %d/%d with the memo, %d/%d without", seed, len(a.dyn), len(a.lazy), len(b.dyn), len(b.lazy))
		}
	}
	t.Logf("steps with the memo %d, without %d", with, without)
}

// TestPrefixModelSettled is TestPrefixModel (with and without range
// deletes) with the search given no steps: what settle fixes alone is
// then what is claimed, and none of it may be wrong.
func TestPrefixModelSettled(t *testing.T) {
	defer func(f func(int) int64) { worldsBudget = f }(worldsBudget)
	worldsBudget = func(int) int64 { return 1 }
	n := 2000
	if testing.Short() {
		n = 300
	}
	for _, ranged := range []bool{false, true} {
		var total modelStats
		var bad []uint64
		for seed := range uint64(n) {
			mc := genModelCase(&modelChooser{rng: rand.New(rand.NewPCG(seed, modelStream))})
			if ranged {
				mc = rangeModelCase(seed, nil)
			}
			st, _, wrong := mc.run(t, false)
			total.add(st)
			if len(wrong) > 0 {
				bad = append(bad, seed)
				if len(bad) <= 5 {
					t.Errorf("ranged %v seed %d: %d wrong claims, the first: %s", ranged, seed, len(wrong), wrong[0])
				}
			}
		}
		t.Logf("range deletes %v:", ranged)
		total.log(t)
		if len(bad) > 0 {
			t.Errorf("ranged %v: wrong claims in %d of %d cases: %v", ranged, len(bad), n, bad)
		}
	}
}
