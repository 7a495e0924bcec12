package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/cmd/etcdpvc/internal/demo"
	"github.com/etcdpvc/etcdpvc/fixtures"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
)

// TestRunbooks runs the runbooks in docs/runbooks as scripts, so that a
// step that no longer works breaks the build. A runbook takes part when it
// holds a comment
//
//	<!-- runbook-test
//	load demo                     the demo's objects (cmd/etcdpvc/demo.go)
//	snapshot PATH                 save a snapshot of the etcd to PATH
//	delete KEY                    delete a key
//	delete-prefix PREFIX          delete every key under PREFIX (one entry)
//	wal PATH                      copy the member's write-ahead log to PATH
//	corrupt KEY                   put at KEY a value no apiserver decodes
//	-->
//
// whose lines set the stage, in order, on a real TLS etcd. Then every
// `etcdpvc` command in the runbook's ```sh blocks runs, in order, through
// run, and must exit 0. What a reader adapts is adapted the same way each
// time: `--kubeadm` reads a kube-apiserver manifest written for the test's
// etcd (certificates and encryption config included); an absolute path
// (other than an etcd key) is taken below the test's directory; a path with
// "…" in it, or BACKUP_FILE, is the newest backup; `enc.yaml` is the
// encryption config; `> FILE` writes stdout to FILE. Commands of other
// tools (kubectl, etcdctl, etcdutl, jq) are logged and skipped.
func TestRunbooks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd per runbook")
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "runbooks", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no runbooks found: %v", err)
	}
	tested := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rb := parseRunbook(string(b))
		if rb.setup == nil {
			t.Logf("%s: no runbook-test comment; not run", filepath.Base(f))
			continue
		}
		tested++
		t.Run(strings.TrimSuffix(filepath.Base(f), ".md"), func(t *testing.T) { runRunbook(t, rb) })
	}
	if tested == 0 {
		t.Fatal("no runbook has a runbook-test comment")
	}
}

// runbook is a runbook's test comment and its shell commands.
type runbook struct {
	setup    []string
	commands []string
}

// parseRunbook finds the runbook-test comment and the commands of the
// ```sh blocks (continuation lines joined, comments and blank lines
// dropped).
func parseRunbook(doc string) runbook {
	var rb runbook
	sc := bufio.NewScanner(strings.NewReader(doc))
	inSetup, inSh := false, false
	var cont string
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "<!-- runbook-test":
			inSetup, rb.setup = true, []string{}
		case inSetup && trimmed == "-->":
			inSetup = false
		case inSetup:
			if trimmed != "" {
				rb.setup = append(rb.setup, trimmed)
			}
		case strings.HasPrefix(trimmed, "```sh"):
			inSh = true
		case inSh && strings.HasPrefix(trimmed, "```"):
			inSh = false
		case inSh:
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			if strings.HasSuffix(trimmed, "\\") {
				cont += strings.TrimSuffix(trimmed, "\\") + " "
				continue
			}
			rb.commands = append(rb.commands, cont+trimmed)
			cont = ""
		}
	}
	return rb
}

func runRunbook(t *testing.T, rb runbook) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("NO_COLOR", "1")
	for _, v := range []string{"ETCDCTL_ENDPOINTS", "ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY", "ETCDCTL_USER", "ETCDCTL_PASSWORD"} {
		t.Setenv(v, "")
	}
	c := etcdtest.Start(t, etcdtest.Options{TLS: true})
	ca, cert, key := c.TLSFiles()
	enc := filepath.Join(dir, "encryption-config.yaml")
	encBytes, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "corpus", "encryption", "encryption-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(enc, encBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o700); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    command:
    - kube-apiserver
    - --etcd-servers=%s
    - --etcd-cafile=%s
    - --etcd-certfile=%s
    - --etcd-keyfile=%s
    - --encryption-provider-config=%s
