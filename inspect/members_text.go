package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// MembersVerdict says sum's outcome in words: what was compared, what
// agrees, and which member diverged or why that is not established.
func MembersVerdict(sum *MembersSummary) string {
	n := len(sum.Members)
	var unread []string
	for _, r := range sum.Members {
		if !r.read {
			unread = append(unread, r.Member+" ("+r.Error+")")
		}
	}
	keys := Count(sum.Keys, "key", "keys")
	differ := Count(sum.Differ, "key", "keys")
	_, _, hashMajor := hashVerdict(sum)
	switch sum.Reason {
	case ReasonUnread:
		return fmt.Sprintf("nothing compared: %s could not be read: %s: no verdict", Count(len(unread), "member", "members"), strings.Join(unread, "; "))
	case ReasonReadPartly:
		found := "no key differs among the members read"
		if sum.Differ > 0 {
			found = Count(sum.Differ, "key differs", "keys differ") + " (listed)"
		}
		return fmt.Sprintf("incomplete: %s could not be read to the end: %s; %s: no verdict on the cluster",
			Count(len(unread), "member", "members"), strings.Join(unread, "; "), found)
	case ReasonEmptyScope:
		h := ""
		if sum.HashesEqual {
			h = " (etcd's hashkv, which covers every key, is equal on all)"
		}
		return "nothing compared: no key of the scope on any member: no verdict" + h
	case ReasonHashEqual:
		return fmt.Sprintf("no divergence: the %d members agree on every one of the %s compared, and etcd's hashkv is equal on all (%08x)", n, keys, sum.Members[0].HashKV.Hash)
	case ReasonHashDiffers:
		return fmt.Sprintf("the %d members agree on every one of the %s compared, but etcd's hashkv differs (%s): they differ in keys outside the scope compared or in the history they keep (the per-resource hashes say where)", n, keys, oddHashes(sum, hashMajor))
	case ReasonHashNotCompared:
		if sum.Differ == 0 {
			return fmt.Sprintf("the %d members agree on every one of the %s compared; etcd's hashkv not compared: %s", n, keys, hashWhy(sum))
		}
		return notEstablished(sum, "etcd's hashkv does not confirm it: "+hashWhy(sum))
	case ReasonTwoMembers:
		return fmt.Sprintf("the two members differ on %s of %s: with two members no majority can say which one diverged (compare a third member)", differ, keys)
	case ReasonNoMajority:
		return notEstablished(sum, fmt.Sprintf("no strict majority agrees on %s", Count(sum.NoMajority, "key", "keys")))
	case ReasonNoHashMajority:
		return notEstablished(sum, "no strict majority of the members has the same hashkv")
	case ReasonHashDisagrees:
		return notEstablished(sum, fmt.Sprintf("etcd's hashkv does not single out the same members (%s)", oddHashes(sum, hashMajor)))
	case ReasonMajority:
		var others []string
		for _, r := range sum.Members {
			if r.Minority == 0 {
				others = append(others, r.Member)
			}
		}
		verb := "differs"
		if len(sum.Diverged) > 1 {
			verb = "differ"
		}
		return fmt.Sprintf("diverged: %s %s from the majority on %s; %s (%d of %d) agree with each other on every one of the %s and on etcd's hashkv (%08x)",
			strings.Join(sum.Diverged, ", "), verb, differ, strings.Join(others, ", "), len(others), n, keys, sum.Members[firstOf(hashMajor, n)].HashKV.Hash)
	}
	return sum.Outcome
}

