package main

import (
	"testing"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/google/go-cmp/cmp"
)

func TestParseCompletionLine(t *testing.T) {
	for _, tc := range []struct {
		words      []string
		cmd        string
		positional []string
		flags      map[string]string
		pending    string
	}{
		{words: nil, flags: map[string]string{}},
		{words: []string{"get", "pvc"}, cmd: "get", positional: []string{"pvc"}, flags: map[string]string{}},
		{words: []string{"-n", "demo", "get", "pvc"}, cmd: "get", positional: []string{"pvc"}, flags: map[string]string{"n": "demo"}},
		{words: []string{"--endpoints=https://10.0.0.1:2379", "--kubeadm", "undelete", "pvc"}, cmd: "undelete", positional: []string{"pvc"},
			flags: map[string]string{"endpoints": "https://10.0.0.1:2379", "kubeadm": "true"}},
		{words: []string{"get", "pvc", "--namespace"}, cmd: "get", positional: []string{"pvc"}, flags: map[string]string{}, pending: "namespace"},
		{words: []string{"rebind", "pv", "x", "--to-claim"}, cmd: "rebind", positional: []string{"pv", "x"}, flags: map[string]string{}, pending: "to-claim"},
		{words: []string{"undelete", "--yes", "pvc"}, cmd: "undelete", positional: []string{"pvc"}, flags: map[string]string{"yes": "true"}},
		{words: []string{"nosuch", "pvc"}, positional: []string{"nosuch", "pvc"}, flags: map[string]string{}},
	} {
		l, c := cliargs.Completer{Program: program(commands())}.ParseCompletion(tc.words)
		cmd := ""
		if c != nil {
			cmd = c.Name
		}
		got := []any{cmd, l.Positional, l.Flags, l.Pending}
		want := []any{tc.cmd, tc.positional, tc.flags, tc.pending}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ParseCompletion(%q) (-want +got):\n%s", tc.words, diff)
		}
	}
}

// TestGroupByValuesParse: every --by value completion offers is one stats
// accepts.
func TestGroupByValuesParse(t *testing.T) {
	for _, v := range cliargs.GroupByValues {
		if _, err := inspect.ParseGroupBy(v); err != nil {
			t.Errorf("--by %s: %v", v, err)
		}
	}
}
