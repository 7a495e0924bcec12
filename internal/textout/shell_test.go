package textout

import "testing"

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/var/lib/etcd/backups":     "/var/lib/etcd/backups",
		"":                          "''",
		"/tmp/my backups":           "'/tmp/my backups'",
		"it's":                      `'it'\''s'`,
		"/registry/pods/demo/web-0": "/registry/pods/demo/web-0",
		"$HOME/x":                   "'$HOME/x'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
