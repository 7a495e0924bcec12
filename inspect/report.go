package inspect

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/internal/textout"
)

// ReportOptions say how WriteReport writes the HTML report.
type ReportOptions struct {
	// DB is the db file read, for the recover commands ("" live: none);
	// Flags are the global flags they need beside --db (--salvage,
	// --prefix, --encryption-config).
	DB    string
	Flags []string
	// NoDeleted says why the deleted keys are not listed when the report
	// has none counted ("": live etcd, which keeps no index of them).
	NoDeleted string
	// Generated is the time the report was made.
	Generated time.Time
	// Width and Height are the treemap's size, in pixels (0: 1100×520).
	Width, Height float64
}

// reportPage is what the report template shows.
type reportPage struct {
	R                 *StatsReport
	Generated         string
	Source            [][2]string
	Cells             []reportCell
	Width, Height     float64
	Resources         [][]string
	Largest, Hot      [][]string
	HotVerdict        string
	Leases            [][]string
	LeaseVerdict      string
	Terminating       [][]string
	TerminatingTotal  int64
	Unreadable        [][]string
	UnreadableTotal   int64
	Stale             [][]string
	EncryptionVerdict string
	Deleted           [][]string
	DeletedTotal      int64
	RecoverableTotal  int64
	DeletedNote       string
	Notes             []string
	// Shown says, of each bounded list, how many of how many it shows.
	Shown map[string]string
}

// reportCell is a treemap cell as the SVG draws it.
type reportCell struct {
	Name, Label, Title string
	X, Y, W, H         float64
	Fill               string
	Children           []reportCell
}

// WriteReport writes rep (counted by resource and namespace, with
// Details) as one self-contained HTML page: inline CSS and SVG, no script
// and no request to anything: a treemap of the bytes by resource then
// namespace, the hottest keys and largest objects, the leases, the objects
// stuck Terminating with their finalizers, the values that cannot be read
// and why, the objects not under their resource's write provider, the
// deleted keys with the command that recovers each, and the source. Keys
// and names only: no value is shown.
func WriteReport(w io.Writer, rep *StatsReport, o ReportOptions) error {
	if o.Width == 0 {
		o.Width, o.Height = 1100, 520
	}
	p := &reportPage{R: rep, Generated: o.Generated.UTC().Format(time.RFC3339), Width: o.Width, Height: o.Height,
		Largest: rep.LargestRows(), Notes: rep.Notes, EncryptionVerdict: rep.EncryptionVerdict()}
	p.Source = reportSource(rep)
	for i, c := range BytesTreemap(rep.Groups, Rect{0, 0, o.Width, o.Height}, 3) {
		p.Cells = append(p.Cells, svgCell(c, i, rep.Bytes))
	}
	for _, s := range rep.Resources {
		p.Resources = append(p.Resources, append([]string{s.Resource}, s.Counts.cells()...))
	}
	if rep.HotKeys != nil {
		p.HotVerdict, p.Hot = rep.HotKeys.Verdict(), rep.HotKeys.Rows()
	}
	if rep.Leases != nil {
		p.LeaseVerdict, p.Leases = rep.Leases.Verdict(), rep.Leases.Rows()
	}
	for _, row := range rep.StorageRows() {
		if strings.HasPrefix(row[3], "STALE") {
			p.Stale = append(p.Stale, row)
		}
	}
	if d := rep.Details; d != nil {
		p.TerminatingTotal, p.UnreadableTotal, p.DeletedTotal, p.RecoverableTotal = d.TerminatingTotal, d.UnreadableTotal, d.DeletedTotal, d.RecoverableTotal
		for _, t := range d.Terminating {
			p.Terminating = append(p.Terminating, []string{t.Resource, t.Namespace, t.Name, t.DeletionTimestamp.Format(time.RFC3339), strings.Join(t.Finalizers, ", ")})
		}
		for _, u := range d.Unreadable {
			p.Unreadable = append(p.Unreadable, []string{u.Resource, u.Key, u.Why})
		}
		for _, k := range d.Deleted {
			cmd := "not recoverable from this source: no revision before the deletion is held"
			if k.Recoverable {
				cmd = recoverCommand(o.DB, o.Flags, k.Key)
			}
			p.Deleted = append(p.Deleted, []string{k.Resource, k.Key, strconv.FormatInt(k.DeleteRevision, 10), cmd})
		}
	}
	p.Shown = map[string]string{}
	for name, n := range map[string][2]int64{"terminating": {int64(len(p.Terminating)), p.TerminatingTotal},
		"unreadable": {int64(len(p.Unreadable)), p.UnreadableTotal}, "deleted": {int64(len(p.Deleted)), p.DeletedTotal}} {
		if n[0] < n[1] {
			p.Shown[name] = fmt.Sprintf("the first %d of %d, in key order (report --details N lists more)", n[0], n[1])
		}
	}
	if rep.Deleted == nil {
		p.DeletedNote = o.NoDeleted
		if p.DeletedNote == "" {
			p.DeletedNote = "live etcd keeps no index of deleted keys: read a snapshot or member db with --db for them (or `etcdpvc history` one key)"
		}
	}
	return reportTemplate.Execute(w, p)
}

