package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The text form of a diff (`etcdpvc diff`): one line per record, one per
// resource's totals, and the closing line with the verdict.

// Line is the record's line: change, resource, namespace, name, the mod
// revisions in A and B ("-" for none), and what changed or why it could
// not be read. A unified diff, when there is one, follows it.
func (r DiffRecord) Line() string {
	line := fmt.Sprintf("%-8s %s %s %s %s %s", r.Change, r.Resource, dash(r.Namespace), r.Name, revOrDash(r.RevA), revOrDash(r.RevB))
	switch {
	case r.Summary != "":
		line += "  " + r.Summary
	case r.Unreadable != "":
		line += "  cannot read: " + r.Unreadable
	}
	return line
}

func revOrDash(r int64) string {
	if r == 0 {
		return "-"
	}
	return strconv.FormatInt(r, 10)
}

// Line is a resource's totals: added, deleted, modified, and of those the
// metadata-only and re-encrypted ones, those left out, those unread.
func (t *DiffTotals) Line() string {
	line := fmt.Sprintf("total %s: %d added, %d deleted, %d modified", t.Resource, t.Added, t.Deleted, t.Modified)
	var extra []string
	if t.MetadataOnly > 0 {
		extra = append(extra, fmt.Sprintf("%d metadata only", t.MetadataOnly))
	}
	if t.ReEncrypted > 0 {
		extra = append(extra, fmt.Sprintf("%d re-encrypted, content unchanged", t.ReEncrypted))
	}
	if len(extra) > 0 {
		line += " (" + strings.Join(extra, ", ") + ")"
	}
	if t.Hidden > 0 {
		line += fmt.Sprintf(", %d metadata only not shown", t.Hidden)
	}
	if t.Unreadable > 0 {
		line += fmt.Sprintf(", %d could not be read", t.Unreadable)
	}
	return line
}

// Line is the closing line of a diff of a with b: how many keys were
// compared (of which namespace, when one), at which revisions, and the
// verdict (nothing compared while other namespaces hold keys, incomplete,
// differ, the same apart from hidden metadata-only changes, the same).
func (s *DiffSummary) Line(a, b DiffSource) string {
	verdict := "the states are the same"
	scope := ""
	if s.Namespace != "" {
		scope = " in namespace " + s.Namespace
		if s.Resource != "" {
			scope = " of " + s.Resource + scope
		}
		verdict += " in namespace " + s.Namespace + " (-A compares every namespace)"
	}
	switch {
	case s.NothingCompared:
		verdict = fmt.Sprintf("nothing to compare in namespace %s, while other namespaces hold %d in A and %d in B: no verdict (-A compares every namespace, -n NS one of them)",
			s.Namespace, s.OtherNamespacesA, s.OtherNamespacesB)
	case s.Unreadable > 0:
		verdict = "incomplete: " + Count(s.Unreadable, "object", "objects") + " could not be compared"
	case s.Differ > 0:
		verdict = Count(s.Differ, "object differs", "objects differ")
	case s.Hidden > 0:
		verdict = "the same apart from " + Count(s.Hidden, "metadata-only change", "metadata-only changes") + " (not shown: --ignore-metadata-only)"
	}
	return fmt.Sprintf("compared %s%s: A %s, B %s: %s", Count(s.Compared, "key", "keys"), scope, atSpan(a, s.RevA, s.ReadToA), atSpan(b, s.RevB, s.ReadToB), verdict)
}

// atSpan is s.At(rev), or, for a read that etcd's compaction made
// continue up to revision to, the revisions it spans.
func atSpan(s DiffSource, rev, to int64) string {
	if to == 0 {
		return s.At(rev)
	}
	s.Rev = 0
	return fmt.Sprintf("%s at revisions %d–%d (etcd was compacted during the read)", s, rev, to)
}

// DiffWriter writes a diff as it comes: as text, one line per record (its
// unified diff after it, when there is one), then the totals and the
// closing line; or as JSON, one object a line ("type": "object" per
// record, "total" per resource, then one "summary").
type DiffWriter struct {
	W    io.Writer
	JSON bool
}

// Record writes one record.
func (d DiffWriter) Record(r DiffRecord) error {
	if d.JSON {
		return d.json(struct {
			Type string `json:"type"`
			DiffRecord
		}{"object", r})
	}
	if _, err := fmt.Fprintln(d.W, r.Line()); err != nil {
		return err
	}
	if r.Diff != "" {
		_, err := io.WriteString(d.W, r.Diff)
		return err
	}
	return nil
}

// Summary writes the totals per resource and the closing summary of a
// diff of a with b.
func (d DiffWriter) Summary(a, b DiffSource, sum *DiffSummary) error {
	if d.JSON {
		for _, t := range sum.Totals {
			if err := d.json(struct {
				Type string `json:"type"`
				*DiffTotals
			}{"total", t}); err != nil {
				return err
			}
		}
		return d.json(struct {
			Type string `json:"type"`
			A    string `json:"a"`
			B    string `json:"b"`
			*DiffSummary
		}{"summary", a.At(sum.RevA), b.At(sum.RevB), sum})
	}
	if sum.Differ > 0 || sum.Unreadable > 0 || len(sum.Totals) > 0 {
		fmt.Fprintln(d.W)
	}
	for _, t := range sum.Totals {
		if _, err := fmt.Fprintln(d.W, t.Line()); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(d.W, sum.Line(a, b))
	return err
}

func (d DiffWriter) json(v any) error { return json.NewEncoder(d.W).Encode(v) }
