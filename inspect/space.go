package inspect

import (
	"fmt"
	"sort"
	"strings"
)

// SpaceSchemaVersion is the version of SpaceReport's JSON
// (docs/stats-schema.md).
const SpaceSchemaVersion = 1

// DefaultQuota is etcd's --quota-backend-bytes when it is not set.
const DefaultQuota = 2 << 30

// Where the quota was read (SpaceReport.QuotaSource).
const (
	QuotaFlag     = "flag"     // --quota
	QuotaManifest = "manifest" // the etcd manifest's --quota-backend-bytes
	QuotaDefault  = "default"  // not read: etcd's default
)

// Member roles (SpaceMember.Role).
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
	RoleLearner  = "learner"
	RoleFile     = "file"    // a db file, no member
	RoleUnknown  = "unknown" // the member did not answer
)

// Plan steps (SpaceStep.Step).
const (
	StepCompact    = "compact"
	StepDefragment = "defragment"
	StepDisarm     = "disarm"
	StepDelete     = "delete"
)

// Verdicts (SpaceReport.Verdict).
const (
	// SpaceUnder: every member is under the quota with the margin and no
	// NOSPACE alarm is raised; nothing needs doing.
	SpaceUnder = "under"
	// SpaceReclaimable: the plan's compaction and defragmentations get
	// every member under the quota with the margin.
	SpaceReclaimable = "reclaimable"
	// SpaceLiveOver: the live data alone is over the quota with the
	// margin: live data has to be deleted.
	SpaceLiveOver = "live-over-quota"
	// SpaceUnknown: a member's size is unknown (it did not answer).
	SpaceUnknown = "unknown"
)

// RequestLimit is etcd's default --max-request-bytes: a value near it
// cannot grow.
const RequestLimit = 1536 << 10

// SpaceMember is one member's (or a db file's) space.
type SpaceMember struct {
	Name string `json:"name"`
	// ID is the member's ID in hex, as etcdctl prints it ("" for a file).
	ID       string `json:"id,omitempty"`
	Endpoint string `json:"endpoint"`
	Role     string `json:"role"`
	// DBSize is the db file's size (what etcd holds against the quota),
	// DBSizeInUse the part of it its pages in use take.
	DBSize      int64 `json:"dbSize"`
	DBSizeInUse int64 `json:"dbSizeInUse"`
	// Alarms are the alarms the member raised ("NOSPACE", "CORRUPT").
	Alarms           []string `json:"alarms"`
	Revision         int64    `json:"revision"`
	RaftIndex        uint64   `json:"raftIndex,omitempty"`
	RaftAppliedIndex uint64   `json:"raftAppliedIndex,omitempty"`
	// Error says why the member did not answer (its sizes are then 0).
	Error string `json:"error,omitempty"`
}

// Free is what a defragmentation of m would return now: the pages of
// its file not in use.
func (m *SpaceMember) Free() int64 { return max(0, m.DBSize-m.DBSizeInUse) }

// SpaceLive is what the current objects take.
type SpaceLive struct {
	Objects    int64 `json:"objects"`
	KeyBytes   int64 `json:"keyBytes"`
	ValueBytes int64 `json:"valueBytes"`
	// Estimate is the db size they would take alone, after a compaction
	// and a defragmentation (EstimateDBSize).
	Estimate int64 `json:"estimatedDBSize"`
}

// SpaceHistory is what a db file holds beyond the current objects: the
// revisions a compaction at the current revision removes.
type SpaceHistory struct {
	// OldRevisions counts the revisions held that are not a current
	// object's (older values and deletions), OldValueBytes their values.
	OldRevisions  int64 `json:"oldRevisions"`
	OldValueBytes int64 `json:"oldValueBytes"`
}

// SpaceStep is one step of the plan.
type SpaceStep struct {
	Step string `json:"step"`
	// Member names the member a defragmentation is of.
	Member string `json:"member,omitempty"`
	// Revision is the revision a compaction is at.
	Revision int64 `json:"revision,omitempty"`
	// ExpectedSize is the size expected after the step: of the pages in
	// use for a compaction (the file does not shrink), of the member's
	// file for a defragmentation; of the live data to delete for delete.
	ExpectedSize int64  `json:"expectedSize,omitempty"`
	Message      string `json:"message"`
}

