package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

func TestReorderArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		err  string
	}{
		{args: nil, want: nil},
		{args: []string{"get", "pvc", "x"}, want: []string{"get", "--", "pvc", "x"}},
		{args: []string{"undelete", "pvc", "x", "-n", "demo", "--yes"}, want: []string{"undelete", "-n", "demo", "--yes", "--", "pvc", "x"}},
		{args: []string{"--endpoints", "E", "get", "pvc", "x"}, want: []string{"--endpoints", "E", "get", "--", "pvc", "x"}},
		// A command's flag before the command name moves after it.
		{args: []string{"-n", "demo", "--endpoints=E", "get", "pvc", "x"}, want: []string{"--endpoints=E", "get", "-n", "demo", "--", "pvc", "x"}},
		// kubectl's joined short forms.
		{args: []string{"get", "pvc", "x", "-ndemo", "-ojson"}, want: []string{"get", "-n", "demo", "-o", "json", "--", "pvc", "x"}},
		// A flag's value is left alone, even when it looks like a flag.
		{args: []string{"--password", "-nx", "ls"}, want: []string{"--password", "-nx", "ls"}},
		// "--" ends the flags.
		{args: []string{"get", "--", "pvc", "-x"}, want: []string{"get", "--", "pvc", "-x"}},
		// An unknown command is left for the CLI to report.
		{args: []string{"gett", "pvc", "-ndemo"}, want: []string{"gett", "pvc", "-n", "demo"}},
		{args: []string{"--help"}, want: []string{"--help"}},
		{args: []string{"-n", "demo"}, want: []string{"-n", "demo"}},
		{args: []string{"get", "pvc", "x", "-n"}, err: "flag -n needs a value"},
	} {
		got, err := reorderArgs(commands(), tc.args)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("reorderArgs(%q): error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("reorderArgs(%q): %v", tc.args, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("reorderArgs(%q) (-want +got):\n%s", tc.args, diff)
		}
	}
}

// TestDeclaredArguments: the argument checks come from each command's
// declaration and run before anything is opened (no etcd here).
func TestDeclaredArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pvc"}, "get reads one object: name it (RESOURCE NAME, RESOURCE/NAME or --etcd-key KEY)"},
		{[]string{"get"}, "name the object: RESOURCE NAME, RESOURCE/NAME or --etcd-key KEY"},
		{[]string{"get", "pvc", "a", "b"}, `get takes one object; unexpected ["b"]`},
		{[]string{"history", "pvc/a", "b"}, `history takes one object; unexpected ["b"]`},
		{[]string{"undelete", "--etcd-key", "/registry/pods/d/p", "pvc", "x"}, `undelete takes one object; unexpected ["pvc" "x"]`},
		{[]string{"finalizers", "pvc", "a", "b", "--remove", "f"}, `finalizers takes one object; unexpected ["b"]`},
		{[]string{"patch", "pvc", "a", "b"}, `patch takes one object; unexpected ["b"]`},
		{[]string{"edit", "pvc", "a", "b"}, `edit takes one object; unexpected ["b"]`},
		{[]string{"label", "pvc", "a"}, "label needs at least one KEY=VALUE or KEY-"},
		{[]string{"annotate", "pvc/a"}, "annotate needs at least one KEY=VALUE or KEY-"},
		{[]string{"resize-recover", "pvc", "a", "b"}, `resize-recover takes one claim; unexpected ["b"]`},
		{[]string{"rebind", "pv", "a", "b"}, `rebind takes one volume; unexpected ["b"]`},
		{[]string{"rebind", "pv"}, "name the object: RESOURCE NAME, RESOURCE/NAME or --etcd-key KEY"},
		{[]string{"recover", "pvc", "a", "b"}, `recover takes one object; unexpected ["b"]`},
		{[]string{"restore"}, "restore needs a BACKUP_FILE, several, or --operation ID --backup-dir DIR"},
		{[]string{"restore", "a", "--operation", "20261203T003510Z-1f2e3d4c"}, "restore takes BACKUP_FILE... or --operation ID, not both"},
		{[]string{"backups", "a"}, "backups takes no arguments"},
		{[]string{"ls", "pvc", "pv"}, "ls takes at most one RESOURCE"},
		{[]string{"dump", "pvc", "pv"}, "dump takes at most one RESOURCE"},
		{[]string{"diff", "a.db"}, "diff takes two states A and B (a file, live or rev:N) and at most one RESOURCE"},
		{[]string{"doctor", "x"}, "doctor takes no arguments"},
		{[]string{"stats", "x"}, "stats takes no arguments"},
		{[]string{"demo", "x"}, "demo takes no arguments"},
		{[]string{"decode", "a", "b"}, "decode takes at most one input file"},
		{[]string{"encode", "a", "b"}, "encode takes at most one input file"},
		{[]string{"completion"}, "completion takes one shell: bash, zsh or fish"},
		{[]string{"gen-docs", "a", "b"}, "gen-docs takes at most one FILE"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if code != exitcode.Usage || first != "etcdpvc: error: "+tc.want {
			t.Errorf("etcdpvc %q: exit %d, %q; want exit %d, %q", tc.args, code, first, exitcode.Usage, tc.want)
		}
	}
}

