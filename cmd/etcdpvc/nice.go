package main

import (
	"errors"

	"github.com/etcdpvc/etcdpvc/internal/nice"
	"github.com/etcdpvc/etcdpvc/session"
)

// niceFlag is the global --nice: lower the tool's CPU and I/O priority
// (internal/nice), by default when the tool reads etcd's files on this
// machine or is told it runs on a control-plane node (niceByDefault).
var niceFlag = globalFlag{name: "nice", kind: session.KindBool,
	usage: "run at the lowest CPU priority (nice 19) and I/O priority (best-effort 7), leaving etcd the CPU and the disk: " +
		"on by default with --node, --kubeadm, --db, --wal, --wal-base and diff --members FILES; --nice=false: at the priority started with (docs/node.md)",
	def: "true with files or a node"}

// lowerPriority lowers the process's priority: nice.Lower, set by main.
// When tests run the CLI in their own process it does nothing.
var lowerPriority = func() error { return nil }

// niceByDefault reports whether a command lowers its priority when
// --nice is not given: when it reads etcd's files on this machine (--db,
// --wal, --wal-base, or memberFiles: the members' files of diff
// --members), or takes its settings from a control-plane node's files
// (--node, --kubeadm). A member's own db cannot be read while its etcd
// runs (etcd holds its lock), and whether an etcd runs beside a copy
// cannot be told reliably (a container does not see the node's
// processes; k3s runs etcd inside its own process): reading etcd's files
// is taken to be reading beside etcd.
func niceByDefault(g *session.Options, memberFiles bool) bool {
	return g.Node || g.Kubeadm || g.DB != "" || len(g.WAL) > 0 || g.WALBase != "" || memberFiles
}

// niceWanted reports whether a command lowers its priority: as --nice
// says when given (flagsGiven's value; given is then true), else
// niceByDefault.
func niceWanted(flags map[string]string, g *session.Options, memberFiles bool) (want, given bool) {
	if v, ok := flags[niceFlag.name]; ok {
		return v == "true", true
	}
	return niceByDefault(g, memberFiles), false
}

// lowerPriorityIf lowers the priority when want is true. A failure is a
// warning, and the command runs on at the priority it had; on a system
// where lowering is not supported, only when --nice was given.
func (e *env) lowerPriorityIf(want, given bool) {
	if !want {
		return
	}
	err := lowerPriority()
	switch {
	case err == nil, errors.Is(err, nice.ErrUnsupported) && !given:
	case errors.Is(err, nice.ErrUnsupported):
		e.warn("--nice: " + err.Error())
	default:
		e.warn("--nice: " + err.Error() + "; some threads may run at the priority they started with")
	}
}
