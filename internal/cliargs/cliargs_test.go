package cliargs

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// grammar is a program with global flags --endpoints (a value) and
// --kubeadm, and commands get (-n, -o: values; --yes) and ls (-A).
func grammar() Grammar {
	global := map[string]bool{"endpoints": true, "kubeadm": false}
	cmds := map[string]map[string]bool{
		"get": {"n": true, "namespace": true, "o": true, "yes": false},
		"ls":  {"A": false},
	}
	all := map[string]bool{}
	with := func(m map[string]bool) map[string]bool {
		out := map[string]bool{}
		for k, v := range global {
			out[k] = v
		}
		for k, v := range m {
			out[k] = out[k] || v
		}
		return out
	}
	for _, c := range cmds {
		for k, v := range with(c) {
			all[k] = all[k] || v
		}
	}
	return Grammar{
		Values: all,
		Command: func(name string) (map[string]bool, bool) {
			c, ok := cmds[name]
			if !ok {
				return nil, false
			}
			return with(c), true
		},
		Global: func(name string) bool { return global[name] || name == "kubeadm" },
	}
}

func TestParseReordered(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		err  string
	}{
		{args: nil, want: nil},
		{args: []string{"get", "pvc", "x"}, want: []string{"get", "--", "pvc", "x"}},
		{args: []string{"get", "pvc", "x", "-n", "demo", "--yes"}, want: []string{"get", "-n", "demo", "--yes", "--", "pvc", "x"}},
		{args: []string{"--endpoints", "E", "get", "pvc", "x"}, want: []string{"--endpoints", "E", "get", "--", "pvc", "x"}},
		{args: []string{"-n", "demo", "--endpoints=E", "get", "pvc", "x"}, want: []string{"--endpoints=E", "get", "-n", "demo", "--", "pvc", "x"}},
		{args: []string{"get", "pvc", "x", "-ndemo", "-ojson"}, want: []string{"get", "-n", "demo", "-o", "json", "--", "pvc", "x"}},
		{args: []string{"get", "x", "-n=demo"}, want: []string{"get", "-n=demo", "--", "x"}},
		{args: []string{"--endpoints", "-nx", "ls"}, want: []string{"--endpoints", "-nx", "ls"}},
		{args: []string{"get", "--", "pvc", "-x"}, want: []string{"get", "--", "pvc", "-x"}},
		{args: []string{"gett", "pvc", "-ndemo"}, want: []string{"gett", "pvc", "-n", "demo"}},
		{args: []string{"-n", "demo"}, want: []string{"-n", "demo"}},
		{args: []string{"ls", "-", "-A"}, want: []string{"ls", "-A", "--", "-"}},
		{args: []string{"get", "pvc", "x", "-n"}, err: "flag -n needs a value"},
		{args: []string{"--endpoints"}, err: "flag --endpoints needs a value"},
	} {
		l, err := Parse(grammar(), tc.args, false)
		if tc.err != "" {
			var mv *MissingValueError
			if err == nil || err.Error() != tc.err || !errors.As(err, &mv) {
				t.Errorf("Parse(%q): error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.args, err)
			continue
		}
		if diff := cmp.Diff(tc.want, l.Reordered()); diff != "" {
			t.Errorf("Parse(%q).Reordered() (-want +got):\n%s", tc.args, diff)
		}
	}
}

// TestParseRepeated: a flag given several times, before and after the
// command name, keeps every value in order (Values); Flags holds the last,
// and Reordered keeps them all.
func TestParseRepeated(t *testing.T) {
	args := []string{"--endpoints", "A", "get", "pvc", "x", "--endpoints=B,C", "-n", "demo", "--endpoints", "A"}
	l, err := Parse(grammar(), args, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"endpoints": {"A", "B,C", "A"}, "n": {"demo"}}, l.Values); diff != "" {
		t.Errorf("Values (-want +got):\n%s", diff)
	}
	if l.Flags["endpoints"] != "A" {
		t.Errorf("Flags[endpoints] = %q, want the last value", l.Flags["endpoints"])
	}
	want := []string{"--endpoints", "A", "get", "--endpoints=B,C", "-n", "demo", "--endpoints", "A", "--", "pvc", "x"}
	if diff := cmp.Diff(want, l.Reordered()); diff != "" {
		t.Errorf("Reordered (-want +got):\n%s", diff)
	}
	l, err = Parse(grammar(), []string{"--endpoints", "A", "get", "--endpoints"}, true)
	if err != nil || l.Pending != "endpoints" || len(l.Values["endpoints"]) != 1 {
		t.Errorf("partial: Values %v, Pending %q, %v", l.Values, l.Pending, err)
	}
}

