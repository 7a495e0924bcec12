package main

import (
	"fmt"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// toolVersion is the module version from the build info ("(devel)" for a
// source build).
func toolVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
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
		name:     "version",
		usage:    "print the versions etcdpvc was built with",
		desc:     "version prints etcdpvc's version and the k8s.io/api, apimachinery, apiserver and etcd client versions it was built with.",
		examples: `etcdpvc version`,
		action: func(c *cli.Context, e *env) error {
			fmt.Fprintf(e.stdout, "etcdpvc %s\n", toolVersion())
			for _, m := range []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiserver", "go.etcd.io/etcd/client/v3", "go.etcd.io/bbolt"} {
				fmt.Fprintf(e.stdout, "%s %s\n", m, depVersion(m))
			}
			return nil
		},
	}
}
