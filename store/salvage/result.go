package salvage

import (
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/etcdpvc/etcdpvc/resource"
)

// Result is a finished scan: its Report, and the index of the revisions a
// snapshot of the salvage would hold (WriteSnapshot). It reads its values
// again from the input, which must stay open and unchanged until then.
type Result struct {
	// Report is what the scan found.
	Report *Report

	r       io.ReaderAt
	size    int64
	kept    []keptRev
	leases  []rawItem
	members []rawItem
	compact int64
}

// rawItem is a copied item of a small bucket.
type rawItem struct{ key, value []byte }

// newResult starts the Result of the index: what the write needs besides
// the kept revisions (the compaction salvaged, the leases and members
// found), which the judge does not change. finish completes it.
func (s *scanner) newResult() *Result {
	rep := s.rep
	res := &Result{Report: rep, r: s.r, size: s.size}
	rep.MaxRevisionSeen, rep.MaxRevisionNamed = s.maxSeen, s.maxNamed

	// Compaction, as salvaged, if consistent.
	fin, finOK := compactRev(s.metaItems[metaFinishedCompact])
	sch, schOK := compactRev(s.metaItems[metaScheduledCompact])
	compactKnown := false
	switch {
	case finOK && schOK && fin <= sch, finOK && !schOK, schOK && !finOK:
		rep.CompactRevision, rep.ScheduledCompactRevision, compactKnown = fin, sch, true
	case finOK || schOK:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the compaction revisions salvaged are inconsistent (finished %d, scheduled %d): not used", fin, sch))
	case !s.tree || len(s.metaItems) == 0:
	default:
		compactKnown = true // never compacted
	}
	if v := s.metaItems[metaConsistentIndex]; len(v) == 8 {
		rep.ConsistentIndex = binary.BigEndian.Uint64(v)
	}
	s.compactKnown = compactKnown
	s.compact = max(rep.CompactRevision, rep.ScheduledCompactRevision)

	for _, k := range slices.Sorted(maps.Keys(s.leases)) {
		res.leases = append(res.leases, rawItem{[]byte(k), s.leases[k]})
	}
	rep.Leases = len(res.leases)
	for _, k := range slices.Sorted(maps.Keys(s.members)) {
		res.members = append(res.members, rawItem{[]byte(k), s.members[k]})
	}
	rep.Members = len(res.members)
	res.compact = max(s.compact, rep.MaxRevisionSeen, rep.MaxRevisionNamed)
	return res
}

// finish turns the judged index into res's kept revisions and the
// report (res from newResult).
func (s *scanner) finish(res *Result) {
	rep := s.rep
	if !s.tree {
		s.loseShapeChildren()
	}
	v := s.keep()
	byKey := func(a, b Drop) int { return strings.Compare(a.Key, b.Key) }
	slices.SortFunc(v.drops, byKey)
	for _, d := range v.drops {
		s.drop(d)
	}
	slices.SortFunc(v.uncertain, byKey)
	rep.Uncertain = append(rep.Uncertain, v.uncertain[:min(len(v.uncertain), max(0, MaxListed-len(rep.Uncertain)))]...)
	slices.Sort(v.stale)
	rep.PossiblyStaleKeys = append(rep.PossiblyStaleKeys, v.stale[:min(len(v.stale), max(0, MaxListed-len(rep.PossiblyStaleKeys)))]...)
	rep.Superseded = rep.RevisionsRead - int64(rep.Keys)
	for k, rc := range v.perRes {
		rep.Resources = append(rep.Resources, ResourceCount{Resource: k, Keys: rc})
	}
	sort.Slice(rep.Resources, func(i, j int) bool { return rep.Resources[i].Resource < rep.Resources[j].Resource })
	slices.SortFunc(v.kept, func(a, b keptRev) int { return a.rev.cmp(b.rev) })
	res.kept = v.kept

	for _, it := range res.leases {
		delete(v.leased, int64(binary.BigEndian.Uint64(it.key)))
	}
	rep.LeasesMissing = len(v.leased)
	for k := range s.others {
		rep.OtherBuckets = append(rep.OtherBuckets, k)
	}
	sort.Strings(rep.OtherBuckets)

	rep.Complete = s.tree && !s.fillAll && len(s.lost) == 0 && len(rep.OtherLost) == 0 && rep.Dropped == nil && rep.Trailer != "mismatch"
	s.warn(s.compactKnown)
}

// keyVerdicts is what keep decides of the index's keys, in the map's order:
// the revisions kept, the keys dropped, the uncertain and possibly stale
// ones, the kept keys per resource, and the leases kept keys are
// attached to.
type keyVerdicts struct {
	kept      []keptRev
	drops     []Drop
	uncertain []Drop
	stale     []string
	perRes    map[string]int
	leased    map[int64]bool
}

