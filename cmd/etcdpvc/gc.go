package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is the garbage collector's GOGC when the environment sets
// none. A whole-file read (ls, stats, report, dump) decodes every value
// into objects it drops at once: at Go's default of 100 the collector
// took a fifth of such a read's CPU. At 200 it runs half as often, and
// the heap may grow to three times what is live instead of twice: the
// memory held stays bounded by the same per-key indexes and the largest
// value, by a larger constant.
const gcPercent = 200

// tuneGC sets gcPercent unless GOGC is set, which then decides.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