// notEstablished says that the members differ and why which one diverged
// is not established.
func notEstablished(sum *MembersSummary, why string) string {
	var names []string
	for _, r := range sum.Members {
		if r.Minority > 0 {
			names = append(names, fmt.Sprintf("%s (%s)", r.Member, Count(r.Minority, "key", "keys")))
		}
	}
	in := ""
	if len(names) > 0 {
		in = "; in the minority: " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("the members differ on %s of %s%s; which member diverged is not established: %s",
		Count(sum.Differ, "key", "keys"), Count(sum.Keys, "key", "keys"), in, why)
}

// hashWhy says what kept the members' hashkvs from being compared.
func hashWhy(sum *MembersSummary) string {
	ms := sum.Members
	for _, r := range ms {
		if r.HashKV == nil {
			why := r.HashError
			if why == "" {
				why = "unknown why"
			}
			return fmt.Sprintf("no hashkv of %s (%s)", r.Member, why)
		}
		if !r.HashKV.Comparable(*ms[0].HashKV) {
			return fmt.Sprintf("the hashkv of %s (compaction %d, revision %d) and of %s (compaction %d, revision %d) hash different compactions and cannot be compared",
				ms[0].Member, ms[0].HashKV.CompactRevision, ms[0].HashKV.Revision, r.Member, r.HashKV.CompactRevision, r.HashKV.Revision)
		}
	}
	return ""
}

// firstOf is the first member index in set.
func firstOf(set map[int]bool, n int) int {
	for i := range n {
		if set[i] {
			return i
		}
	}
	return 0
}

// oddHashes lists each member's hash, marking those outside the majority.
func oddHashes(sum *MembersSummary, major map[int]bool) string {
	var parts []string
	for i, r := range sum.Members {
		p := fmt.Sprintf("%s %08x", r.Member, r.HashKV.Hash)
		if major != nil && !major[i] {
			p += " (not the majority's)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// Kinds of a member record's text line.
const (
	lineMissing = "MISSING"
	lineExtra   = "EXTRA"
	lineChanged = "CHANGED"
	lineSplit   = "SPLIT"
	lineDiffers = "DIFFERS"
)

// Lines are the record's text lines: with a majority, one per member
// that differs from it (MISSING, EXTRA, CHANGED, the member, the object,
// how); without one, a single line with every member's state (SPLIT, or
// DIFFERS with two members, where no majority can be).
func (r MemberRecord) Lines() []string {
	obj := fmt.Sprintf("%s %s %s", r.Resource, dash(r.Namespace), r.Name)
	if r.Majority > 0 {
		var out []string
		for _, d := range r.Diverged {
			kind := map[string]string{MemberMissing: lineMissing, MemberExtra: lineExtra, MemberChanged: lineChanged}[d.How]
			out = append(out, fmt.Sprintf("%-8s %s  %s  %s", kind, d.Member, obj, r.divergenceWords(d)))
		}
		return out
	}
	kind := lineSplit
	if r.Members == 2 {
		kind = lineDiffers
	}
	var st []string
	for _, s := range r.States {
		switch s.State {
		case KeyPresent:
			st = append(st, fmt.Sprintf("%s: mod revision %d, %s (sha256 %s)", s.Member, s.ModRevision, Count(s.ValueBytes, "byte", "bytes"), s.ValueSHA256))
		default:
			st = append(st, s.Member+": "+s.State)
		}
	}
	return []string{fmt.Sprintf("%-8s -  %s  %s", kind, obj, strings.Join(st, "; "))}
}

// divergenceWords says how member d's state of r's key differs from the
// majority's: absent, held alone, or which fields differ.
func (r MemberRecord) divergenceWords(d MemberDivergence) string {
	var s, m MemberKeyState
	for _, st := range r.States {
		diverged := st.State == KeyUnknown
		for _, o := range r.Diverged {
			diverged = diverged || o.Member == st.Member
		}
		if st.Member == d.Member {
			s = st
		} else if !diverged {
			m = st
		}
	}
	k, n := r.Majority, r.Members
	switch d.How {
	case MemberMissing:
		return fmt.Sprintf("absent; %d of %d hold it at mod revision %d", k, n, m.ModRevision)
	case MemberExtra:
		return fmt.Sprintf("held at mod revision %d; absent on %d of %d", s.ModRevision, k, n)
	}
	var what []string
	for _, f := range d.Differs {
		switch f {
		case FieldValue:
			what = append(what, fmt.Sprintf("value %s, majority %s", valueWords(s), valueWords(m)))
		case FieldModRevision:
			what = append(what, fmt.Sprintf("mod revision %d, majority %d", s.ModRevision, m.ModRevision))
		case FieldCreateRevision:
			what = append(what, fmt.Sprintf("create revision %d, majority %d", s.CreateRevision, m.CreateRevision))
		case FieldVersion:
			what = append(what, fmt.Sprintf("version %d, majority %d", s.Version, m.Version))
		case FieldLease:
			what = append(what, fmt.Sprintf("lease %x, majority %x", s.Lease, m.Lease))
		}
	}
	return strings.Join(what, "; ") + fmt.Sprintf(" (%d of %d agree)", k, n)
}

// valueWords names a member's value by its size and the start of its
// sha256.
func valueWords(s MemberKeyState) string {
	return fmt.Sprintf("%s (sha256 %s)", Count(s.ValueBytes, "byte", "bytes"), s.ValueSHA256)
}

// MembersWriter writes a member comparison as it comes: as text, the
// records' lines, then a table of the members, the resources that differ
// and the verdict; or as JSON, one object a line ("type": "key" per
// record, "member" per member, "total" per resource, then one "summary"
// with the outcome and its reason as enums and the verdict's words in
// "message").
type MembersWriter struct {
	W    io.Writer
	JSON bool
}

// Record writes one record.
func (w MembersWriter) Record(r MemberRecord) error {
	if w.JSON {
		return w.json(struct {
			Type string `json:"type"`
			MemberRecord
		}{"key", r})
	}
	for _, l := range r.Lines() {
		if _, err := fmt.Fprintln(w.W, l); err != nil {
			return err
		}
	}
	return nil
}

// Summary writes the members, the totals per resource and the verdict.
func (w MembersWriter) Summary(sum *MembersSummary) error {
	if w.JSON {
		for _, m := range sum.Members {
			if err := w.json(struct {
				Type string `json:"type"`
				*MemberResult
			}{"member", m}); err != nil {
				return err
			}
		}
		for _, t := range sum.Totals {
			if err := w.json(struct {
				Type string `json:"type"`
				*MemberResourceTotal
			}{"total", t}); err != nil {
				return err
			}
		}
		return w.json(struct {
			Type string `json:"type"`
			*MembersSummary
			Message string `json:"message"`
		}{"summary", sum, MembersVerdict(sum)})
	}
	if sum.Differ > 0 {
		fmt.Fprintln(w.W)
	}
	tw := tabwriter.NewWriter(w.W, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tKEYS\tMINORITY\tHASHKV\tCOMPACT REV\tHASH REV\tREAD")
	for _, m := range sum.Members {
		h, c, r := "-", "-", "-"
		if m.HashKV != nil {
			h, c, r = fmt.Sprintf("%08x", m.HashKV.Hash), fmt.Sprint(m.HashKV.CompactRevision), fmt.Sprint(m.HashKV.Revision)
		}
		read := "ok"
		if m.Error != "" {
			read = "failed: " + m.Error
		}
		if m.HashError != "" {
			read += "; hashkv failed: " + m.HashError
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", m.Member, m.Keys, m.Minority, h, c, r, read)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range sum.Totals {
		line := fmt.Sprintf("total %s: %s", t.Resource, Count(t.Differ, "key differs", "keys differ"))
		if t.HashesDiffer {
			line += fmt.Sprintf("; per-resource hashes: %s", resourceHashes(sum, t.Resource))
		}
		if _, err := fmt.Fprintln(w.W, line); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w.W, "compared %s of %d members at revision %d: %s\n", Count(sum.Keys, "key", "keys"), len(sum.Members), sum.Revision, MembersVerdict(sum))
	return err
}

// resourceHashes lists each member's hash of resource res.
func resourceHashes(sum *MembersSummary, res string) string {
	var parts []string
	for _, m := range sum.Members {
		if h, ok := m.ResourceHashes[res]; ok {
			parts = append(parts, fmt.Sprintf("%s %08x", m.Member, h))
		} else {
			parts = append(parts, m.Member+" none")
		}
	}
	return strings.Join(parts, ", ")
}

func (w MembersWriter) json(v any) error { return json.NewEncoder(w.W).Encode(v) }
