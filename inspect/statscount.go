package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// The counting of `etcdpvc stats`: stats, the accumulator BoltStats and
// LiveStats share, counts each key in its resource's and its --by
// group's counts, reads stored versions, tallies leases, and finish
// turns it into a StatsReport.

// stats accumulates a StatsReport.
type stats struct {
	StatsOptions
	history bool
	rep     *StatsReport
	groups  map[string]*ResourceStats
	bys     map[groupKey]*GroupStats
	pairs   map[groupKey]*keyGroups
	details *detailTally
	unders  interned
	leases  map[int64]*leaseAcc
	top     topN[LargeObject]
	// releases counts the Helm release revisions stored as Secrets.
	releases map[[2]string]*HelmRelease
	// read counts the records read, for Progress.
	read int64
}

func newStats(o StatsOptions, history bool) *stats {
	var d *detailTally
	if o.Details > 0 {
		d = newDetailTally(o.Details)
	}
	return &stats{StatsOptions: o, details: d, history: history, rep: &StatsReport{SchemaVersion: StatsSchemaVersion, By: o.By.Words()},
		groups: map[string]*ResourceStats{}, bys: map[groupKey]*GroupStats{}, pairs: map[groupKey]*keyGroups{}, leases: map[int64]*leaseAcc{}, top: topN[LargeObject]{n: o.Top, less: smallerObject}}
}

// tick counts a record read, of size bytes at revision rev, and tells
// Progress.
func (s *stats) tick(size, rev int64) {
	s.read++
	if s.Progress != nil {
		s.Progress(s.read, size, rev)
	}
}

// keyGroups are the groups a key is counted in: its resource's and its
// --by group's.
type keyGroups struct {
	rs *ResourceStats
	by *GroupStats
}

// groupsOf returns key's groups, made on first use; the key is parsed
// once.
func (s *stats) groupsOf(key string) *keyGroups {
	r, ns, _, isObject := resource.ParseKey(s.Prefix, key)
	if !isObject {
		// A key under a resource's path naming no object is its
		// resource's: its LIST fails on it (counted unreadable).
		r, ns, isObject = resource.BadKey(s.Prefix, key)
	}
	var name string
	if isObject {
		name = r.String()
	} else {
		name, ns = GroupOf(s.Prefix, key), ""
	}
	if !s.By.Namespace {
		ns = "" // one pair per resource: fewer, and found sooner
	}
	k := groupKey{name, ns}
	if p := s.pairs[k]; p != nil {
		return p
	}
	gs := s.groups[name]
	if gs == nil {
		gs = &ResourceStats{Resource: name, storage: map[string]int64{}, versions: map[versionKey]int64{}, unread: map[string]int64{}}
		if isObject && s.Write != nil {
			gs.WriteProvider = s.Write(r.GroupResource())
		}
		if isObject && s.Readers != nil {
			gs.readers = s.Readers(r.GroupResource())
		}
		if s.history {
			gs.withHistory()
		}
		s.groups[name] = gs
	}
	p := &keyGroups{rs: gs, by: s.byGroup(k)}
	s.pairs[k] = p
	return p
}

// object counts a current object of g.
func (s *stats) object(g *keyGroups, key string, size, modRev, lease int64, under string) {
	gs, bg := g.rs, g.by
	gs.storage[under]++
	for _, c := range []*Counts{&gs.Counts, &bg.Counts} {
		c.Objects++
		c.Bytes += size
		if lease != 0 {
			c.Leased++
		}
	}
	s.rep.KeyBytes += int64(len(key))
	if gs.Resource == "secrets" {
		s.helm(key, size)
	}
	s.lease(lease, gs.Resource, size)
	s.top.add(LargeObject{Key: key, Bytes: size, ModRevision: modRev})
}

// value reads the stored version of kv, a current object of gs, or
// counts why it cannot be read. A key that names no object (the
// apiserver's own: ranges, master leases) is not read.
func (s *stats) value(ctx context.Context, gs *ResourceStats, kv *store.KeyValue) {
	var t versionTally
	t.add(ctx, s.StatsOptions, gs, kv)
	s.merge(&t)
}

