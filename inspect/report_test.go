package inspect

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSquarify(t *testing.T) {
	values := []int64{6, 6, 4, 3, 2, 2, 1, 0}
	r := Rect{10, 20, 600, 400}
	rects := Squarify(values, r)
	var total int64
	for _, v := range values {
		total += v
	}
	var area float64
	for i, rc := range rects {
		want := float64(values[i]) / float64(total) * r.W * r.H
		if got := rc.W * rc.H; math.Abs(got-want) > 1e-6*r.W*r.H {
			t.Errorf("value %d: area %.2f, want %.2f", values[i], got, want)
		}
		if values[i] > 0 && (rc.X < r.X-1e-9 || rc.Y < r.Y-1e-9 || rc.X+rc.W > r.X+r.W+1e-6 || rc.Y+rc.H > r.Y+r.H+1e-6) {
			t.Errorf("value %d: %+v outside %+v", values[i], rc, r)
		}
		area += rc.W * rc.H
		for j := range i {
			a, b := rc, rects[j]
			if ox, oy := math.Min(a.X+a.W, b.X+b.W)-math.Max(a.X, b.X), math.Min(a.Y+a.H, b.Y+b.H)-math.Max(a.Y, b.Y); ox > 1e-6 && oy > 1e-6 {
				t.Errorf("cells %d and %d overlap: %+v %+v", i, j, a, b)
			}
		}
	}
	if math.Abs(area-r.W*r.H) > 1e-6 {
		t.Errorf("cells cover %.2f of %.2f", area, r.W*r.H)
	}
	// Squarified: the first cells are near squares.
	if a := rects[0].W / rects[0].H; a < 0.5 || a > 2 {
		t.Errorf("first cell aspect %.2f", a)
	}
}

// TestWriteReport writes the report of the corpus snapshot (made by a
// real etcd) and reads the page back as a browser parses it: no script,
// nothing loaded from anywhere, one treemap cell per resource with bytes
// and one per namespace in it, the counts of stats, the PVC stuck
// Terminating with its finalizer, and no byte of the Secret's value.
func TestWriteReport(t *testing.T) {
	ctx := context.Background()
	b := openCorpusSnapshot(t, filepath.Join(corpusDir, "etcd-snapshot.db"))
	enc := loadEncryption(t, filepath.Join(corpusDir, "encryption", "encryption-config.yaml"))
	rep, err := BoltStats(ctx, b, StatsOptions{Prefix: "/registry/", Top: 5, Dec: enc, Details: 50, Write: func(gr schema.GroupResource) string { return enc.Providers(gr)[0] }, By: GroupBy{Resource: true, Namespace: true}})
	if err != nil {
		t.Fatal(err)
	}
	rep.Source = "etcd-snapshot.db"
	var buf bytes.Buffer
	if err := WriteReport(&buf, rep, ReportOptions{DB: "etcd-snapshot.db", Generated: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var cells, nsCells []string
	nsOf := map[string]int{}
	var walk func(n *html.Node, resource string)
	walk = func(n *html.Node, resource string) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "link", "img", "iframe", "object", "embed":
				t.Errorf("the page has a <%s>", n.Data)
			}
			for _, a := range n.Attr {
				if (a.Key == "src" || a.Key == "href") || (strings.HasPrefix(a.Key, "on")) {
					t.Errorf("<%s %s=%q>: the page may load or run something", n.Data, a.Key, a.Val)
				}
				if a.Key == "class" && a.Val == "resource" {
					resource = attr(n, "data-resource")
					cells = append(cells, resource)
				}
				if a.Key == "class" && a.Val == "namespace" {
					nsCells = append(nsCells, resource+"/"+attr(n, "data-namespace"))
					nsOf[resource]++
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, resource)
		}
	}
	walk(doc, "")

	var want []string
	for _, r := range rep.Resources {
		if r.Bytes > 0 {
			want = append(want, r.Resource)
		}
	}
	sort.Strings(want)
	sort.Strings(cells)
	if diff := cmp.Diff(want, cells); diff != "" {
		t.Errorf("treemap cells, one per resource with bytes (-want +got):\n%s", diff)
	}
	var groups int
	for _, g := range rep.Groups {
		if g.Bytes > 0 {
			groups++
		}
	}
	if len(nsCells) != groups || nsOf["configmaps"] != 2 {
		t.Errorf("%d namespace cells (configmaps %d), want one per group with bytes: %d", len(nsCells), nsOf["configmaps"], groups)
	}
	for _, s := range []string{
		"<td>persistentvolumeclaims</td><td>demo</td><td>www-web-0</td><td>2026-11-30T00:35:10Z</td><td class=\"k\">kubernetes.io/pvc-protection</td>",
		"Stuck Terminating (1)", "Values that cannot be read (0)",
		"<td>configmaps</td><td>identity</td><td class=\"n\">2</td><td>STALE: writes use aesgcm/key1</td>",
		"<th>sha256 trailer</th><td>" + rep.DB.TrailerSHA256 + "</td>", "revisions</th><td>2 to 255 (254 held)",
		"<td>persistentvolumeclaims</td><td class=\"n\">3</td><td class=\"n\">2090</td>",
	} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	// The Secret is named; its value (decrypted with the config) is not there.
	if !strings.Contains(page, "secrets") {
		t.Errorf("no secrets in the page")
	}
	for _, v := range []string{"czNjcjN0LXBsYWlu", "s3cr3t-plain", "YWRtaW4="} {
		if strings.Contains(page, v) {
			t.Errorf("the page holds the Secret's value %q", v)
		}
	}
}

// attr is n's attribute key ("" when it has none).
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// TestTreemapFoldsSmallNamespaces: of a resource's many namespaces, the
// largest foldKeep are drawn, and the rest, each too small to see, become
// one cell whose bytes are theirs; a resource with few namespaces keeps
// them all.
func TestTreemapFoldsSmallNamespaces(t *testing.T) {
	str := func(s string) *string { return &s }
	var groups []*GroupStats
	var total int64
	for i := range 1000 {
		g := &GroupStats{Resource: str("events"), Namespace: str(fmt.Sprintf("ns-%04d", i))}
		g.Bytes = 10
		if i < 5 {
			g.Bytes = 100000
		}
		total += g.Bytes
		groups = append(groups, g)
	}
	groups = append(groups, &GroupStats{Resource: str("pods"), Namespace: str("a")}, &GroupStats{Resource: str("pods"), Namespace: str("b")})
	groups[len(groups)-2].Bytes, groups[len(groups)-1].Bytes = 7, 5
	cells := BytesTreemap(groups, Rect{0, 0, 800, 600}, 2)
	if len(cells) != 2 || cells[0].Name != "events" || cells[1].Name != "pods" {
		t.Fatalf("resource cells %+v", cells)
	}
	ev := cells[0].Children
	if len(ev) != foldKeep+1 || ev[len(ev)-1].Name != fmt.Sprintf("%d more namespaces", 1000-foldKeep) {
		t.Fatalf("%d namespace cells, the last %q", len(ev), ev[len(ev)-1].Name)
	}
	var sum int64
	for _, c := range ev {
		sum += c.Value
	}
	if sum != total || cells[0].Value != total {
		t.Errorf("the cells hold %d bytes, the resource %d, want %d", sum, cells[0].Value, total)
	}
	if len(cells[1].Children) != 2 {
		t.Errorf("pods: %d namespace cells, want 2", len(cells[1].Children))
	}
}
