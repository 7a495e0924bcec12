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
		want, given bool
	}{
		{"live endpoints", map[string]string{"endpoints": "https://10.0.0.1:2379"}, false, false, false},
		{"nothing given", map[string]string{}, false, false, false},
		{"--node", map[string]string{"node": ""}, false, true, false},
		{"--node ROOT", map[string]string{"node": "/host"}, false, true, false},
		{"--kubeadm", map[string]string{"kubeadm": "true"}, false, true, false},
		{"--db", map[string]string{"db": "snap.db"}, false, true, false},
		{"--wal", map[string]string{"wal": "/var/lib/etcd"}, false, true, false},
		{"--wal --wal-base", map[string]string{"wal": "/var/lib/etcd", "wal-base": "old.db"}, false, true, false},
		{"diff --members FILES", map[string]string{}, true, true, false},
		{"--db --nice=false", map[string]string{"db": "snap.db", "nice": "false"}, false, false, true},
		{"--node --nice=false", map[string]string{"node": "", "nice": "false"}, false, false, true},
		{"endpoints --nice", map[string]string{"endpoints": "https://10.0.0.1:2379", "nice": "true"}, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := session.Resolve(tc.flags, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			if want, given := niceWanted(tc.flags, &o, tc.memberFiles); want != tc.want || given != tc.given {
				t.Errorf("niceWanted = %v, %v; want %v, %v", want, given, tc.want, tc.given)
			}
		})
	}
}