// versionTally counts stored versions and reasons not read, for merging
// into a stats: what one worker of a parallel read found.
type versionTally struct {
	versions map[*ResourceStats]map[versionKey]int64
	unread   map[*ResourceStats]map[string]int64
	u        Unread
	d        *detailTally
}

// add reads kv's stored version, or why it cannot be read, into t.
func (t *versionTally) add(ctx context.Context, o StatsOptions, gs *ResourceStats, kv *store.KeyValue) {
	var it ListItem
	if r, ns, name, ok := resource.ParseKey(o.Prefix, kv.Key); ok {
		it, _ = Read(ctx, o.Dec, r, ns, name, kv, 0)
	} else if r, ns, bad := resource.BadKey(o.Prefix, kv.Key); bad {
		it, _ = ReadBadKey(ctx, o.Dec, r, ns, kv, 0)
	} else {
		return
	}
	why := it.Unread
	if it.Summary == nil && !it.UnreadEncrypted && strings.HasPrefix(why, "Undecodable: ") {
		why = "Undecodable: " + it.Problem
	}
	if o.Details > 0 {
		if t.d == nil {
			t.d = newDetailTally(o.Details)
		}
		t.d.item(it, gs.Resource, why)
	}
	if it.Summary == nil {
		if t.unread == nil {
			t.unread = map[*ResourceStats]map[string]int64{}
		}
		if t.unread[gs] == nil {
			t.unread[gs] = map[string]int64{}
		}
		t.unread[gs][why]++
		t.u.Add(it)
		return
	}
	if t.versions == nil {
		t.versions = map[*ResourceStats]map[versionKey]int64{}
	}
	if t.versions[gs] == nil {
		t.versions[gs] = map[versionKey]int64{}
	}
	t.versions[gs][versionKey{it.Summary.APIVersion, it.Summary.Kind}]++
}

// merge adds t's counts to s.
func (s *stats) merge(t *versionTally) {
	for gs, m := range t.versions {
		for k, n := range m {
			gs.versions[k] += n
		}
	}
	for gs, m := range t.unread {
		for k, n := range m {
			gs.unread[k] += n
		}
	}
	if t.d != nil {
		s.details.merge(t.d)
	}
	u := &s.rep.Unread
	u.Encrypted += t.u.Encrypted
	u.Undecodable += t.u.Undecodable
	u.NotHeld += t.u.NotHeld
	u.WrongKey += t.u.WrongKey
}

// boltValues reads the stored version of each current key of keys (its
// state holding its value in b's mapped file) on several cores, in
// revision order, the order of the db's key bucket, and adds them to s.
// It runs inside b's read, which lent the values.
func (s *stats) boltValues(ctx context.Context, b *store.Bolt, keys map[string]*keyState) error {
	type current struct {
		key string
		ks  *keyState
	}
	var cur []current
	for key, ks := range keys {
		if !ks.deleted {
			cur = append(cur, current{key, ks})
		}
	}
	slices.SortFunc(cur, func(a, b current) int { return cmp.Compare(a.ks.modRev, b.ks.modRev) })
	workers := min(runtime.GOMAXPROCS(0), max(1, len(cur)/1024))
	tallies := make([]versionTally, workers)
	errs := make([]error, workers)
	// Workers take runs of valuesBatch keys in turn, so that one with
	// larger values does not hold up the others.
	const valuesBatch = 256
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			errs[w] = b.Guard(func() error {
				for {
					if err := ctx.Err(); err != nil {
						return err
					}
					lo := int(next.Add(valuesBatch)) - valuesBatch
					if lo >= len(cur) {
						return nil
					}
					for _, c := range cur[lo:min(lo+valuesBatch, len(cur))] {
						kv := store.KeyValue{Key: c.key, ModRevision: c.ks.modRev, Value: c.ks.value}
						if kv.Value == nil {
							kv.Value = []byte{}
						}
						tallies[w].add(ctx, s.StatsOptions, c.ks.groups.rs, &kv)
					}
				}
			})
		})
	}
	wg.Wait()
	for w := range tallies {
		s.merge(&tallies[w])
	}
	return errors.Join(errs...)
}

