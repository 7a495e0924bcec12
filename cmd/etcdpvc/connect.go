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
	g      *globalOptions
	reader store.Reader
	// bolt is the --db file (nil without --db), for dump alone: every
	// other command reaches the store through reader and the optional
	// interfaces (store.Archive, store.Cluster).
	bolt *store.Bolt
	// wal is the --wal log (nil without --wal), also the reader.
	wal      *store.WAL
	enc      *encryption.Config
	planner  surgery.Planner
	resolver resource.Resolver
	// description names the store for messages and backups.
	description string
	// routes are the --etcd-servers-overrides in use (live etcd only).
	routes []sessionRoute
}

// sessionRoute is one resource kept in another etcd.
type sessionRoute struct {
	override kubeadm.Override
	// prefix is the resource's key prefix.
	prefix string
	etcd   *store.Etcd
}

// target names where a write of key goes: "etcd URL,..." (the etcd of
// its --etcd-servers-overrides entry, if any) or "file OUT". It is the one
// description of a session's target, for prompts and reports.
func (s *session) target(key string) string {
	if s.isFile() {
		return "file " + s.description
	}
	for _, r := range s.routes {
		if strings.HasPrefix(key, r.prefix) {
			return "etcd " + strings.Join(r.etcd.Endpoints(), ",")
		}
	}
	return "etcd " + s.description
}

