// Package version reads the version of the running binary and of the
// modules it was built with from its build information.
package version

import (
	"runtime/debug"
	"time"
)

// Tool is the version a binary reports: stamped when not empty (a
// -ldflags -X build); else the module version from the build info (a
// tagged `go install`); else a pseudo-version made from the VCS revision
// the go command recorded; else "(devel)".
func Tool(stamped string) string {
	if stamped != "" {
		return stamped
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo derives the version from build information: the main
// module's version, else v0.0.0-TIME-REVISION (-dirty for a modified
// tree), else "(devel)".
func FromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, when string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) < 12 {
		return "(devel)"
	}
	v := "v0.0.0-" + rev[:12]
	if t, err := time.Parse(time.RFC3339, when); err == nil {
		v = "v0.0.0-" + t.UTC().Format("20060102150405") + "-" + rev[:12]
	}
	if dirty {
		v += "-dirty"
	}
	return v
}

// Dep returns the version of a module the binary was built with (its
// replacement's, when replaced), or "unknown".
func Dep(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return DepIn(bi, path)
}

// DepIn returns the version of module path in bi, or "unknown".
func DepIn(bi *debug.BuildInfo, path string) string {
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}