// SpaceReport is what `etcdpvc space` reports: each member's size against
// the quota, why it is full, and the plan that frees it.
type SpaceReport struct {
	SchemaVersion int    `json:"schemaVersion"`
	Source        string `json:"source"`
	Quota         int64  `json:"quota"`
	QuotaSource   string `json:"quotaSource"`
	// Margin is the part of the quota, in percent, to stay under; Target
	// the size that leaves it: Quota×(100−Margin)/100.
	Margin  int            `json:"marginPercent"`
	Target  int64          `json:"target"`
	Members []*SpaceMember `json:"members"`
	// NoSpace is true when a member raised the NOSPACE alarm.
	NoSpace         bool  `json:"noSpaceAlarm"`
	Revision        int64 `json:"revision"`
	CompactRevision int64 `json:"compactRevision"`
	// Compactable is what a compaction at Revision would free of the
	// largest member's pages in use (an estimate: in use − Live.Estimate).
	Compactable int64         `json:"compactable"`
	History     *SpaceHistory `json:"history,omitempty"`
	Live        SpaceLive     `json:"live"`
	// Groups are the largest groups of live data by resource and
	// namespace, Events the events' counts ("events" in the core group;
	// nil when there are none).
	Groups  []*GroupStats  `json:"groups"`
	Events  *ResourceStats `json:"events,omitempty"`
	Largest []LargeObject  `json:"largest"`
	HotKeys *HotKeys       `json:"hotKeys"`
	Leases  *LeaseStats    `json:"leases"`
	// HelmReleases are the Helm releases that keep more revisions than
	// Helm's default history (HelmHistoryMax), the most bytes first.
	HelmReleases []*HelmRelease `json:"helmReleases"`
	Plan         []SpaceStep    `json:"plan"`
	Verdict      string         `json:"verdict"`
	Notes        []string       `json:"notes,omitempty"`
	Stats        *StatsReport   `json:"-"`
}

// SpaceInput is what Space diagnoses.
type SpaceInput struct {
	Source      string
	Quota       int64
	QuotaSource string
	Margin      int
	Members     []*SpaceMember
	// Revision and CompactRevision are the store's.
	Revision, CompactRevision int64
	// Stats is the read of every key (BoltStats or LiveStats, by resource
	// and namespace).
	Stats *StatsReport
	// Top is how many groups to list.
	Top int
}

// Page figures of EstimateDBSize: bbolt's page, etcd's fill of the key
// bucket on a defragmentation, and what each revision adds to its value
// (bbolt's leaf element, etcd's revision key, the KeyValue's revisions,
// version, lease and tags).
const (
	pageSize        = 4096
	defragFill      = 0.9
	perRevision     = 16 + 17 + 32
	emptyDBEstimate = 40 << 10
)

// EstimateDBSize is about the size a db holding objects current values
// of keyBytes and valueBytes in all takes after a compaction and a
// defragmentation: each revision's key and value with etcd's and bbolt's
// overhead, on pages filled as a defragmentation fills them, and the
// pages of etcd's other buckets. It is an estimate, not a measurement:
// values larger than a page take whole pages.
func EstimateDBSize(objects, keyBytes, valueBytes int64) int64 {
	data := float64(keyBytes+valueBytes+objects*perRevision) / defragFill
	return int64(data) + emptyDBEstimate
}

