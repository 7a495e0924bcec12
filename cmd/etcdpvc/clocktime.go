package main

import (
	"time"
)

// clockTimeFlag reads the time an operator gives to flag name: RFC 3339,
// or HH:MM or HH:MM:SS today in the local zone, as `date` prints it
// (today: now's date there). An empty value is the zero time.
func clockTimeFlag(name, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			y, m, d := now.In(time.Local).Date()
			return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, time.Local), nil
		}
	}
	return time.Time{}, usagef("--%s %q: not a time: give RFC 3339 (2026-12-07T10:42:00Z, 2026-12-07T11:42:00+01:00) or HH:MM[:SS] today in the local zone", name, s)
}
