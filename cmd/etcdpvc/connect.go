package main

import (
	"errors"
	"fmt"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/node"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
)

// cliSession is an open store with the codec and names that go with it: a
// flows.Session and the global options it was opened with.
type cliSession struct {
	*flows.Session
	g *globalOptions
}

// connectOptions are the options to open the store with: the global
// options, and with e its warnings and hash cache.
func (g *globalOptions) connectOptions(e *env) session.Options {
	o := g.Options
	if e != nil {
		o.HashCacheDir = session.HashCacheDir(e.getenv)
		o.Warn = e.warn
	}
	return o
}

// applyKubeadm fills in, from the kube-apiserver manifest, every
// connection setting not given as a flag (session.Kubeadm), and records
// its warnings in g.kubeadmWarnings.
func applyKubeadm(g *globalOptions) error {
	if !g.TakesLayout() || g.KubeadmApplied {
		return nil
	}
	warnings, err := session.Kubeadm(&g.Options)
	g.KubeadmApplied = true // once, even when the manifest cannot be read
	if errors.Is(err, node.ErrNotReadable) {
		return flows.WithHint(err, "run etcdpvc as root: sudo on the node; in kubectl debug node/NAME, --custom with securityContext runAsUser: 0 (the image runs as uid 65532; see docs/node.md); or give --cacert, --cert and --key copies you can read")
	}
	if err != nil && g.Node {
		return flows.WithHint(err, "run on a control-plane node (or in kubectl debug node/NAME, whose --node finds the node below /host), or give --endpoints and certificates")
	}
	if err != nil {
		return flows.WithHint(err, "run on a control-plane node, point --manifests-dir at the static pod manifests, or give --endpoints and certificates")
	}
	g.kubeadmWarnings = warnings
	return nil
}

// openSession opens the store the global flags name: a db or snapshot file
// with --db, else the live etcd.
func openSession(e *env, g *globalOptions) (*cliSession, error) {
	return openStore(e, g, "")
}

// openStore applies --kubeadm (printing its warnings) and opens the store
// the global flags name; with out, a snapshot copy of the --db file.
func openStore(e *env, g *globalOptions, out string) (*cliSession, error) {
	if err := applyKubeadm(g); err != nil {
		return nil, err
	}
	for _, w := range g.kubeadmWarnings {
		e.warn(w)
	}
	o := g.connectOptions(e)
	o.Out = out
	cs, err := flows.Open(e.ctx, o)
	if err != nil {
		var oe *session.OptionError
		switch {
		case errors.As(err, &oe):
			return nil, &usageError{Msg: err.Error()}
		case session.Refused(err):
			return nil, &flows.RefusedError{Msg: err.Error(), Advice: flows.Hint(err)}
		}
		return nil, err
	}
	s := &cliSession{Session: cs, g: g}
	e.salvaged = cs.Salvaged
	for _, l := range cs.WALLines(e.ctx) {
		fmt.Fprintf(e.stderr, "etcdpvc: %s\n", l)
	}
	return s, nil
}

// readObject opens the store the global flags name, resolves the object
// in's arguments name and runs read on them.
func readObject(e *env, in *input, read func(*cliSession, resource.Ref) error) error {
	s, err := openSession(e, in.g)
	if err != nil {
		return err
	}
	defer s.Close()
	ref, err := s.ref(in.obj, in.namespace, in.key)
	if err != nil {
		return err
	}
	return read(s, ref)
}

// writeObject is readObject for a write command: the store opened for a
// write with o (openWriteSession), the object that obj, namespace and key
// name resolved, and write run on them.
func writeObject(e *env, g *globalOptions, o writeOptions, obj []string, namespace, key string, write func(*cliSession, resource.Ref) error) error {
	s, err := openWriteSession(e, g, o)
	if err != nil {
		return err
	}
	defer s.Close()
	ref, err := s.ref(obj, namespace, key)
	if err != nil {
		return err
	}
	return write(s, ref)
}

// ref resolves a command's object arguments.
func (s *cliSession) ref(args []string, namespace, key string) (resource.Ref, error) {
	r, err := s.Resolver.ParseArgs(s.g.Prefix, args, namespace, key)
	if err != nil {
		if errors.Is(err, resource.ErrUnknownResource) || errors.Is(err, resource.ErrNotStored) {
			return r, &usageError{Msg: err.Error()}
		}
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUnavailable) {
			return r, err
		}
		return r, &usageError{Msg: err.Error()}
	}
	return r, nil
}
