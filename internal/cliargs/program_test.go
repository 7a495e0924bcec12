package cliargs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArgsCheckCount(t *testing.T) {
	for _, tc := range []struct {
		args Args
		n    int
		want string // "" no error
	}{
		{None, 0, ""},
		{None, 1, "cmd takes no arguments"},
		{Optional("RESOURCE", OfferResources), 0, ""},
		{Optional("RESOURCE", OfferResources), 1, ""},
		{Optional("RESOURCE", OfferResources), 2, "cmd takes at most one RESOURCE"},
		{Args{Kind: ArgsCount, Min: 1, Max: 1, What: "BACKUP_FILE"}, 0, "cmd takes one BACKUP_FILE"},
		{Args{Kind: ArgsCount, Min: 1, Max: 1, What: "BACKUP_FILE"}, 2, "cmd takes one BACKUP_FILE"},
		{Args{Kind: ArgsCount, Min: 2, Max: 3, Usage: "cmd takes A and B"}, 1, "cmd takes A and B"},
		{Args{Kind: ArgsCount, Min: 2, Max: 3, Usage: "cmd takes A and B"}, 3, ""},
	} {
		err := tc.args.CheckCount("cmd", tc.n)
		if got := errString(err); got != tc.want {
			t.Errorf("%+v.CheckCount(%d) = %q, want %q", tc.args, tc.n, got, tc.want)
		}
		var u *UsageError
		if err != nil && !errors.As(err, &u) {
			t.Errorf("%+v.CheckCount(%d): %T, want a *UsageError", tc.args, tc.n, err)
		}
	}
}

