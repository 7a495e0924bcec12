package inspect

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/etcdpvc/etcdpvc/internal/textout"
)

// SpaceMemberColumns head the members' table (SpaceReport.MemberRows).
var SpaceMemberColumns = []string{"MEMBER", "ROLE", "DB SIZE", "IN USE", "FREE", "QUOTA USED", "REVISION", "ALARMS", "ENDPOINT"}

// MemberRows are the members, under SpaceMemberColumns.
func (r *SpaceReport) MemberRows() [][]string {
	var rows [][]string
	for _, m := range r.Members {
		if m.Error != "" {
			rows = append(rows, []string{m.Name, m.Role, "?", "?", "?", "?", "?", "?", m.Endpoint + " (" + m.Error + ")"})
			continue
		}
		alarms := strings.Join(m.Alarms, ",")
		if alarms == "" {
			alarms = "-"
		}
		used := "?"
		if r.Quota > 0 {
			used = strconv.FormatInt(m.DBSize*100/r.Quota, 10) + "%"
		}
		rows = append(rows, []string{m.Name, m.Role, HumanBytes(m.DBSize), HumanBytes(m.DBSizeInUse), HumanBytes(m.Free()), used,
			strconv.FormatInt(m.Revision, 10), alarms, m.Endpoint})
	}
	return rows
}

// Why returns the lines that say why the db is full, in numbers.
func (r *SpaceReport) Why() []string {
	var out []string
	h := fmt.Sprintf("history:      a compaction at revision %d would free about %s of pages in use", r.Revision, HumanBytes(r.Compactable))
	switch {
	case r.Revision <= r.CompactRevision:
		h = fmt.Sprintf("history:      none to free: etcd is compacted at its current revision %d", r.Revision)
	case r.History != nil && r.History.OldRevisions == 0:
		h = "history:      none to free: the file holds no old revision under the prefix"
	}
	switch {
	case r.Revision <= r.CompactRevision || r.History != nil && r.History.OldRevisions == 0:
	case r.History != nil:
		h += fmt.Sprintf(" (%d old revisions held, %s of values)", r.History.OldRevisions, HumanBytes(r.History.OldValueBytes))
	default:
		h += " (an estimate: the largest member's pages in use less the live data's; a snapshot read with --db counts the old revisions)"
	}
	out = append(out, h)
	var free int64
	for _, m := range r.Members {
		free = max(free, m.Free())
	}
	out = append(out, fmt.Sprintf("free pages:   a defragmentation now would return up to %s (db size − in use)", HumanBytes(free)))
	if r.Revision <= r.CompactRevision {
		for _, m := range r.Members {
			if m.Error == "" && m.Role != RoleFile && m.DBSizeInUse-r.AfterDefragment(m) >= WorthDefragmenting(m.DBSize) {
				out = append(out, fmt.Sprintf("stale in use: %s reports %s in use for about %s of live data: etcd counts the pages a compaction freed only at its next write (NOSPACE refuses writes); a defragmentation returns them",
					m.Name, HumanBytes(m.DBSizeInUse), HumanBytes(r.Live.Estimate)))
			}
		}
	}
	out = append(out,
		fmt.Sprintf("live data:    %d objects, %s of values and %s of keys: about %s of db once compacted and defragmented",
			r.Live.Objects, HumanBytes(r.Live.ValueBytes), HumanBytes(r.Live.KeyBytes), HumanBytes(r.Live.Estimate)))
	for _, h := range r.HelmReleases {
		out = append(out, fmt.Sprintf("helm:         release %s/%s keeps %d revisions (%s, newest v%d): about %s in those beyond Helm's default history of %d (helm upgrade --history-max)",
			h.Namespace, h.Name, h.Revisions, HumanBytes(h.Bytes), h.Newest, HumanBytes(h.Beyond()), HelmHistoryMax))
	}
	if e := r.Events; e != nil {
		out = append(out, fmt.Sprintf("events:       %d objects, %s, %d with a lease", e.Objects, HumanBytes(e.Bytes), e.Leased))
	}
	return out
}

// PlanVerdict is the line above the plan.
func (r *SpaceReport) PlanVerdict() string {
	switch r.Verdict {
	case SpaceUnder:
		if len(r.Plan) == 0 {
			return fmt.Sprintf("every member is under %s (the quota less %d%%) and no NOSPACE alarm is raised: nothing to do", HumanBytes(r.Target), r.Margin)
		}
		return fmt.Sprintf("every member is under %s (the quota less %d%%) and no NOSPACE alarm is raised: nothing needs doing; the steps below would free pages", HumanBytes(r.Target), r.Margin)
	case SpaceReclaimable:
		return fmt.Sprintf("the plan gets every member under %s (the quota %s less %d%%); `etcdpvc space --reclaim` carries it out", HumanBytes(r.Target), HumanBytes(r.Quota), r.Margin)
	case SpaceLiveOver:
		return fmt.Sprintf("the plan does NOT get under %s (the quota %s less %d%%): live data has to be deleted", HumanBytes(r.Target), HumanBytes(r.Quota), r.Margin)
	}
	return "a member did not answer: its size, and whether the plan gets under the quota, are unknown"
}

// Write writes the report: indented JSON, or its lines and tables.
func (r *SpaceReport) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		return WriteDocument(w, "json", r)
	}
	fmt.Fprintf(w, "source:       %s\n", printable(r.Source))
	fmt.Fprintf(w, "quota:        %s (%s)\n", HumanBytes(r.Quota), r.QuotaSource)
	fmt.Fprintf(w, "revision:     %d, compacted at %d\n", r.Revision, r.CompactRevision)
	if r.NoSpace {
		fmt.Fprintln(w, "alarm:        NOSPACE raised: etcd refuses writes (mvcc: database space exceeded)")
	}
	fmt.Fprintln(w)
	if err := textout.NewTable(w, SpaceMemberColumns...).Rows(r.MemberRows()); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nWHY")
	for _, l := range r.Why() {
		fmt.Fprintln(w, printable(l))
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:         "+printable(n))
	}
	if len(r.Groups) > 0 {
		fmt.Fprintln(w, "\nLIVE DATA BY RESOURCE AND NAMESPACE")
		if err := textout.NewTable(w, r.Stats.GroupColumns()...).Rows(r.Stats.GroupRows()[:len(r.Groups)]); err != nil {
			return err
		}
	}
	if len(r.Largest) > 0 {
		fmt.Fprintln(w, "\nLARGEST OBJECTS")
		if err := textout.NewTable(w, LargestColumns...).Rows(r.Stats.LargestRows()); err != nil {
			return err
		}
	}
	if r.HotKeys != nil && len(r.HotKeys.Keys) > 0 {
		fmt.Fprintf(w, "\nHOTTEST KEYS\n%s\n", r.HotKeys.Verdict())
		if err := textout.NewTable(w, HotColumns...).Rows(r.HotKeys.Rows()); err != nil {
			return err
		}
	}
	if r.Leases != nil && len(r.Leases.Top) > 0 {
		fmt.Fprintf(w, "\nLEASES\n%s\n", r.Leases.Verdict())
		if err := textout.NewTable(w, LeaseColumns...).Rows(r.Leases.Rows()); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nPLAN\n%s\n", r.PlanVerdict())
	for i, s := range r.Plan {
		fmt.Fprintf(w, "%d. %s\n", i+1, printable(s.Message))
	}
	return nil
}

// printable returns s with every character a terminal could take as a
// control rather than print (strconv.IsPrint refuses it; a newline and a
// tab aside) written as its Go escape: the lines above name keys, which
// hold any bytes.
func printable(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
