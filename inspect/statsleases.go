package inspect

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