// finish totals the groups and sorts them by bytes, and counts the keys
// per lease against the leases l holds (nil: not read, with why).
func (s *stats) finish(ctx context.Context, l store.Leaser, source, why string) *StatsReport {
	rep := s.rep
	for _, gs := range s.groups {
		rep.Objects += gs.Objects
		rep.Bytes += gs.Bytes
		rep.Leased += gs.Leased
		gs.finishStorage()
		gs.finishVersions()
		rep.Resources = append(rep.Resources, gs)
	}
	sort.Slice(rep.Resources, func(i, j int) bool {
		a, b := rep.Resources[i], rep.Resources[j]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Resource < b.Resource
	})
	rep.Groups = s.finishGroups()
	if s.details != nil {
		rep.Details = s.details.report()
	}
	rep.Largest = s.top.sorted()
	rep.HelmReleases = s.finishHelm()
	rep.NotRead = rep.Unread.Total()
	if rep.Resources == nil {
		rep.Resources = []*ResourceStats{}
	}
	rep.Leases = s.finishLeases(ctx, l, source, why)
	return rep
}

// finishStorage turns the storage counts into Storage and Stale.
func (gs *ResourceStats) finishStorage() {
	gs.Storage = []*StorageCount{}
	if gs.WriteProvider != "" {
		gs.Stale = new(int64)
	}
	for p, n := range gs.storage {
		c := &StorageCount{Provider: p, Objects: n}
		if gs.readers != nil && !slices.Contains(gs.readers, p) {
			c.NotReadable = true
		} else if gs.WriteProvider != "" && p != gs.WriteProvider {
			c.Stale = true
			*gs.Stale += n
		}
		gs.Storage = append(gs.Storage, c)
	}
	sort.Slice(gs.Storage, func(i, j int) bool {
		a, b := gs.Storage[i], gs.Storage[j]
		if a.Objects != b.Objects {
			return a.Objects > b.Objects
		}
		return a.Provider < b.Provider
	})
}

// finishVersions turns the version and reason counts into StoredVersions
// and Unreadable, most objects first.
func (gs *ResourceStats) finishVersions() {
	gs.StoredVersions = []*VersionCount{}
	for k, n := range gs.versions {
		gs.StoredVersions = append(gs.StoredVersions, &VersionCount{APIVersion: k.apiVersion, Kind: k.kind, Objects: n, RemovedIn: resource.RemovedIn(k.apiVersion, k.kind)})
	}
	sort.Slice(gs.StoredVersions, func(i, j int) bool {
		a, b := gs.StoredVersions[i], gs.StoredVersions[j]
		if a.Objects != b.Objects {
			return a.Objects > b.Objects
		}
		return a.APIVersion+"/"+a.Kind < b.APIVersion+"/"+b.Kind
	})
	for why, n := range gs.unread {
		gs.Unreadable = append(gs.Unreadable, &ReasonCount{Reason: why, Objects: n})
	}
	sort.Slice(gs.Unreadable, func(i, j int) bool {
		a, b := gs.Unreadable[i], gs.Unreadable[j]
		if a.Objects != b.Objects {
			return a.Objects > b.Objects
		}
		return a.Reason < b.Reason
	})
}

// byGroup returns the --by group of the keys of resource group and
// namespace rk, made on first use.
func (s *stats) byGroup(rk groupKey) *GroupStats {
	var k groupKey
	if s.By.Resource || !s.By.Namespace {
		k.resource = rk.resource
	}
	if s.By.Namespace {
		k.namespace = rk.namespace
	}
	g := s.bys[k]
	if g == nil {
		g = &GroupStats{}
		if s.By.Resource || !s.By.Namespace {
			r := k.resource
			g.Resource = &r
		}
		if s.By.Namespace {
			ns := k.namespace
			g.Namespace = &ns
		}
		if s.history {
			g.withHistory()
		}
		s.bys[k] = g
	}
	return g
}

