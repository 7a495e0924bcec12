package textout

import (
	"strings"
	"testing"
)

const warnPrefix = "etcdpvc: warning: "

func TestWrap(t *testing.T) {
	long := "the volume pv-www-web-0 has reclaim policy Delete: if the claim is deleted after the undelete, its data is deleted with it"
	for _, tc := range []struct {
		name  string
		msg   string
		width int
		want  string
	}{
		{"not a terminal: one line", long, 0, warnPrefix + long + "\n"},
		{"fits", "short", 80, warnPrefix + "short\n"},
		{"wraps at spaces under the text", long, 60,
			"etcdpvc: warning: the volume pv-www-web-0 has reclaim policy\n" +
				"                  Delete: if the claim is deleted after the\n" +
				"                  undelete, its data is deleted with it\n"},
		{"a word wider than a line stays whole", "a " + strings.Repeat("x", 70) + " b", 60,
			"etcdpvc: warning: a\n                  " + strings.Repeat("x", 70) + "\n                  b\n"},
		{"too narrow to wrap", long, 30, warnPrefix + long + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Wrap(warnPrefix, tc.msg, tc.width)
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
			if tc.width > len(warnPrefix)+20 {
				for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
					if len(l) > tc.width && !strings.Contains(l, strings.Repeat("x", 70)) {
						t.Errorf("line wider than %d: %q", tc.width, l)
					}
				}
			}
		})
	}
}
