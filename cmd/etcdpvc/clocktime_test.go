package main

import (
	"testing"
	"time"
)

func TestClockTimeFlag(t *testing.T) {
	now := time.Date(2026, 12, 3, 0, 35, 10, 0, time.UTC)
	y, m, d := now.In(time.Local).Date()
	for in, want := range map[string]time.Time{
		"":                          {},
		"2026-12-07T10:42:00Z":      time.Date(2026, 12, 7, 10, 42, 0, 0, time.UTC),
		"2026-12-07T11:42:00+01:00": time.Date(2026, 12, 7, 10, 42, 0, 0, time.UTC),
		"10:42":                     time.Date(y, m, d, 10, 42, 0, 0, time.Local),
		"10:42:07":                  time.Date(y, m, d, 10, 42, 7, 0, time.Local),
	} {
		got, err := clockTimeFlag("before-time", in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"10.42", "25:00", "yesterday", "2026-12-07"} {
		if _, err := clockTimeFlag("before-time", in, now); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
