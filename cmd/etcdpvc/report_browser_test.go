package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReportBrowser opens the report of the corpus snapshot in a real
// headless Chromium: the page loads with no console message and makes no
// request (a server that is Chromium's proxy too sees none made by it),
// the DOM
// Chromium built has one treemap cell per resource with bytes, and each
// resource's objects are those of `stats -o json`. A screenshot is left
// in $ETCDPVC_ARTIFACTS (else a temporary directory, logged).
//
// It runs only with ETCDPVC_BROWSER_TEST=1 (make test-browser installs
// Chromium with tools/chromium.sh and sets it), and skips, saying so,
// when no Chromium is on PATH.
func TestReportBrowser(t *testing.T) {
	if os.Getenv("ETCDPVC_BROWSER_TEST") != "1" {
		t.Skip("the browser test runs with ETCDPVC_BROWSER_TEST=1 (make test-browser)")
	}
	var chromium string
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		// Asked for (make test-browser installs it first): not found is a
		// failure, not a skip.
		t.Fatal("no chromium on PATH: tools/chromium.sh installs the distribution's package")
	}
	dir := t.TempDir()
	db, _ := filepath.Abs("../../fixtures/corpus/etcd-snapshot.db")
	enc, _ := filepath.Abs("../../fixtures/corpus/encryption/encryption-config.yaml")
	page := filepath.Join(dir, "report.html")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"--db", db, "--encryption-config", enc, "report", "-o", page}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr.String())
	}
	stdout.Reset()
	if code := run(ctx, []string{"--db", db, "--encryption-config", enc, "stats", "-o", "json"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("stats: exit %d: %s", code, stderr.String())
	}
	var stats struct {
		Resources []struct {
			Resource string `json:"resource"`
			Objects  int64  `json:"objects"`
			Bytes    int64  `json:"bytes"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &stats); err != nil {
		t.Fatal(err)
	}

	// The page is served by a server that is also Chromium's proxy: every
	// request Chromium makes reaches it, and those the page makes carry
	// the page as their referrer (Chromium's own, for updates and the
	// like, carry none).
	var mu sync.Mutex
	var fromPage []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/report.html" && (r.URL.Host == "" || strings.HasPrefix(r.Host, "127.0.0.1")) {
			http.ServeFile(w, r, page)
			return
		}
		if ref := r.Header.Get("Referer"); strings.Contains(ref, "127.0.0.1") {
			mu.Lock()
			fromPage = append(fromPage, r.Method+" "+r.URL.String())
			mu.Unlock()
		}
		http.Error(w, "no request leaves the page", http.StatusForbidden)
	}))
	defer srv.Close()
	url := srv.URL + "/report.html"
	shots := os.Getenv("ETCDPVC_ARTIFACTS")
	if shots == "" {
		shots = t.TempDir()
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shots, "report.png")
	common := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + filepath.Join(dir, "profile"),
		"--proxy-server=" + srv.URL, "--proxy-bypass-list=<-loopback>", "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, chromium, append(common, "--dump-dom", url)...)
	var dom, log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &dom, &log
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, log.String())
	}
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Refused to") {
			t.Errorf("the page logged: %s", l)
		}
	}
	mu.Lock()
	for _, r := range fromPage {
		t.Errorf("the page made a request: %s", r)
	}
	mu.Unlock()
	if !strings.Contains(dom.String(), "etcdpvc report") {
		t.Fatalf("chromium did not load the page:\n%s\n%s", dom.String(), log.String())
	}

	// The DOM as Chromium built it.
	var cells []string
	for _, m := range regexp.MustCompile(`<g class="resource" data-resource="([^"]*)"`).FindAllStringSubmatch(dom.String(), -1) {
		cells = append(cells, m[1])
	}
	var want []string
	objects := map[string]int64{}
	for _, r := range stats.Resources {
		if r.Bytes > 0 {
			want = append(want, r.Resource)
		}
		objects[r.Resource] = r.Objects
	}
	sort.Strings(cells)
	sort.Strings(want)
	if diff := cmp.Diff(want, cells); diff != "" {
		t.Errorf("treemap cells, one per resource with bytes (-want +got):\n%s", diff)
	}
	got := map[string]int64{}
	row := regexp.MustCompile(`<tr><td>([^<]+)</td><td class="n">([0-9]+)</td><td class="n">[^<]*</td><td class="n">[0-9]+</td><td class="n">[0-9]+</td>`)
	for _, m := range row.FindAllStringSubmatch(dom.String(), -1) {
		var n int64
		for _, c := range m[2] {
			n = n*10 + int64(c-'0')
		}
		got[m[1]] = n
	}
	if diff := cmp.Diff(objects, got); diff != "" {
		t.Errorf("objects per resource, the page against stats -o json (-want +got):\n%s", diff)
	}

	cmd = exec.CommandContext(ctx, chromium, append(common, "--window-size=1200,1600", "--screenshot="+shot, url)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("screenshot: %s", shot)
}
