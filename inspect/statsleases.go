package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/etcdpvc/etcdpvc/store"
)

// LeaseStats are the keys attached to leases: each current key's lease
// field, counted per lease, and the leases the store holds (etcd's lease
// list, a db file's lease bucket) with their TTLs where known.
type LeaseStats struct {
	// Source says where the leases held were read ("" when they were not:
	// a write-ahead log, several etcds); Held is then nil.
	Source string `json:"source,omitempty"`
	Held   *int64 `json:"leasesHeld,omitempty"`
	// WithoutKeys counts the leases held that no current key names.
	WithoutKeys *int64 `json:"leasesWithoutKeys,omitempty"`
	// Named counts the leases the current keys name, LeasedKeys the keys.
	Named      int64 `json:"leasesNamed"`
	LeasedKeys int64 `json:"leasedKeys"`
	// NotHeld counts the keys naming a lease the store does not hold
	// (expired or revoked while the keys were read; in a db file, a record
	// etcd should not leave).
	NotHeld *int64 `json:"keysWithLeaseNotHeld,omitempty"`
	// Top are the leases with the most keys, most first.
	Top []LeaseCount `json:"top"`
	// NotRead says why the leases held could not be read, when they could
	// not.
	NotRead string `json:"notRead,omitempty"`
}

// LeaseCount is one lease and the current keys attached to it.
type LeaseCount struct {
	// ID is the lease's ID in hex, as etcdctl prints it.
	ID    string `json:"id"`
	Keys  int64  `json:"keys"`
	Bytes int64  `json:"bytes"`
	// Resources counts its keys by resource, most first.
	Resources []NamedCount `json:"resources"`
	// TTL is the TTL it was granted and RemainingTTL what is left, in
	// seconds (nil: unknown; a db file records the remaining TTL only when
	// etcd checkpoints leases).
	TTL          *int64 `json:"ttl,omitempty"`
	RemainingTTL *int64 `json:"remainingTTL,omitempty"`
	// Held is false when the store does not hold the lease, nil when that
	// is unknown.
	Held *bool `json:"held,omitempty"`

	id int64
}

// NamedCount is a count of something named.
type NamedCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// leaseAcc counts one lease's keys.
type leaseAcc struct {
	keys, bytes int64
	resources   map[string]int64
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
