package version

import (
	"runtime/debug"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	rev := "7455f13dadd4c0ffee0000000000000000000000"
	for _, tc := range []struct {
		name     string
		main     string
		settings map[string]string
		want     string
	}{
		{"tagged module", "v1.2.3", nil, "v1.2.3"},
		{"pseudo-version from the go command", "v0.0.0-20261130193137-7455f13dadd4", nil, "v0.0.0-20261130193137-7455f13dadd4"},
		{"vcs revision and time", "(devel)", map[string]string{"vcs.revision": rev, "vcs.time": "2026-11-30T19:31:37Z"}, "v0.0.0-20261130193137-7455f13dadd4"},
		{"modified tree", "", map[string]string{"vcs.revision": rev, "vcs.time": "2026-11-30T19:31:37Z", "vcs.modified": "true"}, "v0.0.0-20261130193137-7455f13dadd4-dirty"},
		{"revision without time", "(devel)", map[string]string{"vcs.revision": rev}, "v0.0.0-7455f13dadd4"},
		{"no vcs information", "(devel)", nil, "(devel)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/etcdpvc/etcdpvc", Version: tc.main}}
			for k, v := range tc.settings {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
			}
			if got := FromBuildInfo(bi); got != tc.want {
				t.Errorf("FromBuildInfo = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDepIn(t *testing.T) {
	bi := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "k8s.io/api", Version: "v0.37.2"},
		{Path: "go.etcd.io/bbolt", Version: "v1.5.0", Replace: &debug.Module{Path: "../bbolt", Version: "v1.5.1-fork"}},
	}}
	for path, want := range map[string]string{"k8s.io/api": "v0.37.2", "go.etcd.io/bbolt": "v1.5.1-fork", "example.com/none": "unknown"} {
		if got := DepIn(bi, path); got != want {
			t.Errorf("DepIn(%q) = %q, want %q", path, got, want)
		}
	}
	if got := Tool("v9.9.9"); got != "v9.9.9" {
		t.Errorf("Tool(stamped) = %q", got)
	}
}
