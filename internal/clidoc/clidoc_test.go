package clidoc

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                      "plain",
		"a|b <c> *d* \\e":            `a\|b &lt;c&gt; \*d\* \\e`,
		"keep `a|b <c>` as code | x": "keep `a|b <c>` as code \\| x",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSection(t *testing.T) {
	c := Command{Name: "get", Usage: "print one `a|b` object", ArgsUsage: "RESOURCE NAME",
		Desc: "get reads one\nobject.\n\nSecond paragraph.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "yaml", Usage: "yaml or json"},
			&cli.BoolFlag{Name: "force", Usage: "write to a terminal"},
			&cli.Int64Flag{Name: "rev", Usage: "read at this revision"},
		},
		Examples: "prog get pvc x\n"}
	var b strings.Builder
	Index(&b, "prog", []Command{c})
	Section(&b, "prog", c, "\nand more.\n\n")
	want := "| command | what it does |\n|---|---|\n" +
		"| [`get`](#prog-get) | print one `a|b` object |\n" +
		"\n## prog get\n\nPrint one `a|b` object.\n\n" +
		"```\nprog get [flags] RESOURCE NAME\n```\n\n" +
		"get reads one object.\n\nSecond paragraph.\n\n" +
		"| flag | default | meaning |\n|---|---|---|\n" +
		"| `--output`, `-o` | `yaml` | yaml or json |\n" +
		"| `--force` |  | write to a terminal |\n" +
		"| `--rev` | `0` | read at this revision |\n" +
		"\nand more.\n\n" +
		"Examples:\n\n```sh\nprog get pvc x\n```\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