// Space diagnoses in: the plan, in order, with the sizes expected after
// each step, and whether it gets every member under the quota with the
// margin.
func Space(in SpaceInput) *SpaceReport {
	st := in.Stats
	r := &SpaceReport{SchemaVersion: SpaceSchemaVersion, Source: in.Source, Quota: in.Quota, QuotaSource: in.QuotaSource, Margin: in.Margin,
		Target: in.Quota * int64(100-in.Margin) / 100, Members: in.Members, Revision: in.Revision, CompactRevision: in.CompactRevision,
		Largest: st.Largest, HotKeys: st.HotKeys, Leases: st.Leases, Stats: st}
	if r.Members == nil {
		r.Members = []*SpaceMember{}
	}
	r.Live = SpaceLive{Objects: st.Objects, KeyBytes: st.KeyBytes, ValueBytes: st.Bytes, Estimate: EstimateDBSize(st.Objects, st.KeyBytes, st.Bytes)}
	if st.Revisions != nil {
		h := &SpaceHistory{OldRevisions: *st.Revisions - st.Objects}
		for _, rs := range st.Resources {
			h.OldValueBytes += *rs.HistoryBytes
		}
		h.OldValueBytes -= st.Bytes
		r.History = h
	}
	for _, rs := range st.Resources {
		if rs.Resource == "events" {
			r.Events = rs
		}
	}
	r.HelmReleases = []*HelmRelease{}
	for _, h := range st.HelmReleases {
		if h.Revisions > HelmHistoryMax && len(r.HelmReleases) < in.Top {
			r.HelmReleases = append(r.HelmReleases, h)
		}
	}
	r.Groups = st.Groups
	if len(r.Groups) > in.Top {
		r.Groups = r.Groups[:in.Top]
	}
	if r.Groups == nil {
		r.Groups = []*GroupStats{}
	}
	if len(st.Largest) > 0 && st.Largest[0].Bytes >= RequestLimit*3/4 {
		r.Notes = append(r.Notes, fmt.Sprintf("%s takes %s, near etcd's default request limit (%s): it cannot grow much", st.Largest[0].Key, HumanBytes(st.Largest[0].Bytes), HumanBytes(RequestLimit)))
	}
	if st.Incomplete != "" {
		r.Notes = append(r.Notes, "the read of the keys is incomplete: "+st.Incomplete)
	}
	r.Notes = append(r.Notes, "keys outside the apiserver's prefix are not counted in the live data")
	r.plan()
	return r
}

// plan fills Plan, Verdict and Compactable.
func (r *SpaceReport) plan() {
	live := r.Live.Estimate
	known, alarms := true, false
	for _, m := range r.Members {
		if m.Error != "" {
			known = false
			continue
		}
		for _, a := range m.Alarms {
			alarms = alarms || a == "NOSPACE"
		}
	}
	r.NoSpace = alarms
	// A compaction frees something when revisions were written since
	// the last one, and for a db file, when it holds old revisions.
	compacts := r.Revision > r.CompactRevision && (r.History == nil || r.History.OldRevisions > 0)
	// freed is about what a compaction frees of m's pages in use: the
	// old revisions a db file counts, else what m uses beyond the live
	// data's estimate.
	freed := func(m *SpaceMember) int64 {
		if !compacts {
			return 0
		}
		if h := r.History; h != nil {
			var avgKey int64
			if r.Live.Objects > 0 {
				avgKey = r.Live.KeyBytes / r.Live.Objects
			}
			return min(m.DBSizeInUse, h.OldValueBytes+h.OldRevisions*(avgKey+perRevision))
		}
		return max(0, m.DBSizeInUse-live)
	}
	inUseAfter := func(m *SpaceMember) int64 { return m.DBSizeInUse - freed(m) }
	var largest *SpaceMember
	for _, m := range r.Members {
		if m.Error == "" && (largest == nil || m.DBSizeInUse > largest.DBSizeInUse) {
			largest = m
		}
	}
	if compacts && largest != nil {
		r.Compactable = freed(largest)
		msg := fmt.Sprintf("compact at revision %d (%d revisions since the last compaction at %d): frees about %s of pages in use; the file does not shrink, etcd reuses the pages",
			r.Revision, r.Revision-r.CompactRevision, r.CompactRevision, HumanBytes(r.Compactable))
		r.Plan = append(r.Plan, SpaceStep{Step: StepCompact, Revision: r.Revision, ExpectedSize: inUseAfter(largest), Message: msg})
	}
	under := known
	for _, m := range r.Members {
		under = under && m.DBSize <= r.Target
	}
	fits := known
	for _, m := range DefragOrder(r.Members) {
		after := r.AfterDefragment(m)
		if !r.DefragmentHelps(m) {
			if m.DBSize > r.Target {
				fits = false
			}
			continue
		}
		msg := fmt.Sprintf("defragment %s (%s): about %s → %s", m.Name, m.Role, HumanBytes(m.DBSize), HumanBytes(after))
		r.Plan = append(r.Plan, SpaceStep{Step: StepDefragment, Member: m.Name, ExpectedSize: after, Message: msg})
		if after > r.Target {
			fits = false
		}
	}
	switch {
	case !known:
		r.Verdict = SpaceUnknown
	case live > r.Target:
		r.Verdict = SpaceLiveOver
		need := live - r.Target
		r.Plan = append(r.Plan, SpaceStep{Step: StepDelete, ExpectedSize: need,
			Message: fmt.Sprintf("the live data alone (about %s) is over the quota less the margin (%s): delete about %s of it before the NOSPACE alarm is disarmed, then compact and defragment again%s", HumanBytes(live), HumanBytes(r.Target), HumanBytes(need), r.toDelete(need))})
	case under && !alarms:
		r.Verdict = SpaceUnder
	case fits:
		r.Verdict = SpaceReclaimable
		if alarms {
			r.Plan = append(r.Plan, SpaceStep{Step: StepDisarm, Message: fmt.Sprintf("disarm the NOSPACE alarm: every member is then under %s (the quota %s less %d%%)", HumanBytes(r.Target), HumanBytes(r.Quota), r.Margin)})
		}
	default:
		// Over the target though the live data is not: the estimate
		// does not get there (the steps listed are what can be done).
		r.Verdict = SpaceLiveOver
		r.Plan = append(r.Plan, SpaceStep{Step: StepDelete, Message: "the steps above do not get every member under the quota less the margin: delete live data"})
	}
	if r.Plan == nil {
		r.Plan = []SpaceStep{}
	}
}

