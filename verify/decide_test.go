package verify

import "testing"

func TestDecide(t *testing.T) {
	tests := []struct {
		mode    Mode
		reach   Reach
		verdict Verdict
		want    Action
	}{
		{Auto, Reachable, Accepted, WriteVerified},
		{Auto, Reachable, Rejected, RefuseRejected},
		{Auto, Reachable, Unknown, WriteUnverified},
		{Auto, Unreachable, Accepted, WriteUnverified},
		{Auto, Unreachable, Rejected, WriteUnverified},
		{Auto, Unreachable, Unknown, WriteUnverified},
		{Auto, Offline, Unknown, WriteUnverified},
		{Always, Reachable, Accepted, WriteVerified},
		{Always, Reachable, Rejected, RefuseRejected},
		{Always, Reachable, Unknown, RefuseUnverifiable},
		{Always, Unreachable, Accepted, RefuseUnverifiable},
		{Always, Unreachable, Rejected, RefuseUnverifiable},
		{Always, Unreachable, Unknown, RefuseUnverifiable},
		{Always, Offline, Unknown, RefuseUnverifiable},
		{Never, Reachable, Accepted, WriteUnverified},
		{Never, Reachable, Rejected, WriteUnverified},
		{Never, Reachable, Unknown, WriteUnverified},
		{Never, Unreachable, Accepted, WriteUnverified},
		{Never, Unreachable, Rejected, WriteUnverified},
		{Never, Unreachable, Unknown, WriteUnverified},
		{Never, Offline, Unknown, WriteUnverified},
	}
	for _, tc := range tests {
		if got := Decide(tc.mode, tc.reach, tc.verdict); got != tc.want {
			t.Errorf("Decide(%v, reach %d, verdict %d) = %v, want %v", tc.mode, tc.reach, tc.verdict, got, tc.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"auto": Auto, "": Auto, "always": Always, "Never": Never} {
		got, err := ParseMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"yes", "alwyas", "off"} {
		if _, err := ParseMode(in); err == nil {
			t.Errorf("ParseMode(%q): no error", in)
		}
	}
}
