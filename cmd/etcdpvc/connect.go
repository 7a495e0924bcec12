package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/kubeadm"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// session is an open store with the codec and names that go with it.
type session struct {
	g        *globalOptions
	reader   store.Reader
	etcd     *store.Etcd // nil with --db
	bolt     *store.Bolt // nil without --db
	enc      *encryption.Config
	codec    surgery.Codec
	resolver resource.Resolver
	// description names the store for messages and backups.
	description string
}

func (s *session) Close() {
	if s.reader != nil {
		s.reader.Close()
	}
	if s.enc != nil {
		s.enc.Close()
	}
}

// applyKubeadm fills in, from the kube-apiserver manifest, every
// connection setting the user did not give.
func applyKubeadm(g *globalOptions) error {
	if !g.Kubeadm || g.kubeadmApplied {
		return nil
	}
	g.kubeadmApplied = true
	a, err := kubeadm.Read(g.ManifestsDir)
	if err != nil {
		return withHint(fmt.Errorf("--kubeadm: %w", err), "run on a control-plane node, point --manifests-dir at the static pod manifests, or give --endpoints and certificates")
	}
	if !g.explicit["endpoints"] {
		g.Endpoints = a.Endpoints
	}
	if !g.explicit["cacert"] {
		g.CACert = a.CAFile
	}
	if !g.explicit["cert"] {
		g.Cert = a.CertFile
	}
	if !g.explicit["key"] {
		g.Key = a.KeyFile
	}
	if !g.explicit["prefix"] {
		g.Prefix = a.Prefix
	}
	if !g.explicit["encryption-config"] {
		g.EncryptionConfig = a.EncryptionConfig
	}
	return nil
}

// newSession applies --kubeadm and loads the encryption config: the part
// of a session that does not depend on the store.
func newSession(e *env, g *globalOptions) (*session, error) {
	if err := applyKubeadm(g); err != nil {
		return nil, err
	}
	enc, err := loadEncryption(e, g)
	if err != nil {
		return nil, err
	}
	return &session{g: g, enc: enc, codec: surgery.Codec{Enc: enc, Prefix: g.Prefix}}, nil
}

// boltOptions are the options a --db file is opened with.
func boltOptions(e *env, g *globalOptions) store.BoltOptions {
	return store.BoltOptions{
		LockTimeout:   g.LockTimeout,
		SkipHashCheck: g.SkipHashCheck,
		Warn:          func(msg string) { fmt.Fprintf(e.stderr, "etcdpvc: warning: %s\n", msg) },
		HashCacheDir:  e.hashCacheDir(),
	}
}

// openSession opens the store the global flags name: a db or snapshot file
// with --db, else the live etcd.
func openSession(e *env, g *globalOptions) (*session, error) {
	s, err := newSession(e, g)
	if err != nil {
		return nil, err
	}
	if g.DB != "" {
		b, err := store.OpenBolt(g.DB, boltOptions(e, g))
		if err != nil {
			s.Close()
			return nil, boltError(err)
		}
		s.reader, s.bolt, s.description = b, b, g.DB
	} else {
		cfg := store.EtcdConfig{
			Endpoints: g.Endpoints, CACert: g.CACert, Cert: g.Cert, Key: g.Key,
			User: g.User, Password: g.Password, InsecureSkipTLSVerify: g.InsecureSkipTLSVerify,
			DialTimeout: g.DialTimeout, CommandTimeout: g.CommandTimeout, Consistency: g.Consistency,
		}
		et, err := store.OpenEtcd(e.ctx, cfg)
		if err != nil {
			s.Close()
			return nil, connectHint(err, g)
		}
		s.reader, s.etcd, s.description = et, et, strings.Join(g.Endpoints, ",")
	}
	s.resolver = resource.Resolver{Scope: s.crdScope(e)}
	return s, nil
}

// crdScope finds a custom resource's scope from its stored CRD.
func (s *session) crdScope(e *env) resource.ScopeFunc {
	return func(plural, group string) (bool, error) {
		key := s.g.Prefix + "/apiextensions.k8s.io/customresourcedefinitions/" + plural + "." + group
		kv, err := s.reader.Get(e.ctx, key, 0)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return false, fmt.Errorf("no CustomResourceDefinition %s.%s in etcd (%w)", plural, group, store.ErrNotFound)
			}
			return false, err
		}
		cur, err := s.codec.Load(e.ctx, s.reader, key, kv.ModRevision)
		if err != nil {
			return false, err
		}
		return resource.ScopeFromCRD(cur.Plain)
	}
}

func connectHint(err error, g *globalOptions) error {
	var ce *store.ConnectError
	if !errors.As(err, &ce) {
		return err
	}
	hint := "is this the etcd client port (2379)? on a control-plane node try --kubeadm"
	msg := err.Error()
	switch {
	case strings.Contains(msg, "certificate") || strings.Contains(msg, "tls"):
		if g.CACert == "" || g.Cert == "" {
			hint = "etcd wants TLS client certificates: give --cacert, --cert and --key (kubeadm: /etc/kubernetes/pki/etcd/ca.crt, /etc/kubernetes/pki/apiserver-etcd-client.crt and .key), or use --kubeadm"
		} else {
			hint = "check that --cacert signed etcd's certificate and that --cert/--key are an etcd client pair; or use --kubeadm"
		}
	case strings.Contains(msg, "refused"):
		hint = "nothing listens there: check --endpoints (etcd's client port is usually 2379), or use --kubeadm"
	}
	return withHint(err, hint)
}

func boltError(err error) error {
	switch {
	case errors.Is(err, store.ErrLocked):
		return withHint(fmt.Errorf("%w: %w", store.ErrUnavailable, err), "run `etcdctl snapshot save copy.db` against the running member, or read it live with --endpoints")
	case errors.Is(err, store.ErrHashMismatch):
		return withHint(err, "the snapshot is damaged or was edited; --skip-hash-check reads it anyway")
	case errors.Is(err, fs.ErrNotExist):
		return withHint(err, "check the path: --db takes a member's db (member/snap/db under etcd's --data-dir) or an `etcdctl snapshot save` file")
	case errors.Is(err, fs.ErrPermission):
		return withHint(err, "this user cannot read the file: run as root, or read a copy")
	case errors.Is(err, store.ErrCorrupt):
		return withHint(err, "--db takes a member's db (member/snap/db) or an `etcdctl snapshot save` file; a damaged one cannot be read")
	}
	return err
}

// ref resolves a command's object arguments.
func (s *session) ref(args []string, namespace, key string) (resource.Ref, error) {
	r, err := s.resolver.ParseArgs(s.g.Prefix, args, namespace, key)
	if err != nil {
		if errors.Is(err, resource.ErrUnknownResource) || errors.Is(err, resource.ErrNotStored) {
			return r, &usageError{msg: err.Error()}
		}
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUnavailable) {
			return r, err
		}
		return r, &usageError{msg: err.Error()}
	}
	return r, nil
}

// hashCacheDir is where verified snapshot hashes are remembered:
// $XDG_CACHE_HOME/etcdpvc/verified, or ~/.cache/etcdpvc/verified; "" (no
// cache) when neither is known.
func (e *env) hashCacheDir() string {
	if d := e.getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "etcdpvc", "verified")
	}
	if h := e.getenv("HOME"); h != "" && filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "etcdpvc", "verified")
	}
	return ""
}