`, strings.Join(c.Endpoints(), ","), ca, cert, key, enc)
	if err := os.WriteFile(filepath.Join(manifests, "kube-apiserver.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	// The etcd manifest states the quota the test's etcd runs with
	// (etcd's default), as kubeadm writes one for a stacked etcd.
	etcdManifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - name: etcd
    command:
    - etcd
    - --data-dir=%s
    - --quota-backend-bytes=2147483648
`, c.DataDir(0))
	if err := os.WriteFile(filepath.Join(manifests, "etcd.yaml"), []byte(etcdManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := c.Client(t)
	local := func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }

	for _, step := range rb.setup {
		f := strings.Fields(step)
		switch {
		case len(f) == 2 && f[0] == "load" && f[1] == "demo":
			for _, o := range demo.Objects {
				v, err := fs.ReadFile(fixtures.Corpus, path.Join("corpus", o.File))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := cli.Put(ctx, o.Key, string(v)); err != nil {
					t.Fatalf("%s: %v", step, err)
				}
			}
		case len(f) == 2 && f[0] == "snapshot":
			path := local(f[1])
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			rc, err := cli.Snapshot(ctx)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		case len(f) == 2 && f[0] == "delete":
			resp, err := cli.Delete(ctx, f[1])
			if err != nil || resp.Deleted != 1 {
				t.Fatalf("%s: deleted %v keys, %v", step, resp, err)
			}
		case len(f) == 2 && f[0] == "delete-prefix":
			resp, err := cli.Delete(ctx, f[1], clientv3.WithPrefix())
			if err != nil || resp.Deleted == 0 {
				t.Fatalf("%s: deleted %v keys, %v", step, resp, err)
			}
		case len(f) == 2 && f[0] == "wal":
			copyTree(t, filepath.Join(c.DataDir(0), "member", "wal"), local(f[1]))
		case len(f) == 2 && f[0] == "corrupt":
			// Bytes no apiserver decodes: a protobuf envelope cut short.
			if _, err := cli.Put(ctx, f[1], "k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x40cut"); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
		default:
			t.Fatalf("runbook-test: unknown step %q", step)
		}
	}

	ran := 0
	for _, line := range rb.commands {
		words, err := shellWords(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if len(words) == 0 || words[0] != "etcdpvc" {
			checkKubectlReads(ctx, t, line, manifests)
			t.Logf("skipped (not etcdpvc): %s", line)
			continue
		}
		var args []string
		out := ""
		for i := 1; i < len(words); i++ {
			w := words[i]
			switch {
			case w == ">" && i+1 < len(words):
				out = local(words[i+1])
				i++
			case w == "--kubeadm":
				args = append(args, w, "--manifests-dir", manifests)
			case w == "enc.yaml":
				args = append(args, enc)
			case w == "BACKUP_FILE" || strings.Contains(w, "…"):
				args = append(args, newestBackup(t, filepath.Join(dir, "state", "etcdpvc", "backups")))
			case strings.HasPrefix(w, "/") && !strings.HasPrefix(w, "/registry"):
				args = append(args, local(w))
			default:
				args = append(args, w)
			}
		}
		var stdout, stderr bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), &stdout, &stderr)
		if code != exitcode.OK {
			t.Fatalf("runbook step failed with exit status %d:\n$ %s\n%s%s", code, line, stdout.String(), stderr.String())
		}
		if out != "" {
			if err := os.WriteFile(out, stdout.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		ran++
	}
	if ran == 0 {
		t.Fatal("the runbook has a runbook-test comment but no etcdpvc command")
	}
}

// kubectlRead matches a command substitution reading a field with kubectl:
// $(kubectl get pvc NAME -n NS -o jsonpath='{.spec.volumeName}').
var kubectlRead = regexp.MustCompile(`\$\((kubectl get [^)]*-o jsonpath=[^)]*)\)`)

// checkKubectlReads runs each kubectl read whose answer line uses as
// etcdpvc get, with the same arguments and JSONPath engine, on the
// runbook's own objects: one that prints nothing would make line act on
// nothing (kubectl patch pv with an empty name).
func checkKubectlReads(ctx context.Context, t *testing.T, line, manifests string) {
	t.Helper()
	for _, m := range kubectlRead.FindAllStringSubmatch(line, -1) {
		words, err := shellWords(m[1])
		if err != nil {
			t.Fatalf("%s: %v", m[1], err)
		}
		args := append([]string{"--kubeadm", "--manifests-dir", manifests}, words[1:]...)
		var stdout, stderr bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), &stdout, &stderr)
		if code != exitcode.OK || strings.TrimSpace(stdout.String()) == "" {
			t.Errorf("%s: its read %s prints nothing for the runbook's own objects (etcdpvc %s: exit %d) %s",
				line, m[1], strings.Join(words[1:], " "), code, stderr.String())
		}
	}
}

// copyTree copies the regular files of directory src into dst (made).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// newestBackup returns the newest backup file in dir.
func newestBackup(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no backup in %s for a step that names one (%v)", dir, err)
	}
	sort.Strings(files) // names start with the time they were taken
	return files[len(files)-1]
}

