package inspect

import (
	"time"

	"github.com/etcdpvc/etcdpvc/resource"
)

// StatsDetails are what `etcdpvc report` lists beyond the counts, each
// list bounded (StatsOptions.Details: the first in key order) with its
// total: objects stuck Terminating, values that cannot be read, and keys
// whose newest revision is a deletion. Names only: no value is kept.
type StatsDetails struct {
	Terminating      []TerminatingObject `json:"terminating"`
	TerminatingTotal int64               `json:"terminatingTotal"`
	Unreadable       []UnreadableObject  `json:"unreadable"`
	UnreadableTotal  int64               `json:"unreadableTotal"`
	// Deleted are keys whose newest revision is a deletion (db files);
	// Recoverable among them have a value held before the deletion.
	Deleted          []DeletedKey `json:"deleted"`
	DeletedTotal     int64        `json:"deletedTotal"`
	RecoverableTotal int64        `json:"recoverableTotal"`
	// OldestCreated and NewestCreated bound the current objects'
	// creationTimestamps (etcd records no time per revision).
	OldestCreated *time.Time `json:"oldestCreated,omitempty"`
	NewestCreated *time.Time `json:"newestCreated,omitempty"`
}

// TerminatingObject is an object with a deletionTimestamp, and the
// finalizers that hold it.
type TerminatingObject struct {
	Key               string    `json:"key"`
	Resource          string    `json:"resource"`
	Namespace         string    `json:"namespace,omitempty"`
	Name              string    `json:"name"`
	DeletionTimestamp time.Time `json:"deletionTimestamp"`
	Finalizers        []string  `json:"finalizers"`
}

// UnreadableObject is a current value that could not be read, and why.
type UnreadableObject struct {
	Key      string `json:"key"`
	Resource string `json:"resource"`
	Why      string `json:"why"`
}

// DeletedKey is a key whose newest revision is a deletion.
type DeletedKey struct {
	Key       string `json:"key"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// DeleteRevision is the deletion's revision; Recoverable is true when
	// a revision before it is held (etcdpvc recover reads it).
	DeleteRevision int64 `json:"deleteRevision"`
	Recoverable    bool  `json:"recoverable"`
}

// detailTally collects details, bounded at n each: what one worker of a
// parallel read found.
type detailTally struct {
	terminating    topN[TerminatingObject]
	unreadable     topN[UnreadableObject]
	deleted        topN[DeletedKey]
	nTerm, nUnread int64
	nDel, nRecov   int64
	oldest, newest time.Time
}

func newDetailTally(n int) *detailTally {
	return &detailTally{
		terminating: topN[TerminatingObject]{n: n, less: func(a, b TerminatingObject) bool { return a.Key > b.Key }},
		unreadable:  topN[UnreadableObject]{n: n, less: func(a, b UnreadableObject) bool { return a.Key > b.Key }},
		deleted:     topN[DeletedKey]{n: n, less: func(a, b DeletedKey) bool { return a.Key > b.Key }},
	}
}

// item adds what it (a current object read) shows: its creation time,
// whether it is Terminating, or why it could not be read.
func (d *detailTally) item(it ListItem, group, why string) {
	if it.Summary == nil {
		d.nUnread++
		d.unreadable.add(UnreadableObject{Key: it.Key, Resource: group, Why: why})
		return
	}
	if c := it.Summary.CreationTimestamp; !c.IsZero() {
		if d.oldest.IsZero() || c.Before(d.oldest) {
			d.oldest = c
		}
		if c.After(d.newest) {
			d.newest = c
		}
	}
	if it.Summary.Terminating() {
		d.nTerm++
		d.terminating.add(TerminatingObject{Key: it.Key, Resource: group, Namespace: it.Namespace, Name: it.Name,
			DeletionTimestamp: it.Summary.DeletionTimestamp.UTC(), Finalizers: append([]string{}, it.Summary.Finalizers...)})
	}
}

// deletedKey adds a key whose newest revision, at rev, is a deletion.
func (d *detailTally) deletedKey(prefix, key string, rev int64, recoverable bool) {
	d.nDel++
	if recoverable {
		d.nRecov++
	}
	k := DeletedKey{Key: key, Resource: GroupOf(prefix, key), DeleteRevision: rev, Recoverable: recoverable}
	if _, ns, name, ok := resource.ParseKey(prefix, key); ok {
		k.Namespace, k.Name = ns, name
	}
	d.deleted.add(k)
}

// merge adds o's details to d.
func (d *detailTally) merge(o *detailTally) {
	for _, t := range o.terminating.h {
		d.terminating.add(t)
	}
	for _, u := range o.unreadable.h {
		d.unreadable.add(u)
	}
	for _, k := range o.deleted.h {
		d.deleted.add(k)
	}
	d.nTerm += o.nTerm
	d.nUnread += o.nUnread
	d.nDel += o.nDel
	d.nRecov += o.nRecov
	if !o.oldest.IsZero() && (d.oldest.IsZero() || o.oldest.Before(d.oldest)) {
		d.oldest = o.oldest
	}
	if o.newest.After(d.newest) {
		d.newest = o.newest
	}
}

// report is d as StatsDetails, each list in key order.
func (d *detailTally) report() *StatsDetails {
	sd := &StatsDetails{Terminating: d.terminating.sorted(), TerminatingTotal: d.nTerm,
		Unreadable: d.unreadable.sorted(), UnreadableTotal: d.nUnread,
		Deleted: d.deleted.sorted(), DeletedTotal: d.nDel, RecoverableTotal: d.nRecov}
	if !d.oldest.IsZero() {
		o, n := d.oldest.UTC(), d.newest.UTC()
		sd.OldestCreated, sd.NewestCreated = &o, &n
	}
	return sd
}
