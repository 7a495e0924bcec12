package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/internal/version"
)

// buildVersion is stamped by `make build` and `make release` (-ldflags -X)
// with the git tag or pseudo-version of the commit built (tools/version.sh).
// It is not a flag and nothing changes it at run time.
var buildVersion string

// toolVersion is the version etcdpvc reports and records in backups: the
// stamped build version, else the one the build info gives (version.Tool).
func toolVersion() string { return version.Tool(buildVersion) }

func versionCommand() command {
	return command{
		name:      "version",
		usage:     "print the versions etcdpvc was built with",
		desc:      "version prints etcdpvc's version and the k8s.io/api, apimachinery, apiserver and etcd client versions it was built with\n(etcdpvc --version prints the same).",
		examples:  "etcdpvc version\netcdpvc --version",
		noGlobals: true,
		action: func(c *cli.Context, e *env, in *input) error {
			fmt.Fprintf(e.stdout, "etcdpvc %s\n", toolVersion())
			for _, m := range []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiserver", "go.etcd.io/etcd/client/v3", "go.etcd.io/bbolt"} {
				fmt.Fprintf(e.stdout, "%s %s\n", m, version.Dep(m))
			}
			return nil
		},
	}
}
