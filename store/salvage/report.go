package salvage

import (
	"fmt"
	"io"
	"strings"
)

// Report is what a Scan found and did not find. Counts are exact for what
// the scan read; where the file cannot tell (a lost page's contents), the
// report says what is unknown instead of guessing. Its parts are
// embedded: their fields are the Report's own, in JSON too.
type Report struct {
	ReportFile
	ReportPages
	ReportKeys
	ReportState

	// Complete is true only when the scan established that nothing was
	// lost: the tree of buckets was followed from the newer of two meta
	// pages that both verify, no page of it was damaged or missing, and
	// no key was dropped, and a sha256 trailer, if any, matches.
	// (Unreadable pages outside that tree are free pages: listed, but
	// nothing is lost with them.) bbolt keeps no checksum of its pages:
	// damage inside a value that leaves it well formed cannot be seen, so
	// only Trailer "matches" shows every byte intact.
	Complete bool
	// Warnings says, in sentences, what the counts mean for the result.
	Warnings []string
}

// ReportFile is the part of a Report about the file as a whole.
type ReportFile struct {
	// FileSize is the input's size in bytes, trailer included.
	FileSize int64
	// PageSize is the bbolt page size used, and PageSizeSource how it was
	// established ("meta page 0", "meta page 1", or "detected from page
	// headers").
	PageSize       int
	PageSizeSource string
	// Trailer describes the input's sha256 trailer: "none", "matches" (the
	// file is byte for byte what etcd wrote) or "mismatch".
	Trailer string
	// TrailerVerifiedEarlier is true when Trailer "matches" comes from an
	// earlier run's record that this file, unchanged since, matched its
	// trailer (Options.HashCacheDir), and the scan found it whole: it was
	// not hashed again.
	TrailerVerifiedEarlier bool

	// Tree says how pages were assigned to buckets: "meta page N (txid T)"
	// when the tree of buckets could be followed from a meta page, or ""
	// when no meta page led to a usable root bucket and leaf pages were
	// recognised by the shape of their items (see Warnings).
	Tree string
}

// ReportPages is the part of a Report about the file's pages.
type ReportPages struct {
	// Pages is the number of page positions in the file; PagesRead those
	// whose header was a valid bbolt page header at its position;
	// PagesOverflow the positions holding the continuation of a page
	// before them; PagesEmpty never-written (all-zero) positions;
	// PagesFree the positions without a page header that the tree of the
	// newest transaction does not name (left-overs of freed pages;
	// counted only when that tree is known); PagesUnreadable the rest,
	// listed (up to MaxListed) in Unreadable.
	Pages, PagesRead, PagesOverflow, PagesEmpty, PagesFree, PagesUnreadable int64
	// PagesStale counts leaf and branch pages that are not part of the tree
	// of buckets: pages bbolt freed, which still hold old contents. They
	// are used only to fill a lost range (OrphanPagesUsed).
	PagesStale, OrphanPagesUsed int64
	// Unreadable lists damaged pages: its id and what it seemed to be.
	Unreadable []PageProblem
	// LostRanges lists the parts of the "key" bucket's index whose pages
	// did not survive: the revisions the surviving branch page names for
	// them.
	LostRanges []LostRange
	// OtherLost lists pages of the other buckets that did not survive.
	OtherLost []PageProblem
}

// ReportKeys is the part of a Report about the "key" bucket's revisions
// and the keys kept.
type ReportKeys struct {
	// Keys is the number of etcd keys recovered, Deleted the number whose
	// newest surviving revision is a deletion (they stay deleted), and
	// Resources the recovered keys per resource.
	Keys, Deleted int
	Resources     []ResourceCount
	// RevisionsRead counts the revision entries read from the "key"
	// bucket (puts and deletions, a copy on a freed page included);
	// Superseded those not kept: older revisions of a key, deletions,
	// unreadable ones and copies; Markers the empty revision entries
	// `etcdutl snapshot restore --bump-revision` writes.
	RevisionsRead, Superseded, Markers int64
	// InvalidItems counts items of "key" bucket pages that do not parse as
	// a revision key and an mvccpb.KeyValue consistent with it (or are out
	// of order); SuspectRevisions the items that do parse but are on such
	// a damaged page: bbolt keeps no checksum, so their bytes cannot be
	// trusted, and they are not used (the page's range is lost).
	InvalidItems, SuspectRevisions int64
	// Dropped lists the keys whose newest revision was not kept, and why.
	Dropped []Drop
	// Uncertain lists kept keys whose revision came only from a page
	// outside the tree of buckets, at or below the compaction revision (or
	// with no compaction revision known): compaction may have removed it
	// and a deletion after it, so the key may be one etcd had deleted.
	Uncertain []Drop
	// PossiblyStale counts kept keys whose revision is older than the end
	// of a lost range: a newer revision, or a deletion, may have been on
	// the lost pages; PossiblyStaleKeys lists them (up to MaxListed).
	PossiblyStale     int
	PossiblyStaleKeys []string
}