// recoverCommand is the command that recreates a deleted key from db
// into the live cluster, as a dry run first.
func recoverCommand(db string, flags []string, key string) string {
	words := []string{"etcdpvc", "--db", textout.ShellQuote(db)}
	for _, f := range flags {
		words = append(words, textout.ShellQuote(f))
	}
	return strings.Join(append(words, "recover", "--etcd-key", textout.ShellQuote(key), "--dry-run"), " ")
}

// reportSource is the source's lines: what was read, its sha256, the
// revisions, the compaction, the time span of the objects' creation.
func reportSource(r *StatsReport) [][2]string {
	out := [][2]string{{"source", r.Source}, {"snapshot", r.Snapshot}}
	if r.DB != nil {
		if r.DB.FileSHA256 != "" {
			out = append(out, [2]string{"file sha256", r.DB.FileSHA256})
		}
		if r.DB.TrailerSHA256 != "" {
			out = append(out, [2]string{"sha256 trailer", r.DB.TrailerSHA256})
		}
	}
	if r.OldestRevision != 0 {
		out = append(out, [2]string{"revisions", fmt.Sprintf("%d to %d (%s held)", r.OldestRevision, r.Revision, orUnknown(r.Revisions))})
	} else {
		out = append(out, [2]string{"revision", strconv.FormatInt(r.Revision, 10)})
	}
	comp := strconv.FormatInt(r.CompactRevision, 10)
	if r.ScheduledCompactRevision != nil {
		comp = fmt.Sprintf("finished %d, scheduled %d", r.CompactRevision, *r.ScheduledCompactRevision)
	}
	out = append(out, [2]string{"compaction", comp},
		[2]string{"objects", fmt.Sprintf("%d (%s bytes), %d with a lease", r.Objects, HumanBytes(r.Bytes), r.Leased)})
	if r.DB != nil {
		out = append(out, [2]string{"db file", fmt.Sprintf("%s bytes, %s in use", HumanBytes(r.DB.FileSize), HumanBytes(r.DB.DataSize))})
	}
	if d := r.Details; d != nil && d.OldestCreated != nil {
		out = append(out, [2]string{"time span", fmt.Sprintf("objects created from %s to %s (etcd records no time per revision)",
			d.OldestCreated.Format(time.RFC3339), d.NewestCreated.Format(time.RFC3339))})
	}
	if r.Incomplete != "" {
		out = append(out, [2]string{"INCOMPLETE", r.Incomplete})
	}
	return out
}

// svgCell is c drawn: its label where it fits, its title the name and
// bytes.
func svgCell(c TreemapCell, i int, total int64) reportCell {
	share := 0.0
	if total > 0 {
		share = 100 * float64(c.Value) / float64(total)
	}
	rc := reportCell{Name: c.Name, Title: fmt.Sprintf("%s: %s bytes (%.1f%%)", c.Name, HumanBytes(c.Value), share),
		X: c.Rect.X, Y: c.Rect.Y, W: c.Rect.W, H: c.Rect.H, Fill: palette[i%len(palette)]}
	if c.Rect.W > 60 && c.Rect.H > 14 {
		rc.Label = fitLabel(c.Name+" "+HumanBytes(c.Value), c.Rect.W)
	}
	for _, n := range c.Children {
		child := reportCell{Name: n.Name, Title: fmt.Sprintf("%s in %s: %s bytes", c.Name, n.Name, HumanBytes(n.Value)),
			X: n.Rect.X, Y: n.Rect.Y, W: n.Rect.W, H: n.Rect.H}
		if n.Rect.W > 50 && n.Rect.H > 14 {
			child.Label = fitLabel(n.Name, n.Rect.W)
		}
		rc.Children = append(rc.Children, child)
	}
	return rc
}

// fitLabel cuts s to what fits in width pixels (about 6.5 a character).
func fitLabel(s string, width float64) string {
	n := int(width/6.5) - 1
	if len(s) <= n || n < 1 {
		return s
	}
	return s[:max(0, n-1)] + "…"
}

