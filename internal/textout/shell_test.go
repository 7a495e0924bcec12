package textout

import (
	"os/exec"
	"testing"
)

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/var/lib/etcd/backups":                 "/var/lib/etcd/backups",
		"":                                      "''",
		"/tmp/my backups":                       "'/tmp/my backups'",
		"it's":                                  `'it'\''s'`,
		"/registry/pods/demo/web-0":             "/registry/pods/demo/web-0",
		"$HOME/x":                               "'$HOME/x'",
		"/registry/configmaps/demo/evil\x1b[2J": `$'/registry/configmaps/demo/evil\x1b[2J'`,
		"it's \u202e\\ \n\xff":                  `$'it\'s \u202e\\ \n\xff'`,
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestShellQuoteReadBack: a shell reads every quoted string back as the
// same bytes.
func TestShellQuoteReadBack(t *testing.T) {
	sh, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, in := range []string{"/tmp/my backups", "it's", "/registry/configmaps/demo/evil\x1b[2J", "it's \u202e\\ \n\t\xff \u009b"} {
		out, err := exec.Command(sh, "-c", "printf %s "+ShellQuote(in)).Output()
		if err != nil || string(out) != in {
			t.Errorf("%s read back as %q (%v), want %q", ShellQuote(in), out, err, in)
		}
	}
}
