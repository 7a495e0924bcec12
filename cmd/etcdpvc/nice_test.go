package main

import (
	"testing"

	"github.com/etcdpvc/etcdpvc/session"
)

// TestNiceWanted: --nice is on by default for the reads of etcd's files
// and on a node, off for a live etcd named by its endpoints, and --nice
// wins either way.
func TestNiceWanted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		flags       map[string]string
		memberFiles bool
		want        bool
	}{
		{"live endpoints", map[string]string{"endpoints": "https://10.0.0.1:2379"}, false, false},
		{"nothing given", map[string]string{}, false, false},
		{"--node", map[string]string{"node": ""}, false, true},
		{"--node ROOT", map[string]string{"node": "/host"}, false, true},
		{"--kubeadm", map[string]string{"kubeadm": "true"}, false, true},
		{"--db", map[string]string{"db": "snap.db"}, false, true},
		{"--wal", map[string]string{"wal": "/var/lib/etcd"}, false, true},
		{"--wal --wal-base", map[string]string{"wal": "/var/lib/etcd", "wal-base": "old.db"}, false, true},
		{"diff --members FILES", map[string]string{}, true, true},
		{"--db --nice=false", map[string]string{"db": "snap.db", "nice": "false"}, false, false},
		{"--node --nice=false", map[string]string{"node": "", "nice": "false"}, false, false},
		{"endpoints --nice", map[string]string{"endpoints": "https://10.0.0.1:2379", "nice": "true"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := session.Resolve(tc.flags, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			if got := niceWanted(tc.flags, &o, tc.memberFiles); got != tc.want {
				t.Errorf("niceWanted = %v, want %v", got, tc.want)
			}
		})
	}
}