// toDelete names the largest groups of live data whose values make up
// need, three at most, with their objects and bytes, and when Events are
// among them the command that deletes Events by age ("" without groups).
func (r *SpaceReport) toDelete(need int64) string {
	var named []string
	events := false
	var sum int64
	for _, g := range r.Groups {
		if sum >= need || len(named) == 3 || g.Resource == nil {
			break
		}
		what := *g.Resource
		if g.Namespace != nil && *g.Namespace != "" {
			what += " in " + *g.Namespace
		}
		named = append(named, fmt.Sprintf("%s (%d objects, %s)", what, g.Objects, HumanBytes(g.Bytes)))
		events = events || *g.Resource == "events"
		sum += g.Bytes
	}
	if len(named) == 0 {
		return ""
	}
	out := "; the largest: " + strings.Join(named, ", ")
	if events {
		out += "; `etcdpvc delete events -A --older-than DURATION` deletes Events by age (--dry-run lists them first)"
	}
	return out
}

// AfterDefragment is about m's db size after a defragmentation that
// follows the plan's compaction. Live etcd compacted at its current
// revision (by the plan, or already) holds the live data alone: about
// Live.Estimate, whatever the member reports in use (etcd counts the pages
// a compaction freed only at its next write, and NOSPACE refuses writes).
// A db file's pages in use are exact: without a compaction its
// defragmentation returns its free pages.
func (r *SpaceReport) AfterDefragment(m *SpaceMember) int64 {
	if m.Role == RoleFile && (r.Revision <= r.CompactRevision || r.History == nil || r.History.OldRevisions == 0) {
		return m.DBSizeInUse
	}
	return min(m.DBSize, r.Live.Estimate)
}

// DefragmentHelps reports whether a defragmentation of m after the plan's
// compaction returns enough to be worth it (WorthDefragmenting).
func (r *SpaceReport) DefragmentHelps(m *SpaceMember) bool {
	return m.DBSize-r.AfterDefragment(m) >= WorthDefragmenting(m.DBSize)
}

// WorthDefragmenting is the least a defragmentation of a file of size
// bytes must return to be planned: a tenth of it (more than the error of
// Live.Estimate), at least 16 pages.
func WorthDefragmenting(size int64) int64 {
	return max(size/10, 16*pageSize)
}

// DefragOrder orders members for defragmentation: followers and learners
// first, by name, the leader last (its defragmentation pauses it, and a
// leader paused for long loses its leadership). Members that did not
// answer are left out.
func DefragOrder(members []*SpaceMember) []*SpaceMember {
	var out []*SpaceMember
	for _, m := range members {
		if m.Error == "" {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Role == RoleLeader, out[j].Role == RoleLeader
		if a != b {
			return b
		}
		return out[i].Name < out[j].Name
	})
	return out
}
