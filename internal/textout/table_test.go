package textout

import (
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch int
		rows  [][]string
		want  string
	}{
		{"headers only", 500, nil, "NAME   STATUS\n"},
		{"aligned, last column not padded", 500, [][]string{{"www-web-0", "Terminating 3d"}, {"a", "Bound"}},
			"NAME        STATUS\nwww-web-0   Terminating 3d\na           Bound\n"},
		{"runes, not bytes", 500, [][]string{{"é", "x"}}, "NAME   STATUS\né      x\n"},
		{"controls escaped, aligned as shown", 500, [][]string{{"\x1b[2J", "x"}, {"a", "\u202e"}},
			"NAME      STATUS\n\\x1b[2J   x\na         \\u202e\n"},
		// Widths only grow: the second batch is aligned on the widest cell
		// seen so far, and the first one is not rewritten.
		{"batches", 1, [][]string{{"a", "1"}, {"longer-name", "2"}, {"b", "3"}},
			"NAME   STATUS\na      1\nlonger-name   2\nb             3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tab := NewTable(&b, "NAME", "STATUS")
			tab.BatchSize = tc.batch
			if err := tab.Rows(tc.rows); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tc.want)
			}
		})
	}
}
