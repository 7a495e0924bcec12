package inspect

import (
	"strconv"
	"time"
)

// ListTable is the table form of a listing (`etcdpvc ls`, `-o wide`): its
// columns, which depend on the resource listed and the options, and each
// listed object's row. Claims and volumes get kubectl's columns; a
// claim's MOUNTED BY is read one namespace at a time (claims are listed
// namespace by namespace).
type ListTable struct {
	Kind ListKind
	// ShowNamespace adds NAMESPACE: objects of several namespaces.
	ShowNamespace bool
	// ShowKind adds KIND: objects of every resource.
	ShowKind bool
	// Wide adds the -o wide columns: kubectl's, and for claims the
	// volume's reclaim policy and the pods mounting each.
	Wide bool
	// Etcd adds how each object is kept (--show-etcd): FINALIZERS,
	// REVISION and ENCRYPTION, and in the generic table CREATED, VERSION
	// and LEASE.
	Etcd bool
	// Finalizers adds FINALIZERS to the generic table: with Etcd, and
	// with --terminating, where they are what holds the objects.
	Finalizers bool
	// ShowKeys adds UID and KEY.
	ShowKeys bool
	// Times adds TIME, when a deleted object was deleted (TimeCell in
	// Zone, nil: the local zone).
	Times bool
	Zone  *time.Location
	// Now is the time ages are measured from.
	Now time.Time
	// Volumes resolve a claim's VOLUME.
	Volumes *Volumes
	// Mounts reads the pods of a namespace, for a claim's MOUNTED BY (nil:
	// "-"); Warn is told when it fails (MOUNTED BY then says "?").
	Mounts func(namespace string) (*Mounts, error)
	Warn   func(error)
	// KeepMounts keeps every namespace's pods read, for claims that do
	// not come namespace by namespace (--sort-by); else only the last.
	KeepMounts bool
	mounted    *Mounts
	kept       map[string]*Mounts
}

// NewListTable returns the table of a listing of scope: wide for -o wide,
// etcd for --show-etcd, terminating for --terminating, showKeys for
// --show-keys.
func NewListTable(scope Scope, wide, etcd, terminating, showKeys bool, now time.Time) *ListTable {
	t := &ListTable{Kind: ListKindOf(scope.Resource), Wide: wide, Etcd: etcd, Finalizers: etcd || terminating, ShowKeys: showKeys, Now: now}
	if scope.Resource == nil {
		t.ShowKind, t.ShowNamespace = true, scope.Namespace == ""
	} else {
		t.ShowNamespace = scope.Resource.Namespaced && scope.Namespace == ""
	}
	return t
}

// Columns are the table's headers.
func (t *ListTable) Columns() []string {
	var h []string
	if t.ShowNamespace {
		h = append(h, "NAMESPACE")
	}
	h = append(h, "NAME")
	switch t.Kind {
	case ListClaims:
		h = append(h, "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "AGE")
		if t.Wide {
			h = append(h, "RECLAIM POLICY", "MOUNTED BY", "VOLUMEMODE")
		}
		if t.Etcd {
			h = append(h, "FINALIZERS", "REVISION", "ENCRYPTION")
		}
	case ListVolumes:
		h = append(h, "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "AGE")
		if t.Wide {
			h = append(h, "VOLUMEMODE")
		}
		if t.Etcd {
			h = append(h, "FINALIZERS", "REVISION", "ENCRYPTION")
		}
	default:
		if t.ShowKind {
			h = append(h, "KIND")
		}
		h = append(h, "STATUS")
		if t.Finalizers {
			h = append(h, "FINALIZERS")
		}
		h = append(h, "AGE")
		if t.Etcd {
			h = append(h, "REVISION", "CREATED", "VERSION", "LEASE", "ENCRYPTION")
		}
	}
	if t.Times {
		h = append(h, "TIME")
	}
	if t.ShowKeys {
		h = append(h, "UID", "KEY")
	}
	return h
}

// Row is a listed object's row, under Columns.
func (t *ListTable) Row(it Listed) []string {
	age, fins := it.Age(t.Now), it.Finalizers()
	var cells []string
	if t.ShowNamespace {
		cells = append(cells, dash(it.Namespace))
	}
	cells = append(cells, it.Name)
	rev := known(it.ModRevision, "-")
	switch t.Kind {
	case ListClaims:
		c := it.ClaimColumns(t.Volumes)
		cells = append(cells, it.Status(t.Now, c.Phase), c.Volume, c.Capacity, c.AccessModes, c.StorageClass, age)
		if t.Wide {
			cells = append(cells, c.ReclaimPolicy, t.mountedBy(it), c.VolumeMode)
		}
		if t.Etcd {
			cells = append(cells, fins, rev, it.Encryption)
		}
	case ListVolumes:
		c := it.VolumeColumns()
		cells = append(cells, c.Capacity, c.AccessModes, c.ReclaimPolicy, it.Status(t.Now, c.Status), c.Claim, c.StorageClass, age)
		if t.Wide {
			cells = append(cells, c.VolumeMode)
		}
		if t.Etcd {
			cells = append(cells, fins, rev, it.Encryption)
		}
	default:
		if t.ShowKind {
			cells = append(cells, it.Kind())
		}
		cells = append(cells, it.Status(t.Now, dash(it.Phase)))
		if t.Finalizers {
			cells = append(cells, fins)
		}
		cells = append(cells, age)
		if t.Etcd {
			lease := "-"
			if it.Lease != 0 {
				lease = strconv.FormatInt(it.Lease, 16)
			}
			cells = append(cells, rev, known(it.CreateRevision, "-"), known(it.Version, "-"), lease, it.Encryption)
		}
	}
	if t.Times {
		when := "-"
		if it.DeleteTime != nil {
			loc := t.Zone
			if loc == nil {
				loc = time.Local
			}
			when = TimeCell(*it.DeleteTime, t.Now, loc)
		}
		cells = append(cells, when)
	}
	if t.ShowKeys {
		cells = append(cells, it.UID(), it.Key)
	}
	return cells
}

// mountedBy names the pods that use a claim, reading the pods of its
// namespace when it differs from the last claim's.
func (t *ListTable) mountedBy(it Listed) string {
	if t.Mounts == nil || it.Claim == nil {
		return "-"
	}
	if t.mounted == nil || t.mounted.Namespace != it.Namespace {
		m := t.kept[it.Namespace]
		if m == nil {
			var err error
			if m, err = t.Mounts(it.Namespace); err != nil {
				if t.Warn != nil {
					t.Warn(err)
				}
				m = &Mounts{Namespace: it.Namespace, Unread: 1}
			}
		}
		if t.KeepMounts {
			if t.kept == nil {
				t.kept = map[string]*Mounts{}
			}
			t.kept[it.Namespace] = m
		}
		t.mounted = m
	}
	return t.mounted.By(it.Name)
}

// known is a revision, create revision or version n in decimal, or
// unknown when it is 0: no revision etcd gives a key, nor a version of
// one, but what a write-ahead log leaves when it does not establish it.
func known(n int64, unknown string) string {
	if n == 0 {
		return unknown
	}
	return strconv.FormatInt(n, 10)
}