// keep decides, of each key of the judged index, whether it is kept,
// deleted or dropped, and whether it is uncertain or possibly stale; it
// counts the report's Keys and Deleted and PossiblyStale.
func (s *scanner) keep() keyVerdicts {
	rep := s.rep
	compactKnown, compact := s.compactKnown, s.compact
	maxLost, openLost := s.lostBounds()
	v := keyVerdicts{perRes: map[string]int{}, leased: map[int64]bool{}}
	// The keys in the map's order, what is listed sorted after (only
	// what a damaged file lists is sorted, not every key).
	for key, i := range s.keys {
		e := s.ents.at(i)
		var bad []badRev
		if s.badRevs != nil {
			bad = s.badRevs[i]
		}
		newest := Revision{}
		if e.hasKeep {
			newest = e.keep.rev
		}
		if e.hasTomb && newest.less(e.tomb) {
			newest = e.tomb
		}
		for _, b := range bad {
			if newest.less(b.rev) {
				newest = b.rev
			}
		}
		switch {
		case e.hasTomb && e.tomb == newest:
			rep.Deleted++
			continue
		case !e.hasKeep || (e.hasTomb && e.keep.rev.less(e.tomb)):
			reason := "no revision of it is readable"
			if e.hasKeep {
				reason = fmt.Sprintf("its newest readable revision %s is older than its deletion at %s", e.keep.rev, e.tomb)
			}
			if len(bad) > 0 {
				reason = fmt.Sprintf("unreadable (%s); %s", bad[len(bad)-1].err, reason)
			}
			v.drops = append(v.drops, Drop{Key: key, Revision: newest, Reason: reason})
			continue
		}
		if newest != e.keep.rev {
			v.drops = append(v.drops, Drop{Key: key, Revision: newest, Kept: e.keep.rev, Reason: fmt.Sprintf("newer revision unreadable (%s): kept the older %s", bad[len(bad)-1].err, e.keep.rev)})
		}
		rep.Keys++
		v.kept = append(v.kept, e.keep)
		if e.keepLease != 0 {
			v.leased[e.keepLease] = true
		}
		v.perRes[resourceOf(s.opts.Prefix, key)]++
		if e.keepOrphan && (!compactKnown || e.keep.rev.Main <= compact) {
			v.uncertain = append(v.uncertain, Drop{Key: key, Revision: newest, Kept: e.keep.rev,
				Reason: "found only on a page outside the tree of buckets, at or below the compaction revision (or none is known): compaction may have removed it and a deletion after it"})
		}
		if openLost || e.keep.rev.Main < maxLost {
			rep.PossiblyStale++
			v.stale = append(v.stale, key)
		}
	}
	return v
}

func (s *scanner) drop(d Drop) {
	if len(s.rep.Dropped) < MaxListed {
		s.rep.Dropped = append(s.rep.Dropped, d)
	}
}

// warn adds the report's sentences.
func (s *scanner) warn(compactKnown bool) {
	rep := s.rep
	if !s.tree {
		rep.Warnings = append(rep.Warnings, "no meta page led to a readable root bucket: every leaf page was recognised by its contents, freed pages included; a key deleted before the last compaction may reappear (listed as uncertain), and so may a revoked lease")
	}
	if s.fillAll {
		rep.Warnings = append(rep.Warnings, "the tree was followed from a meta page not known to be the newest (the other one is damaged): pages outside it were read as well, for the writes of a newer transaction")
		if rep.PagesUnreadable > 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d unreadable page(s) outside the tree may have held that transaction's writes", rep.PagesUnreadable))
		}
	}
	if s.truncated {
		rep.Warnings = append(rep.Warnings, "the file is cut short: a meta page names pages beyond its end, or it ends inside a page")
	}
	if !s.tree && rep.PossiblyStale > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("pages were lost and no index tells which keys they held: any of the %d kept keys may have had a newer revision or a deletion there", rep.PossiblyStale))
	}
	if len(s.lost) > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d part(s) of the key bucket's index are lost; %d kept key(s) are older than the end of a lost part and may have had newer revisions or a deletion there", len(s.lost), rep.PossiblyStale))
	}
	if len(rep.OtherLost) > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d page(s) of the meta, lease or members buckets are lost", len(rep.OtherLost)))
	}
	if !compactKnown {
		rep.Warnings = append(rep.Warnings, "the compaction revision is not known")
	}
	if rep.LeasesMissing > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d lease(s) that kept keys are attached to were not found: etcd keeps those keys without a lease", rep.LeasesMissing))
	}
	if len(rep.OtherBuckets) > 0 {
		rep.Warnings = append(rep.Warnings, "buckets not copied: "+strings.Join(rep.OtherBuckets, ", ")+" (authentication users and roles among them are not restored)")
	}
	if rep.Trailer == "mismatch" {
		rep.Warnings = append(rep.Warnings, "the last 32 bytes, a sha256 trailer by etcd's rule (the size is 32 over a multiple of 512), do not match the file: it was damaged after it was written (or was cut to that size)")
	}
}

// compactRev reads a compaction revision from "meta" (17-byte revision
// form, or 8 bytes).
func compactRev(v []byte) (int64, bool) {
	if len(v) != 17 && len(v) != 8 {
		return 0, false
	}
	r := int64(binary.BigEndian.Uint64(v[:8]))
	return r, r > 0
}

func resourceOf(prefix, key string) string {
	if r, _, _, ok := resource.ParseKey(prefix, key); ok {
		return r.String()
	}
	return "(other)"
}