// finishGroups sorts the --by groups, most bytes first.
func (s *stats) finishGroups() []*GroupStats {
	out := make([]*GroupStats, 0, len(s.bys))
	for _, g := range s.bys {
		out = append(out, g)
	}
	name := func(g *GroupStats) string {
		var n string
		if g.Resource != nil {
			n = *g.Resource
		}
		if g.Namespace != nil {
			n += "\x00" + *g.Namespace
		}
		return n
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return name(a) < name(b)
	})
	return out
}

// lease counts key (of group resource, size bytes) attached to lease id.
func (s *stats) lease(id int64, resource string, size int64) {
	if id == 0 {
		return
	}
	a := s.leases[id]
	if a == nil {
		a = &leaseAcc{resources: map[string]int64{}}
		s.leases[id] = a
	}
	a.keys++
	a.bytes += size
	a.resources[resource]++
}

// finishLeases counts the keys per lease against the leases l holds (nil:
// not read, with why), the top leases' TTLs asked of l.
func (s *stats) finishLeases(ctx context.Context, l store.Leaser, source, why string) *LeaseStats {
	ls := &LeaseStats{Named: int64(len(s.leases)), Top: []LeaseCount{}}
	for _, a := range s.leases {
		ls.LeasedKeys += a.keys
	}
	for id, a := range s.leases {
		c := LeaseCount{ID: strconv.FormatInt(id, 16), id: id, Keys: a.keys, Bytes: a.bytes}
		for r, n := range a.resources {
			c.Resources = append(c.Resources, NamedCount{r, n})
		}
		sort.Slice(c.Resources, func(i, j int) bool {
			if c.Resources[i].Count != c.Resources[j].Count {
				return c.Resources[i].Count > c.Resources[j].Count
			}
			return c.Resources[i].Name < c.Resources[j].Name
		})
		ls.Top = append(ls.Top, c)
	}
	sort.Slice(ls.Top, func(i, j int) bool {
		if ls.Top[i].Keys != ls.Top[j].Keys {
			return ls.Top[i].Keys > ls.Top[j].Keys
		}
		return ls.Top[i].id < ls.Top[j].id
	})
	if len(ls.Top) > s.Top {
		ls.Top = ls.Top[:s.Top]
	}
	if l == nil {
		ls.NotRead = why
		return ls
	}
	held, err := l.Leases(ctx)
	if err != nil {
		ls.NotRead = err.Error()
		return ls
	}
	ls.Source = source
	byID := make(map[int64]store.LeaseInfo, len(held))
	for _, h := range held {
		byID[h.ID] = h
	}
	n := int64(len(held))
	ls.Held = &n
	without, notHeld := int64(0), int64(0)
	for id := range byID {
		if s.leases[id] == nil {
			without++
		}
	}
	for id, a := range s.leases {
		if _, ok := byID[id]; !ok {
			notHeld += a.keys
		}
	}
	ls.WithoutKeys, ls.NotHeld = &without, &notHeld
	for i := range ls.Top {
		c := &ls.Top[i]
		info, ok := byID[c.id]
		if ok && info.TTL == 0 && info.Remaining < 0 {
			// A live list carries no TTLs: ask for this lease's.
			var err error
			info, err = l.LeaseTTL(ctx, c.id)
			if errors.Is(err, store.ErrNotFound) {
				ok = false // expired since the list
			} else if err != nil {
				ls.NotRead = fmt.Sprintf("the TTL of lease %s: %v", c.ID, err)
				continue
			}
		}
		held := ok
		c.Held = &held
		if !ok {
			continue
		}
		if info.TTL > 0 {
			ttl := info.TTL
			c.TTL = &ttl
		}
		if info.Remaining >= 0 {
			rem := info.Remaining
			c.RemainingTTL = &rem
		}
	}
	return ls
}