func TestArgsObject(t *testing.T) {
	object := Args{Kind: ArgsObject}
	label := Args{Kind: ArgsObject, More: "label needs at least one KEY=VALUE or KEY-"}
	for _, tc := range []struct {
		args      Args
		in        []string
		key       string
		obj, rest []string
		err       string
	}{
		{args: object, in: []string{"pvc", "x"}, obj: []string{"pvc", "x"}, rest: []string{}},
		{args: object, in: []string{"pvc/x"}, obj: []string{"pvc/x"}, rest: []string{}},
		{args: object, in: nil, key: "/registry/pods/d/p", rest: nil},
		{args: object, in: []string{"pvc"}, err: "name the object: RESOURCE NAME, RESOURCE/NAME or --etcd-key KEY"},
		{args: object, in: nil, err: "name the object: RESOURCE NAME, RESOURCE/NAME or --etcd-key KEY"},
		{args: object, in: []string{"pvc", "x", "y"}, err: `cmd takes one object; unexpected ["y"]`},
		{args: object, in: []string{"pvc/x", "y"}, err: `cmd takes one object; unexpected ["y"]`},
		{args: object, in: []string{"pvc", "x"}, key: "/k", err: `cmd takes one object; unexpected ["pvc" "x"]`},
		{args: Args{Kind: ArgsObject, Noun: "claim"}, in: []string{"pvc", "x", "y"}, err: `cmd takes one claim; unexpected ["y"]`},
		{args: label, in: []string{"pvc", "x"}, err: "label needs at least one KEY=VALUE or KEY-"},
		{args: label, in: []string{"pvc/x", "a=b", "c-"}, obj: []string{"pvc/x"}, rest: []string{"a=b", "c-"}},
	} {
		obj, rest, err := tc.args.Object("cmd", tc.in, tc.key)
		if got := errString(err); got != tc.err {
			t.Errorf("Object(%q, key %q): error %q, want %q", tc.in, tc.key, got, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		if diff := cmp.Diff([][]string{tc.obj, tc.rest}, [][]string{obj, rest}); diff != "" {
			t.Errorf("Object(%q, key %q) (-want +got):\n%s", tc.in, tc.key, diff)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// program has a global --endpoints (a value) and --kubeadm; get names one
// object (-n, --etcd-key, -o), rebind one volume (--to-claim completes
// claims), restore takes one backup, ls at most one RESOURCE (-A),
// version nothing, and __complete is hidden.
func program() Program {
	obj := []Flag{{Names: []string{"namespace", "n"}, Value: true}, {Names: []string{"etcd-key"}, Value: true}}
	return Program{
		Global:  []Flag{{Names: []string{"endpoints"}, Value: true}, {Names: []string{"kubeadm"}}},
		Builtin: []string{"help", "h"},
		Values:  map[string]Offer{"namespace": OfferNamespaces, "n": OfferNamespaces},
		Commands: []Command{
			{Name: "get", Args: Args{Kind: ArgsObject}, Flags: append(obj, Flag{Names: []string{"output", "o"}, Value: true})},
			{Name: "rebind", Args: Args{Kind: ArgsObject, Bare: true, Resources: []string{"pv", "persistentvolumes"}},
				Flags: []Flag{{Names: []string{"to-claim"}, Value: true}, {Names: []string{"yes"}}}, Values: map[string]Offer{"to-claim": OfferClaims}},
			{Name: "restore", Args: Args{Kind: ArgsCount, Min: 1, Max: 1, What: "BACKUP_FILE", First: OfferBackups}, Flags: []Flag{{Names: []string{"backup-dir"}, Value: true}}},
			{Name: "ls", Args: Optional("RESOURCE", OfferResources), Flags: []Flag{{Names: []string{"A"}}}},
			{Name: "completion", Args: Args{Kind: ArgsCount, Min: 1, Max: 1, First: OfferShells}},
			{Name: "version", Args: None},
			{Name: "__complete", Hidden: true},
		},
	}
}

// lookup answers from fixed lists, saying what it was asked.
type lookup struct{}

func (lookup) Names(l Line, res, typed string) []string {
	ns := l.Flags["n"] + l.Flags["namespace"]
	return []string{fmt.Sprintf("%s-in-%s", res, ns), typed + "x"}
}

func (lookup) Claims(l Line, typed string) []string { return []string{"demo/data-0", "other/data-1"} }

func (lookup) Backups(l Line, typed string) []string {
	return []string{l.Flags["backup-dir"] + "/b.json", l.Flags["backup-dir"] + "/a.json"}
}

func TestComplete(t *testing.T) {
	c := Completer{Program: program(), Resources: []string{"namespaces", "persistentvolumeclaims", "pv", "pvc"}, Lookup: lookup{}, Max: 3}
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{""}, []string{"get", "rebind", "restore"}}, // at most Max
		{[]string{"v"}, []string{"version"}},
		{[]string{"he"}, []string{"help"}},
		{[]string{"help", "re"}, []string{"rebind", "restore"}},
		{[]string{"help", "get", ""}, nil},
		{[]string{"nosuch", ""}, nil},
		{[]string{"get", "p"}, []string{"persistentvolumeclaims", "pv", "pvc"}},
		{[]string{"get", "pvc", ""}, []string{"pvc-in-", "x"}},
		{[]string{"get", "pvc", "-n", "demo", ""}, []string{"pvc-in-demo", "x"}},
		{[]string{"-ndemo", "get", "pvc", "d"}, []string{"dx"}},
		{[]string{"get", "pvc/"}, []string{"pvc/pvc-in-", "pvc/x"}},
		{[]string{"get", "nosuch/"}, nil},
		{[]string{"get", "pvc/x", ""}, nil},
		{[]string{"get", "pvc", "x", ""}, nil},
		{[]string{"get", "-n", ""}, []string{"namespaces-in-", "x"}},
		{[]string{"get", "--"}, []string{"--namespace", "--etcd-key", "--output"}},
		{[]string{"get", "--e"}, []string{"--etcd-key", "--endpoints"}},
		{[]string{"--k"}, []string{"--kubeadm"}},
		{[]string{"--h"}, []string{"--help"}},
		{[]string{"rebind", ""}, []string{"pv", "persistentvolumes"}},
		{[]string{"rebind", "pv", "x", "--to-claim", "d"}, []string{"demo/data-0"}},
		{[]string{"restore", "--backup-dir", "/b", ""}, []string{"/b/b.json", "/b/a.json"}},
		{[]string{"restore", "x", ""}, nil},
		{[]string{"ls", "n"}, []string{"namespaces"}},
		{[]string{"completion", ""}, []string{"bash", "fish", "zsh"}},
		{[]string{"version", ""}, nil},
		{[]string{"__complete", ""}, nil},
	} {
		got := c.Complete(tc.words)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Complete(%q) (-want +got):\n%s", tc.words, diff)
		}
	}
}

func TestProgramParse(t *testing.T) {
	p := program()
	for _, tc := range []struct {
		args      []string
		cmd       string
		reordered []string
		err       string
	}{
		{args: []string{"get", "pvc", "x", "-ndemo", "--endpoints", "E"}, cmd: "get", reordered: []string{"get", "-n", "demo", "--endpoints", "E", "--", "pvc", "x"}},
		// A command's flag before the command name moves after it; a
		// global one and a builtin stay.
		{args: []string{"--yes", "-h", "--kubeadm", "rebind", "pv", "x"}, cmd: "rebind", reordered: []string{"-h", "--kubeadm", "rebind", "--yes", "--", "pv", "x"}},
		// -o takes a value only where a command declares it: before the
		// command name, any command's.
		{args: []string{"-o", "json", "get", "x"}, cmd: "get", reordered: []string{"get", "-o", "json", "--", "x"}},
		{args: []string{"ls", "-A", "pvc"}, cmd: "ls", reordered: []string{"ls", "-A", "--", "pvc"}},
		{args: []string{"gett", "x"}, reordered: []string{"gett", "x"}},
		{args: []string{"get", "x", "--to-claim"}, err: "flag --to-claim needs a value"},
	} {
		l, cmd, err := p.Parse(tc.args, false)
		if got := errString(err); got != tc.err {
			t.Errorf("Parse(%q): error %q, want %q", tc.args, got, tc.err)
			continue
		}
		var u *UsageError
		if err != nil && !errors.As(err, &u) {
			t.Errorf("Parse(%q): %T, want a *UsageError", tc.args, err)
		}
		if err != nil {
			continue
		}
		name := ""
		if cmd != nil {
			name = cmd.Name
		}
		if diff := cmp.Diff([]any{tc.cmd, tc.reordered}, []any{name, l.Reordered()}); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tc.args, diff)
		}
	}
}

func TestCheckOutput(t *testing.T) {
	if err := CheckOutput("json", "yaml", "json"); err != nil {
		t.Errorf("an allowed form: %v", err)
	}
	var ue *UsageError
	if err := CheckOutput("jsn", "yaml", "json"); !errors.As(err, &ue) || ue.Msg != `-o "jsn": must be one of [yaml json]` {
		t.Errorf("a typo: %v, want a usage error naming the forms", err)
	}
}
