package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/internal/exitcode"
	"github.com/rogpeppe/go-internal/diff"
)

// cliDocs is the generated command reference.
var cliDocs = filepath.Join("..", "..", "docs", "cli.md")

// TestCLIDocs fails when docs/cli.md is not what gen-docs writes; -update
// rewrites it.
func TestCLIDocs(t *testing.T) {
	var b bytes.Buffer
	if err := writeCLIDocs(&b); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(cliDocs, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(cliDocs)
	if err != nil {
		t.Fatalf("%v; run go test ./cmd/etcdpvc -run TestCLIDocs -update", err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Fatalf("docs/cli.md is stale; run go test ./cmd/etcdpvc -run TestCLIDocs -update:\n%s", diff.Diff("docs/cli.md", have, "gen-docs", b.Bytes()))
	}
}

// lacksExamples are commands, owned elsewhere, whose help has no examples
// yet. Remove a name once its command gains them.
var lacksExamples = map[string]bool{}

// TestHelpSections: every command's --help has a runnable EXAMPLES section
// (each example starts with etcdpvc, or feeds or runs it) and a one-line
// pointer to `etcdpvc --help`, which alone lists the global flags and the
// EXIT STATUS section.
func TestHelpSections(t *testing.T) {
	var top, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, strings.NewReader(""), &top, &stderr); code != exitcode.OK {
		t.Fatalf("--help: exit %d: %s", code, stderr.String())
	}
	if _, exit, ok := strings.Cut(top.String(), "EXIT STATUS:\n"); !ok || !strings.HasPrefix(strings.TrimSpace(exit), "0  success") {
		t.Errorf("etcdpvc --help has no EXIT STATUS section:\n%s", top.String())
	}
	for _, g := range globalFlags {
		if !strings.Contains(top.String(), "--"+g.name+" ") {
			t.Errorf("etcdpvc --help does not list --%s", g.name)
		}
	}
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), []string{c.name, "--help"}, strings.NewReader(""), &stdout, &stderr); code != exitcode.OK {
				t.Fatalf("--help: exit %d: %s", code, stderr.String())
			}
			help := stdout.String()
			if !strings.Contains(help, globalPointer) {
				t.Errorf("--help does not point at etcdpvc --help:\n%s", help)
			}
			if strings.Contains(help, "EXIT STATUS") {
				t.Errorf("--help repeats the exit statuses:\n%s", help)
			}
			_, options, _ := strings.Cut(help, "OPTIONS:\n")
			for _, g := range globalFlags {
				if strings.Contains(options, "   --"+g.name+" ") {
					t.Errorf("--help lists the global flag --%s:\n%s", g.name, options)
				}
			}
			_, examples, ok := strings.Cut(help, "EXAMPLES:\n")
			if !ok {
				if !lacksExamples[c.name] {
					t.Errorf("--help has no EXAMPLES section:\n%s", help)
				}
				return
			}
			if lacksExamples[c.name] {
				t.Errorf("%s has examples now: remove it from lacksExamples", c.name)
			}
			examples, _, _ = strings.Cut(examples, "\n\n")
			for _, ex := range strings.Split(examples, "\n") {
				ex = strings.TrimSpace(ex)
				if !strings.Contains(ex, "etcdpvc ") && !strings.Contains(ex, "./cmd/etcdpvc") {
					t.Errorf("example %q does not run etcdpvc", ex)
				}
			}
		})
	}
}

// TestFlagPlaceholders: urfave/cli takes the first `quoted` words of a
// flag's usage as the placeholder of its value (--since REV): a usage
// quoting a command (`etcdctl snapshot save`) would print
// "--wal-base etcdctl snapshot save", a boolean "--salvage salvage".
// Backticks in a usage name a placeholder, in capitals, and nothing else.
func TestFlagPlaceholders(t *testing.T) {
	placeholder := regexp.MustCompile("^[A-Z][A-Z0-9_]*$")
	check := func(where string, flags []cli.Flag) {
		for _, f := range flags {
			d, ok := f.(cli.DocGenerationFlag)
			if !ok {
				continue
			}
			usage := d.GetUsage()
			i := strings.IndexByte(usage, '`')
			if i < 0 {
				continue
			}
			j := strings.IndexByte(usage[i+1:], '`')
			_, isBool := f.(*cli.BoolFlag)
			if j < 0 || isBool || !placeholder.MatchString(usage[i+1:i+1+j]) {
				t.Errorf("%s --%s: backticks in its usage make a placeholder: %q", where, f.Names()[0], usage)
			}
		}
	}
	check("etcdpvc", globalCLIFlags(false))
	for _, c := range commands() {
		check(c.name, c.flags)
	}
}

// TestReadmeSaysWhatMakeTestNeeds: the README's opening, which says what
// `make test` needs on a fresh machine, names what the Makefile's test
// target fetches or installs: the servers the e2e suite builds through the
// Go module proxy, and the Chromium test-browser installs.
func TestReadmeSaysWhatMakeTestNeeds(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	opening, _, _ := strings.Cut(string(readme), "\n## ")
	target := regexp.MustCompile(`(?m)^test:(.*)$`).FindStringSubmatch(string(mk))
	if target == nil {
		t.Fatal("the Makefile has no test target")
	}
	for step, words := range map[string][]string{"e2e": {"kube-apiserver", "module proxy"}, "test-browser": {"Chromium", "apt-get"}} {
		if !slices.Contains(strings.Fields(target[1]), step) {
			continue
		}
		for _, w := range words {
			if !strings.Contains(opening, w) {
				t.Errorf("make test runs %s, but the README's opening, which says what make test needs, does not name %s", step, w)
			}
		}
	}
}