// describeWrite names the objects at keys and their targets, for the
// confirmation question: "persistentvolumeclaim data-0 in namespace demo,
// etcd https://10.0.0.2:2379".
func (s *session) describeWrite(keys []string) string {
	var parts []string
	for i, k := range keys {
		p := objectName(s.g.Prefix, k)
		if i == len(keys)-1 || s.target(k) != s.target(keys[i+1]) {
			p += ", " + s.target(k)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " and ")
}

// objectName names the object at key as kubectl would: "persistentvolumeclaim
// data-0 in namespace demo"; the key itself when it is not an object key.
func objectName(prefix, key string) string {
	r, ns, name, ok := resource.ParseKey(prefix, key)
	if !ok {
		return key
	}
	kind := r.Singular
	if kind == "" {
		kind = r.String()
	} else if r.Group != "" {
		kind += "." + r.Group
	}
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + name + " in namespace " + ns
}

// isFile reports whether the session reads a db or snapshot file (an
// archive of revisions) rather than a live etcd.
func (s *session) isFile() bool {
	_, ok := s.reader.(store.Archive)
	return ok
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
// connection setting not given as a flag: the manifest wins over the
// ETCDCTL_* variables, and flags win over both. It records in
// g.kubeadmWarnings one warning for each variable the manifest disagrees
// with, naming both values.
func applyKubeadm(g *globalOptions) error {
	if !g.Kubeadm || g.kubeadmApplied {
		return nil
	}
	g.kubeadmApplied = true
	a, err := kubeadm.Read(g.ManifestsDir)
	if err != nil {
		return withHint(fmt.Errorf("--kubeadm: %w", err), "run on a control-plane node, point --manifests-dir at the static pod manifests, or give --endpoints and certificates")
	}
	var warnings []string
	take := func(name, manifestFlag, value string, dst *string) {
		if g.explicit[name] && !g.fromEnvOnly(name) {
			return
		}
		v, ok := g.fromEnv[name]
		if name == "endpoints" {
			v = strings.Join(splitList([]string{v}), ",") // "a, b" is "a,b"
		}
		if ok && v != value {
			env := ""
			for _, gf := range globalFlags {
				if gf.name == name {
					env = gf.env
				}
			}
			shown := value
			if shown == "" {
				shown = `""`
			}
			warnings = append(warnings, fmt.Sprintf("--kubeadm: using the manifest's %s=%s, not $%s=%s (the flag --%s wins over both)", manifestFlag, shown, env, v, name))
		}
		*dst = value
	}
	endpoints := strings.Join(g.Endpoints, ",")
	take("endpoints", "--etcd-servers", strings.Join(a.Endpoints, ","), &endpoints)
	g.Endpoints = splitList([]string{endpoints})
	take("cacert", "--etcd-cafile", a.CAFile, &g.CACert)
	take("cert", "--etcd-certfile", a.CertFile, &g.Cert)
	take("key", "--etcd-keyfile", a.KeyFile, &g.Key)
	if !g.explicit["prefix"] {
		g.Prefix = a.Prefix
	}
	if !g.explicit["encryption-config"] {
		g.EncryptionConfig = a.EncryptionConfig
	}
	if !g.explicit["etcd-servers-overrides"] {
		g.ServersOverrides = a.ServersOverrides
	}
	g.kubeadmWarnings = warnings
	return nil
}

// fromEnvOnly reports whether flag name was set by its ETCDCTL_* variable
// and not on the command line.
func (g *globalOptions) fromEnvOnly(name string) bool {
	_, ok := g.fromEnv[name]
	return ok
}

// newSession applies --kubeadm and loads the encryption config: the part
// of a session that does not depend on the store.
func newSession(e *env, g *globalOptions) (*session, error) {
	if err := applyKubeadm(g); err != nil {
		return nil, err
	}
	for _, w := range g.kubeadmWarnings {
		fmt.Fprintf(e.stderr, "etcdpvc: warning: %s\n", w)
	}
	enc, err := loadEncryption(e, g)
	if err != nil {
		return nil, err
	}
	return &session{g: g, enc: enc, planner: surgery.Planner{Enc: enc, Prefix: g.Prefix}}, nil
}

// boltOptions are the options a --db file is opened with.
func boltOptions(e *env, g *globalOptions) store.BoltOptions {
	lockTimeout := g.LockTimeout
	if lockTimeout == 0 {
		lockTimeout = -1 // --lock-timeout 0: do not wait
	}
	return store.BoltOptions{
		LockTimeout:   lockTimeout,
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
	if g.WAL != "" {
		if err := s.openWAL(e, g); err != nil {
			s.Close()
			return nil, err
		}
	} else if g.DB != "" {
		b, err := store.OpenBolt(g.DB, boltOptions(e, g))
		if err != nil {
			s.Close()
			return nil, boltError(err)
		}
		s.reader, s.bolt, s.description = b, b, g.DB
		if len(g.ServersOverrides) > 0 {
			fmt.Fprintf(e.stderr, "etcdpvc: warning: --db: the resources of --etcd-servers-overrides %s live in other etcds; %s holds at most stale copies of them\n", overridesString(g.ServersOverrides), g.DB)
		}
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
		s.reader, s.description = et, strings.Join(g.Endpoints, ",")
		if err := s.openRoutes(e, cfg); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.resolver = resource.Resolver{Scope: s.crdScope(e)}
	return s, nil
}

// openRoutes opens the etcd of each --etcd-servers-overrides entry, with
// the main etcd's certificates (as the kube-apiserver does), and routes
// the session's reads and writes of those resources to them.
func (s *session) openRoutes(e *env, cfg store.EtcdConfig) error {
	if len(s.g.ServersOverrides) == 0 {
		return nil
	}
	var routes []store.Route
	fail := func(err error) error {
		for _, r := range s.routes {
			r.etcd.Close()
		}
		s.routes = nil
		return err
	}
	for _, o := range s.g.ServersOverrides {
		name := o.Resource
		if o.Group != "" {
			name += "." + o.Group
		}
		r, err := resource.Lookup(name)
		if err != nil {
			return fail(usagef("--etcd-servers-overrides %s: %v", o, err))
		}
		c := cfg
		c.Endpoints = o.Servers
		et, err := store.OpenEtcd(e.ctx, c)
		if err != nil {
			return fail(connectHint(fmt.Errorf("--etcd-servers-overrides %s: %w", o, err), s.g))
		}
		// Closed by the routed store, or here if it cannot be built.
		sr := sessionRoute{override: o, prefix: r.ListPrefix(s.g.Prefix, ""), etcd: et}
		s.routes = append(s.routes, sr)
		routes = append(routes, store.Route{Prefix: sr.prefix, Store: et})
	}
	rs, err := store.NewRouted(s.reader, routes)
	if err != nil {
		return fail(usagef("--etcd-servers-overrides: %v", err))
	}
	s.reader = rs
	return nil
}

// overridesString renders overrides in the flag's syntax.
func overridesString(os []kubeadm.Override) string {
	var parts []string
	for _, o := range os {
		parts = append(parts, o.String())
	}
	return strings.Join(parts, ",")
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
		cur, err := s.planner.Load(e.ctx, s.reader, key, kv.ModRevision)
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
