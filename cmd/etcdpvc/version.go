package main

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"
)

// buildVersion is stamped by `make build` and `make release` (-ldflags -X)
// with the git tag or pseudo-version of the commit built (tools/version.sh).
// It is not a flag and nothing changes it at run time.
var buildVersion string

// toolVersion is the version etcdpvc reports and records in backups: the
// stamped build version; else the module version from the build info (a
// tagged `go install`); else a pseudo-version made from the VCS revision
// the go command recorded; else "(devel)".
func toolVersion() string {
	if buildVersion != "" {
		return buildVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	return versionFromBuildInfo(bi)
}

// versionFromBuildInfo derives the version from build information.
func versionFromBuildInfo(bi *debug.BuildInfo) string {
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

// depVersion returns the version of a module the binary was built with.
func depVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
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

func versionCommand() command {
	return command{
		name:      "version",
		usage:     "print the versions etcdpvc was built with",
		desc:      "version prints etcdpvc's version and the k8s.io/api, apimachinery, apiserver and etcd client versions it was built with.",
		examples:  `etcdpvc version`,
		noGlobals: true,
		action: func(c *cli.Context, e *env, in *input) error {
			fmt.Fprintf(e.stdout, "etcdpvc %s\n", toolVersion())
			for _, m := range []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiserver", "go.etcd.io/etcd/client/v3", "go.etcd.io/bbolt"} {
				fmt.Fprintf(e.stdout, "%s %s\n", m, depVersion(m))
			}
			return nil
		},
	}
}