// ReportState is the part of a Report about the rest of etcd's state:
// revisions, compaction, leases, members and other buckets.
type ReportState struct {
	// MaxRevisionSeen is the highest main revision of any "key" bucket
	// entry used, and MaxRevisionNamed the highest a surviving branch page
	// of the "key" bucket names (its pages may be lost). etcd's revision
	// was at least their maximum.
	MaxRevisionSeen, MaxRevisionNamed int64
	// CompactRevision is the finished compaction salvaged from "meta" (0:
	// none), ScheduledCompactRevision the scheduled one, and
	// ConsistentIndex the raft index the meta bucket recorded.
	CompactRevision, ScheduledCompactRevision int64
	ConsistentIndex                           uint64
	// Leases is the number of leases recovered; LeasesMissing the leases
	// kept keys are attached to that were not found (etcd then logs an
	// error for each and the key stays without lease).
	Leases, LeasesMissing int
	// Members is the number of items recovered from "members".
	Members int
	// OtherBuckets names etcd buckets found that a salvage does not copy
	// (auth, alarm, cluster, ...).
	OtherBuckets []string
}

// MaxListed bounds the lists of a Report (pages, drops); the counts stay
// exact beyond it.
const MaxListed = 10000

// PageProblem is one damaged or missing page.
type PageProblem struct {
	ID uint64
	// Seemed is what the page seemed to be ("leaf of bucket key",
	// "branch", "not a page header", ...), Problem what is wrong.
	Seemed, Problem string
}

// LostRange is a part of the "key" bucket's index whose page did not
// survive: the revisions From (inclusive) to To (exclusive; zero: no upper
// bound), as the parent branch page names them.
type LostRange struct {
	From, To Revision
	// Page is the lost page, Parent the branch page naming it (0: the
	// bucket's root).
	Page, Parent uint64
	Problem      string
}

// String says it as a sentence: "index names revisions 1234_0..1300_0 on
// page 88, unreadable: ...".
func (l LostRange) String() string {
	to := ""
	if l.To != (Revision{}) {
		to = l.To.String()
	}
	return fmt.Sprintf("index names revisions %s..%s on page %d (branch page %d), %s", l.From, to, l.Page, l.Parent, l.Problem)
}

// ResourceCount is the number of keys recovered of one resource
// ("persistentvolumeclaims", "deployments.apps"; "(other)" for keys that
// are not a Kubernetes object's).
type ResourceCount struct {
	Resource string
	Keys     int
}

// Drop is a key whose newest revision was not kept.
type Drop struct {
	Key string
	// Revision is the newest revision found, Kept the one kept instead
	// (zero: none).
	Revision, Kept Revision
	Reason         string
}

// WriteText writes the report for a person.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	trailer := r.Trailer
	if r.TrailerVerifiedEarlier {
		trailer += " (verified by an earlier run; the file has not changed since)"
	}
	fmt.Fprintf(&b, "file: %d bytes, page size %d (%s), sha256 trailer: %s\n", r.FileSize, r.PageSize, r.PageSizeSource, trailer)
	tree := r.Tree
	if tree == "" {
		tree = "not found: pages recognised by their contents"
	}
	fmt.Fprintf(&b, "tree of buckets: %s\n", tree)
	fmt.Fprintf(&b, "pages: %d, read %d, overflow %d, empty %d, free %d, unreadable %d, stale (freed) %d, used to fill lost ranges %d\n",
		r.Pages, r.PagesRead, r.PagesOverflow, r.PagesEmpty, r.PagesFree, r.PagesUnreadable, r.PagesStale, r.OrphanPagesUsed)
	for _, p := range r.Unreadable {
		fmt.Fprintf(&b, "  page %d: %s: %s\n", p.ID, p.Seemed, p.Problem)
	}
	for _, l := range r.LostRanges {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	for _, p := range r.OtherLost {
		fmt.Fprintf(&b, "  page %d (%s): %s\n", p.ID, p.Seemed, p.Problem)
	}
	fmt.Fprintf(&b, "keys recovered: %d, deleted (stay deleted): %d, dropped: %d, uncertain: %d, possibly stale: %d\n",
		r.Keys, r.Deleted, len(r.Dropped), len(r.Uncertain), r.PossiblyStale)
	for _, rc := range r.Resources {
		fmt.Fprintf(&b, "  %-40s %d\n", rc.Resource, rc.Keys)
	}
	fmt.Fprintf(&b, "revisions read: %d, superseded: %d, invalid items: %d, not used (on damaged pages): %d\n", r.RevisionsRead, r.Superseded, r.InvalidItems, r.SuspectRevisions)
	for _, d := range r.Dropped {
		fmt.Fprintf(&b, "  dropped %s at %s: %s\n", d.Key, d.Revision, d.Reason)
	}
	for _, d := range r.Uncertain {
		fmt.Fprintf(&b, "  uncertain %s at %s: %s\n", d.Key, d.Kept, d.Reason)
	}
	fmt.Fprintf(&b, "revision: highest seen %d, highest named by the index %d; compaction %d (scheduled %d)\n",
		r.MaxRevisionSeen, r.MaxRevisionNamed, r.CompactRevision, r.ScheduledCompactRevision)
	fmt.Fprintf(&b, "leases: %d (missing for kept keys: %d), members: %d\n", r.Leases, r.LeasesMissing, r.Members)
	if len(r.OtherBuckets) > 0 {
		fmt.Fprintf(&b, "not copied: buckets %s\n", strings.Join(r.OtherBuckets, ", "))
	}
	if r.Complete {
		b.WriteString("complete: every page of the tree was read\n")
	} else {
		b.WriteString("NOT complete\n")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