func TestParsePartial(t *testing.T) {
	for _, tc := range []struct {
		words      []string
		name       string
		positional []string
		flags      map[string]string
		pending    string
	}{
		{words: nil, flags: map[string]string{}},
		{words: []string{"-n", "demo", "get", "pvc"}, name: "get", positional: []string{"pvc"}, flags: map[string]string{"n": "demo"}},
		{words: []string{"--endpoints=E", "--kubeadm", "get"}, name: "get", flags: map[string]string{"endpoints": "E", "kubeadm": "true"}},
		{words: []string{"get", "pvc", "--namespace"}, name: "get", positional: []string{"pvc"}, flags: map[string]string{}, pending: "namespace"},
		{words: []string{"get", "pvc", "-n"}, name: "get", positional: []string{"pvc"}, flags: map[string]string{}, pending: "n"},
		{words: []string{"nosuch", "pvc"}, positional: []string{"nosuch", "pvc"}, flags: map[string]string{}},
	} {
		l, err := Parse(grammar(), tc.words, true)
		if err != nil {
			t.Errorf("Parse(%q, partial): %v", tc.words, err)
			continue
		}
		got := []any{l.Name, l.Positional, l.Flags, l.Pending}
		want := []any{tc.name, tc.positional, tc.flags, tc.pending}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Parse(%q, partial) (-want +got):\n%s", tc.words, diff)
		}
	}
}

func TestFlagError(t *testing.T) {
	names := []string{"namespace", "n", "output", "o", "rev"}
	for _, tc := range []struct{ msg, want string }{
		{"flag provided but not defined: -namspace", "unknown flag --namspace; did you mean --namespace?"},
		{"flag provided but not defined: -x", "unknown flag -x"},
		{"flag provided but not defined: -zzzzzz", "unknown flag --zzzzzz"},
		{`invalid value "x" for flag -rev: parse error`, `invalid value "x" for flag --rev: parse error`},
		{`invalid value "x" for flag -o: bad`, `invalid value "x" for flag -o: bad`},
	} {
		if got := FlagError(tc.msg, names); got != tc.want {
			t.Errorf("FlagError(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	names := []string{"get", "ls", "undelete", "history"}
	for _, tc := range []struct{ name, want string }{
		{"gett", `unknown command "gett"; did you mean get?`},
		{"histroy", `unknown command "histroy"; did you mean history?`},
		{"frobnicate", `unknown command "frobnicate"`},
	} {
		if got := UnknownCommand(tc.name, names); got != tc.want {
			t.Errorf("UnknownCommand(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	for _, tc := range []struct {
		s          string
		candidates []string
		want       string
	}{
		{"namspace", []string{"namespace", "name"}, "namespace"},
		{"ab", []string{"xy"}, ""},                        // 2 edits of 2 letters
		{"abcdefghij", []string{"abcd"}, ""},              // 6 edits
		{"abcdefghi", []string{"abcdefxyz"}, "abcdefxyz"}, // 3 of 9
		{"x", nil, ""},
	} {
		if got := Nearest(tc.s, tc.candidates); got != tc.want {
			t.Errorf("Nearest(%q, %q) = %q, want %q", tc.s, tc.candidates, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestCandidates(t *testing.T) {
	words := []string{"pvc", "pv", "pvc", "pods", "secrets"}
	for _, tc := range []struct {
		typed string
		limit int
		want  []string
	}{
		{"p", 10, []string{"pvc", "pv", "pods"}},
		{"pv", 1, []string{"pvc"}},
		{"x", 10, nil},
		{"", 10, []string{"pvc", "pv", "pods", "secrets"}},
	} {
		if diff := cmp.Diff(tc.want, Candidates(words, tc.typed, tc.limit)); diff != "" {
			t.Errorf("Candidates(%q, %d) (-want +got):\n%s", tc.typed, tc.limit, diff)
		}
	}
}