// palette colours the resources' cells.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"f": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>etcdpvc report: {{.R.Source}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.4em 0}td,th{padding:2px 8px;text-align:left;border-bottom:1px solid #eee;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right}code,.k{font-family:ui-monospace,monospace;font-size:12px}
.treemap text{font:11px sans-serif;fill:#fff;pointer-events:none}.treemap .ns{fill:#fff;fill-opacity:.18;stroke:#fff;stroke-opacity:.6}
.warn{color:#a00;font-weight:bold}.muted{color:#666}
</style>
</head>
<body>
<h1>etcdpvc report</h1>
<p class="muted">generated {{.Generated}}; keys and names only, no value is shown</p>
<h2 id="source">Source</h2>
<table>{{range .Source}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
{{range .Notes}}<p class="muted">note: {{.}}</p>{{end}}
<h2 id="treemap">Bytes by resource, then namespace</h2>
<svg class="treemap" xmlns="http://www.w3.org/2000/svg" width="{{f .Width}}" height="{{f .Height}}" viewBox="0 0 {{f .Width}} {{f .Height}}" role="img" aria-label="treemap of the current bytes by resource and namespace">
{{range .Cells}}<g class="resource" data-resource="{{.Name}}"><title>{{.Title}}</title><rect x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}" fill="{{.Fill}}" stroke="#fff"/>{{if .Label}}<text x="{{f .X}}" y="{{f .Y}}" dx="4" dy="12">{{.Label}}</text>{{end}}
{{range .Children}}<g class="namespace" data-namespace="{{.Name}}"><title>{{.Title}}</title><rect class="ns" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"/>{{if .Label}}<text x="{{f .X}}" y="{{f .Y}}" dx="3" dy="24">{{.Label}}</text>{{end}}</g>
{{end}}</g>
{{end}}</svg>
<h2 id="resources">Per resource</h2>
<table><tr><th>resource</th><th>objects</th><th>bytes</th><th>leased</th><th>revisions</th><th>tombstones</th><th>deleted</th><th>history bytes</th></tr>
{{range .Resources}}<tr>{{range $i, $c := .}}{{if $i}}<td class="n">{{$c}}</td>{{else}}<td>{{$c}}</td>{{end}}{{end}}</tr>
{{end}}</table>
<h2 id="hot">Hottest keys</h2>
{{if .HotVerdict}}<p>{{.HotVerdict}}</p>
<table><tr><th>revisions</th><th>last</th><th>last write by</th><th>key</th></tr>
{{range .Hot}}<tr><td class="n">{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td><td class="k">{{index . 3}}</td></tr>
{{end}}</table>{{else}}<p class="muted">not counted: live etcd counts the hottest keys over a window (etcdpvc stats --since REV)</p>{{end}}
<h2 id="largest">Largest objects</h2>
<table><tr><th>bytes</th><th>revision</th><th>key</th></tr>
{{range .Largest}}<tr><td class="n">{{index . 0}}</td><td class="n">{{index . 1}}</td><td class="k">{{index . 2}}</td></tr>
{{end}}</table>
<h2 id="leases">Leases</h2>
<p>{{.LeaseVerdict}}</p>
<table><tr><th>lease</th><th>keys</th><th>bytes</th><th>TTL</th><th>remaining</th><th>resources</th></tr>
{{range .Leases}}<tr><td class="k">{{index . 0}}</td><td class="n">{{index . 1}}</td><td class="n">{{index . 2}}</td><td>{{index . 3}}</td><td>{{index . 4}}</td><td>{{index . 5}}</td></tr>
{{end}}</table>
<h2 id="terminating">Stuck Terminating ({{.TerminatingTotal}})</h2>
{{with index .Shown "terminating"}}<p class="muted">{{.}}</p>{{end}}{{if .Terminating}}<table><tr><th>resource</th><th>namespace</th><th>name</th><th>deletionTimestamp</th><th>finalizers</th></tr>
{{range .Terminating}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td><td>{{index . 3}}</td><td class="k">{{index . 4}}</td></tr>
{{end}}</table>{{else}}<p>no object carries a deletionTimestamp</p>{{end}}
<h2 id="unreadable">Values that cannot be read ({{.UnreadableTotal}})</h2>
{{with index .Shown "unreadable"}}<p class="muted">{{.}}</p>{{end}}{{if .Unreadable}}<p class="warn">every LIST of their resource may fail: docs/runbooks/unreadable-objects.md</p>
<table><tr><th>resource</th><th>key</th><th>why</th></tr>
{{range .Unreadable}}<tr><td>{{index . 0}}</td><td class="k">{{index . 1}}</td><td>{{index . 2}}</td></tr>
{{end}}</table>{{else}}<p>every value was read</p>{{end}}
<h2 id="encryption">Not under the write provider</h2>
<p>{{.EncryptionVerdict}}</p>
{{if .Stale}}<table><tr><th>resource</th><th>stored under</th><th>objects</th><th>status</th></tr>
{{range .Stale}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td class="n">{{index . 2}}</td><td>{{index . 3}}</td></tr>
{{end}}</table>{{end}}
<h2 id="deleted">Deleted keys{{if not .DeletedNote}} ({{.DeletedTotal}}, {{.RecoverableTotal}} recoverable){{end}}</h2>
{{with index .Shown "deleted"}}<p class="muted">{{.}}</p>{{end}}{{if .DeletedNote}}<p class="muted">{{.DeletedNote}}</p>{{else if .Deleted}}<table><tr><th>resource</th><th>key</th><th>deleted at</th><th>recover (a dry run; then with --endpoints and without --dry-run)</th></tr>
{{range .Deleted}}<tr><td>{{index . 0}}</td><td class="k">{{index . 1}}</td><td class="n">{{index . 2}}</td><td><code>{{index . 3}}</code></td></tr>
{{end}}</table>{{else}}<p>no key's newest revision is a deletion</p>{{end}}
</body>
</html>
`))