// shellWords splits a command line as a POSIX shell would for the simple
// lines of a runbook: words separated by blanks, '...' literal, "..." with
// \" and \\ escapes, a trailing # comment dropped.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == ' ' || ch == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case ch == '#' && !inWord:
			return words, nil
		case ch == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated '")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case ch == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated \"")
			}
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestShellWords(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`etcdpvc get pvc x -n demo`, []string{"etcdpvc", "get", "pvc", "x", "-n", "demo"}},
		{`etcdpvc patch pvc x -p '{"spec":{"a":1}}' --dry-run`, []string{"etcdpvc", "patch", "pvc", "x", "-p", `{"spec":{"a":1}}`, "--dry-run"}},
		{`etcdpvc ls   -A # every namespace`, []string{"etcdpvc", "ls", "-A"}},
		{`a "b \"c\" d" e`, []string{"a", `b "c" d`, "e"}},
		{`x > out.jsonl`, []string{"x", ">", "out.jsonl"}},
	} {
		got, err := shellWords(tc.line)
		if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("shellWords(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

// etcdutlCommands are the commands of etcdutl at etcdutlVersion (its
// ctl.go and snapshot_command.go), the release e2e/tools/etcd/go.mod
// pins. There is no `etcdutl snapshot hashkv`; `etcdutl hashkv` opens
// the file as etcd's backend and so rewrites it.
var etcdutlCommands = map[string]bool{"defrag": true, "snapshot restore": true, "snapshot status": true,
	"hashkv": true, "version": true, "completion": true, "migrate": true}

const etcdutlVersion = "v3.7.3"

var (
	inlineCode  = regexp.MustCompile("`([^`]+)`")
	etcdutlCall = regexp.MustCompile(`(?:^|[\s;|&(])etcdutl\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?`)
)

// TestRunbooksEtcdutl: every etcdutl command a runbook names, in its code,
// is one of etcdutl's, and a runbook that hashes a file with `etcdutl
// hashkv` says, in the same paragraph, to hash a copy (it rewrites the
// file: the sha256 trailer of a snapshot then no longer matches, and
// `etcdutl snapshot restore` refuses it).
func TestRunbooksEtcdutl(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "e2e", "tools", "etcd", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "go.etcd.io/etcd/etcdutl/v3 "+etcdutlVersion+" ") {
		t.Fatalf("e2e/tools/etcd/go.mod pins another etcdutl than %s: check etcdutlCommands against its ctl.go and snapshot_command.go, then set etcdutlVersion", etcdutlVersion)
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "runbooks", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no runbooks found: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paragraphs(string(b)) {
			for _, code := range p.code {
				for _, m := range etcdutlCall.FindAllStringSubmatch(code, -1) {
					cmd := m[1]
					if cmd == "snapshot" {
						cmd += " " + m[2]
					}
					if !etcdutlCommands[cmd] {
						t.Errorf("%s: `%s`: etcdutl %s has no command %q", filepath.Base(f), strings.TrimSpace(m[0]), etcdutlVersion, cmd)
					}
					if cmd == "hashkv" && !strings.Contains(p.text, "copy") {
						t.Errorf("%s: `%s` rewrites the file it hashes, and the paragraph does not say to hash a copy:\n%s", filepath.Base(f), strings.TrimSpace(m[0]), p.text)
					}
				}
			}
		}
	}
}

// paragraph is a run of a markdown document's lines up to a blank line (a
// fenced block is one), with the code it holds: its inline code spans,
// or the lines of the block.
type paragraph struct {
	text string
	code []string
}

// paragraphs splits doc into paragraphs.
func paragraphs(doc string) []paragraph {
	var (
		out    []paragraph
		lines  []string
		fenced bool
	)
	flush := func(block bool) {
		if len(lines) == 0 {
			return
		}
		p := paragraph{text: strings.Join(lines, " ")}
		if block {
			p.code = lines
		} else {
			for _, m := range inlineCode.FindAllStringSubmatch(p.text, -1) {
				p.code = append(p.code, m[1])
			}
		}
		out, lines = append(out, p), nil
	}
	for _, line := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "```"):
			flush(fenced)
			fenced = !fenced
		case t == "" && !fenced:
			flush(false)
		case t != "":
			lines = append(lines, t)
		}
	}
	flush(fenced)
	return out
}