// TestGlobalsResolvedOnlyWhenUsed: a bad global flag stops the commands
// that use the global flags, before their action, and not the others.
func TestGlobalsResolvedOnlyWhenUsed(t *testing.T) {
	t.Setenv("ETCDCTL_DIAL_TIMEOUT", "soon")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"version"}, strings.NewReader(""), &stdout, &stderr); code != exitcode.OK {
		t.Errorf("version with a bad $ETCDCTL_DIAL_TIMEOUT: exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	code := run(context.Background(), []string{"doctor"}, strings.NewReader(""), &stdout, &stderr)
	if want := `etcdpvc: error: --dial-timeout "soon": time: invalid duration "soon"`; code != exitcode.Usage || !strings.HasPrefix(stderr.String(), want+"\n") {
		t.Errorf("doctor with a bad $ETCDCTL_DIAL_TIMEOUT: exit %d, %q; want exit %d, %q", code, stderr.String(), exitcode.Usage, want)
	}
}

// TestDeclarations: an object command has the object flags, once, and a
// synopsis; a command that takes no arguments has none.
func TestDeclarations(t *testing.T) {
	for _, c := range commands() {
		var names []string
		for _, f := range c.flags {
			names = append(names, f.Names()...)
		}
		for _, n := range names {
			if strings.Count(" "+strings.Join(names, " ")+" ", " "+n+" ") > 1 {
				t.Errorf("%s declares the flag %s twice", c.name, n)
			}
		}
		switch {
		case c.args.Kind == cliargs.ArgsObject && !c.args.Bare:
			if !slices.Contains(names, "namespace") || !slices.Contains(names, "etcd-key") {
				t.Errorf("%s names one object but has no -n/--etcd-key: %v", c.name, names)
			}
		case c.args.Kind == cliargs.ArgsCount && c.args.Max == 0:
			if c.argsUsage != "" {
				t.Errorf("%s takes no arguments but its synopsis shows %q", c.name, c.argsUsage)
			}
		}
		if c.args.Kind == cliargs.ArgsCount && c.args.Usage == "" && !(c.args.Min == 0 && c.args.Max <= 1) && !(c.args.Min == 1 && c.args.Max == 1) {
			t.Errorf("%s takes %d to %d arguments: its declaration needs a usage error", c.name, c.args.Min, c.args.Max)
		}
		if c.args.Kind != cliargs.ArgsFree && c.args.Max != 0 && c.argsUsage == "" {
			t.Errorf("%s takes arguments but its synopsis shows none", c.name)
		}
		for flag := range c.values {
			if !slices.Contains(names, flag) {
				t.Errorf("%s completes the values of --%s, which it does not have", c.name, flag)
			}
		}
	}
}

// TestCompleteFromDeclarations: completion offers what each command
// declares (no etcd is reached for these).
func TestCompleteFromDeclarations(t *testing.T) {
	backups := t.TempDir()
	for _, n := range []string{"20261130T023000Z-a.json", "20261201T010000Z-b.json", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(backups, n), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	for _, tc := range []struct {
		words    []string
		want     []string // exactly these
		contains []string // at least these
	}{
		{words: []string{"rebind", ""}, want: []string{"pv", "persistentvolume", "persistentvolumes"}},
		{words: []string{"resize-recover", "p"}, want: []string{"pvc", "persistentvolumeclaim", "persistentvolumeclaims"}},
		{words: []string{"completion", ""}, want: []string{"bash", "fish", "zsh"}},
		{words: []string{"completion", "bash", ""}, want: nil},
		{words: []string{"help", "ge"}, want: []string{"get"}},
		{words: []string{"restore", "--backup-dir", backups, ""}, want: []string{
			filepath.Join(backups, "20261201T010000Z-b.json"), filepath.Join(backups, "20261130T023000Z-a.json")}},
		{words: []string{"ls", ""}, contains: []string{"pvc", "persistentvolumeclaims", "namespaces"}},
		{words: []string{"dump", "-A", "pv"}, want: []string{"pv", "pvc"}},
		{words: []string{"undelete", "-n", "demo", "persistentvolumec"}, want: []string{"persistentvolumeclaims"}},
		{words: []string{"get", "--e"}, contains: []string{"--etcd-key", "--endpoints"}},
		{words: []string{"rebind", "--"}, contains: []string{"--to-claim", "--yes"}},
		{words: []string{"version", ""}, want: nil},
		{words: []string{"ver"}, want: []string{"version"}},
	} {
		got := complete(&cli.Context{}, e, tc.words)
		if tc.contains != nil {
			for _, w := range tc.contains {
				if !slices.Contains(got, w) {
					t.Errorf("complete(%q) = %q: no %q", tc.words, got, w)
				}
			}
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("complete(%q) (-want +got):\n%s", tc.words, diff)
		}
	}
}
