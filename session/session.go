// Package session opens the store a command's options name, with the codec
// and names that go with it: a live etcd (TLS, auth, and the etcds of the
// kube-apiserver's --etcd-servers-overrides), an etcd db or snapshot file,
// or a snapshot copy being edited; the encryption config; and the resolver
// of kubectl names, which finds custom resources' scope in their stored
// CustomResourceDefinitions. Kubeadm applies a control-plane node's
// kube-apiserver manifest to the options first, with its rules of
// precedence: flags win over the manifest, the manifest wins over the
// ETCDCTL_* variables.
package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/kubeadm"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/node"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/salvage"
	"github.com/etcdpvc/etcdpvc/store/wal"
	"github.com/etcdpvc/etcdpvc/store/walfile"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

// Setting names, as the command-line flags name them: the keys of
// Options.Given and Options.FromEnv.
const (
	SettingEndpoints        = "endpoints"
	SettingCACert           = "cacert"
	SettingCert             = "cert"
	SettingKey              = "key"
	SettingUser             = "user"
	SettingPassword         = "password"
	SettingInsecure         = "insecure-skip-tls-verify"
	SettingPrefix           = "prefix"
	SettingEncryptionConfig = "encryption-config"
	SettingServersOverrides = "etcd-servers-overrides"
	SettingKubeadm          = "kubeadm"
	SettingNode             = "node"
	SettingDB               = "db"
	SettingWAL              = "wal"
	SettingWALBase          = "wal-base"
	SettingKubeconfig       = "kubeconfig"
)

// EnvValue is a setting given only by an environment variable.
type EnvValue struct {
	// Var is the variable's name ("ETCDCTL_ENDPOINTS"), Value its value.
	Var, Value string
}

// Options name the store to open and how.
type Options struct {
	// Endpoints, CACert, Cert, Key, User, Password, InsecureSkipTLSVerify,
	// DialTimeout, CommandTimeout and Consistency reach a live etcd (see
	// store.EtcdConfig).
	Endpoints                   []string
	CACert, Cert, Key           string
	User, Password              string
	InsecureSkipTLSVerify       bool
	DialTimeout, CommandTimeout time.Duration
	Consistency                 string
	// Prefix is the kube-apiserver's --etcd-prefix.
	Prefix string
	// ServersOverrides are the kube-apiserver's --etcd-servers-overrides:
	// resources read and written in other etcds.
	ServersOverrides []kubeadm.Override

	// Kubeadm takes every setting not in Given from the kube-apiserver
	// manifest in ManifestsDir (see Kubeadm). KubeadmApplied records that
	// it was done.
	Kubeadm        bool
	ManifestsDir   string
	KubeadmApplied bool
	// Node takes every setting not in Given from the control-plane node
	// layout below NodeRoot ("": "/", else "/host"; see node.Detect), as
	// Kubeadm does from its manifest; NodeFound is what was found once
	// applied.
	Node      bool
	NodeRoot  string
	NodeFound *node.Found

	// DB is an etcd db or snapshot file to read instead of a live etcd.
	// With Out, the session writes into a copy of DB at Out
	// (store.SnapshotCopy), never into DB.
	DB, Out string
	// WAL are write-ahead log directories (or data directories) to read
	// instead of a live etcd, one per member of one cluster: several are
	// merged into one log by raft index (walfile.OpenMerged). The log is
	// replayed over DB when DB is given (wal.OpenLogChecked). Read-only, as
	// DB.
	WAL []string
	// WALBase is an older db or snapshot of the log's cluster, whose
	// consistent index lies inside the log: the log is replayed over it
	// instead of over DB, and DB, when given, checks the replay
	// (wal.OpenLogChecked). Only with WAL.
	WALBase string
	// LockTimeout, SkipHashCheck and HashCacheDir open DB (see
	// store.BoltOptions); LockTimeout 0 does not wait for the lock.
	LockTimeout   time.Duration
	SkipHashCheck bool
	HashCacheDir  string
	// Salvage reads DB page by page, as `salvage` does, when bbolt refuses
	// it: what survives, written to a temporary snapshot that the session
	// reads (Session.Salvaged).
	Salvage bool

	// EncryptionConfig is the kube-apiserver's EncryptionConfiguration
	// file ("": none).
	EncryptionConfig string

	// Kubeconfig is the kubeconfig of the apiserver to verify writes with
	// (see FindKubeconfig), Verify when to verify them.
	Kubeconfig string
	Verify     verify.Mode

	// Given names the settings the user gave, as a flag or a variable.
	Given map[string]bool
	// FromEnv holds, of the Given settings, those given only by their
	// environment variable: the manifest wins over them.
	FromEnv map[string]EnvValue

	// Warn receives warnings (one line each, without a prefix); nil
	// drops them.
	Warn func(string)
}

func (o *Options) warn(format string, args ...any) {
	if o.Warn != nil {
		o.Warn(fmt.Sprintf(format, args...))
	}
}

// ByFlag reports whether setting name was given on the command line, not
// only by its environment variable.
func (o *Options) ByFlag(name string) bool {
	return o.Given[name] && !o.FromEnvOnly(name)
}

// OptionError is a setting that cannot be used as given: a usage error.
type OptionError struct {
	// Option names it as the flag does ("--etcd-servers-overrides /foo#x");
	// "" when Err names it.
	Option string
	Err    error
}

func (e *OptionError) Error() string {
	if e.Option == "" {
		return e.Err.Error()
	}
	return e.Option + ": " + e.Err.Error()
}
func (e *OptionError) Unwrap() error { return e.Err }

// StoreKind says which store Open failed to open.
type StoreKind int

const (
	// StoreEtcd is a live etcd (or an etcd of --etcd-servers-overrides).
	StoreEtcd StoreKind = iota
	// StoreDB is a --db file.
	StoreDB
	// StoreSnapshotCopy is the --out copy of a --db file.
	StoreSnapshotCopy
	// StoreWAL is a --wal write-ahead log.
	StoreWAL
)

// OpenError is a store that cannot be opened; Err is store's error, with
// the context that names the files (see Hint for what to do about it).
type OpenError struct {
	Kind StoreKind
	Err  error
	hint string
}

func (e *OpenError) Error() string { return e.Err.Error() }
func (e *OpenError) Unwrap() error { return e.Err }

// Hint is what to do about a store that cannot be opened ("": nothing
// more to say).
func (e *OpenError) Hint() string { return e.hint }

// TakesLayout reports whether o takes its settings from the node: --kubeadm
// or --node.
func (o *Options) TakesLayout() bool { return o.Kubeadm || o.Node }

// Kubeadm applies the kube-apiserver manifest in o.ManifestsDir to o when
// o.Kubeadm is set, or the node layout below o.NodeRoot when o.Node is set
// (once: it sets o.KubeadmApplied). Every connection
// setting not given as a flag is taken from the manifest: the manifest wins
// over the ETCDCTL_* variables, and flags win over both. It returns one
// warning for each variable the manifest disagrees with, naming both
// values, and one for each variable-only setting the kube-apiserver does
// not use (--user, --password, --insecure-skip-tls-verify: it connects
// with its client certificate only), which it drops.
func Kubeadm(o *Options) ([]string, error) {
	if !o.TakesLayout() || o.KubeadmApplied {
		return nil, nil
	}
	who, whose := "--kubeadm", "the manifest's"
	var a *kubeadm.APIServer
	if o.Node {
		f, err := node.Detect(o.NodeRoot)
		if err != nil {
			return nil, fmt.Errorf("--node: %w", err)
		}
		o.NodeFound, a = f, f.APIServer
		who, whose = "--node", "the "+string(f.Layout)+" node's"
	} else {
		var err error
		if a, err = kubeadm.Read(o.ManifestsDir); err != nil {
			return nil, fmt.Errorf("--kubeadm: %w", err)
		}
	}
	o.KubeadmApplied = true
	var warnings []string
	take := func(name, manifestFlag, value string, dst *string) {
		if o.ByFlag(name) {
			return
		}
		if ev, ok := o.FromEnv[name]; ok {
			v := ev.Value
			if name == SettingEndpoints {
				v = strings.Join(SplitList([]string{v}), ",") // "a, b" is "a,b"
			}
			if v != value {
				shown := value
				if shown == "" {
					shown = `""`
				}
				warnings = append(warnings, fmt.Sprintf("%s: using %s %s=%s, not $%s=%s (the flag --%s wins over both)", who, whose, manifestFlag, shown, ev.Var, v, name))
			}
		}
		*dst = value
	}
	endpoints := strings.Join(o.Endpoints, ",")
	take(SettingEndpoints, "--etcd-servers", strings.Join(a.Endpoints, ","), &endpoints)
	o.Endpoints = SplitList([]string{endpoints})
	take(SettingCACert, "--etcd-cafile", a.CAFile, &o.CACert)
	take(SettingCert, "--etcd-certfile", a.CertFile, &o.Cert)
	take(SettingKey, "--etcd-keyfile", a.KeyFile, &o.Key)
	// The apiserver has no etcd user, password or insecure mode: leftover
	// variables for them are not its connection.
	for _, name := range []string{SettingUser, SettingPassword, SettingInsecure} {
		ev, ok := o.FromEnv[name]
		if !ok {
			continue
		}
		switch name {
		case SettingUser:
			o.User = ""
			if !o.ByFlag(SettingPassword) {
				o.Password = "" // from $ETCDCTL_USER=user:password
			}
		case SettingPassword:
			o.Password = ""
		case SettingInsecure:
			o.InsecureSkipTLSVerify = false
		}
		warnings = append(warnings, fmt.Sprintf("%s: ignoring $%s: the kube-apiserver connects with its client certificate only (the flag --%s still applies)", who, ev.Var, name))
	}
	if !o.Given[SettingPrefix] {
		o.Prefix = a.Prefix
	}
	if !o.Given[SettingEncryptionConfig] {
		o.EncryptionConfig = a.EncryptionConfig
	}
	if !o.Given[SettingServersOverrides] {
		o.ServersOverrides = a.ServersOverrides
	}
	return warnings, nil
}

// walDescription names the write-ahead logs of dirs for messages.
func walDescription(dirs []string) string {
	if len(dirs) == 1 {
		return "write-ahead log " + dirs[0]
	}
	return "write-ahead logs " + strings.Join(dirs, ", ") + " (merged by raft index)"
}

// WALFlags spells dirs as the command line gives them: --wal A --wal B.
func WALFlags(dirs []string) string {
	parts := make([]string, len(dirs))
	for i, d := range dirs {
		parts[i] = "--wal " + d
	}
	return strings.Join(parts, " ")
}

// SplitList splits comma-separated values, dropping empty ones.
func SplitList(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// Session is an open store with the codec and names that go with it.
type Session struct {
	// Options are the options it was opened with, --kubeadm applied.
	Options Options
	// Reader is the store: every command reaches it through Reader and
	// the optional interfaces (store.Archive, store.Cluster).
	Reader store.Reader
	// Bolt is the DB file (nil without DB, and for a snapshot copy).
	Bolt *store.Bolt
	// WAL is the WAL log (nil without WAL); it is also Reader.
	WAL *wal.WAL
	// Enc is the encryption config (nil without one).
	Enc      *encryption.Config
	Planner  surgery.Planner
	Resolver resource.Resolver
	// Description names the store for messages and backups: the
	// endpoints, the DB file, or the Out file.
	Description string
	// Routes are the --etcd-servers-overrides in use (live etcd only).
	Routes []Route
	// Salvaged is, with Options.Salvage, the salvage's report: what the
	// session reads is what survives of the DB file.
	Salvaged *salvage.Report

	// cleanup removes what the session made (the salvage's temporary
	// snapshot).
	cleanup func()
}

// Route is one resource kept in another etcd.
type Route struct {
	Override kubeadm.Override
	// Prefix is the resource's key prefix.
	Prefix string
	Etcd   *store.Etcd
}

// LoadEncryption loads o's encryption config, or returns nil when it names
// none.
func LoadEncryption(ctx context.Context, o Options) (*encryption.Config, error) {
	if o.EncryptionConfig == "" {
		return nil, nil
	}
	// encryption.Load's errors say "load encryption config FILE: …".
	return encryption.Load(ctx, o.EncryptionConfig)
}

// BoltOptions are the options o's DB file is opened with; ctx ends its
// hash check.
func (o Options) BoltOptions(ctx context.Context) store.BoltOptions {
	lockTimeout := o.LockTimeout
	if lockTimeout == 0 {
		lockTimeout = -1 // --lock-timeout 0: do not wait
	}
	return store.BoltOptions{
		LockTimeout:   lockTimeout,
		SkipHashCheck: o.SkipHashCheck,
		Warn:          o.Warn,
		HashCacheDir:  o.HashCacheDir,
		Context:       ctx,
	}
}

// EtcdConfig is how o reaches its live etcd.
func (o Options) EtcdConfig() store.EtcdConfig {
	return store.EtcdConfig{
		Endpoints: o.Endpoints, CACert: o.CACert, Cert: o.Cert, Key: o.Key,
		User: o.User, Password: o.Password, InsecureSkipTLSVerify: o.InsecureSkipTLSVerify,
		DialTimeout: o.DialTimeout, CommandTimeout: o.CommandTimeout, Consistency: o.Consistency,
	}
}

// Open applies --kubeadm (its warnings go to o.Warn), loads the encryption
// config and opens the store o names: with DB a db or snapshot file (with
// Out, a snapshot copy of it written to Out), else the live etcd and the
// etcds of its ServersOverrides. Store errors are *OpenError, unusable
// settings *OptionError.
func Open(ctx context.Context, o Options) (*Session, error) {
	ws, err := Kubeadm(&o)
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		o.warn("%s", w)
	}
	if o.Out != "" && o.DB == "" {
		return nil, &OptionError{Option: "--out " + o.Out, Err: errors.New("it edits a copy of the --db file: give --db IN (to edit a live cluster, leave out --out)")}
	}
	enc, err := LoadEncryption(ctx, o)
	if err != nil {
		return nil, err
	}
	s := &Session{Enc: enc, Planner: surgery.Planner{Codec: kubevalue.Codec{Enc: enc, Prefix: o.Prefix}}}
	kine := o.DB != "" && (store.IsSQLite(o.DB) || store.IsKineURL(o.DB))
	switch {
	case kine && (len(o.WAL) > 0 || o.WALBase != "" || o.Salvage || o.Out != ""):
		s.Close()
		return nil, &OptionError{Option: "--db " + store.RedactKineURL(o.DB), Err: fmt.Errorf("%w: --wal, --wal-base, --salvage and --out read or copy an etcd db; %s", store.ErrKineDB, store.KineDBHint)}
	case kine:
		k, err := store.OpenKineDB(o.DB)
		if err != nil {
			s.Close()
			return nil, openError(StoreDB, err, o)
		}
		s.Reader, s.Description = k, k.Path()+" (kine)"
	case len(o.WAL) > 0 && o.Salvage:
		s.Close()
		return nil, &OptionError{Option: "--salvage", Err: errors.New("it reads a damaged --db file by itself: salvage it first (`etcdpvc --db FILE salvage --out NEW.db`), then give --db NEW.db with --wal")}
	case len(o.WAL) > 0 && o.Out != "":
		s.Close()
		return nil, &OptionError{Option: "--out " + o.Out, Err: errors.New("a write-ahead log is read-only: recover from it into a live etcd (--endpoints or --kubeadm), or into a copy of a db with --db IN --out OUT without --wal")}
	case o.WALBase != "" && len(o.WAL) == 0:
		s.Close()
		return nil, &OptionError{Option: "--wal-base " + o.WALBase, Err: errors.New("--wal-base is the db a write-ahead log is replayed over: give the log with --wal")}
	case len(o.WAL) > 0:
		// The db the log replays over, and the one that checks it.
		baseFile, checkFile := o.DB, ""
		if o.WALBase != "" {
			baseFile, checkFile = o.WALBase, o.DB
		}
		var base, check *store.Bolt
		closeDBs := func() {
			for _, b := range []*store.Bolt{base, check} {
				if b != nil {
					b.Close()
				}
			}
		}
		for _, f := range []struct {
			path string
			db   **store.Bolt
		}{{baseFile, &base}, {checkFile, &check}} {
			if f.path == "" {
				continue
			}
			b, err := store.OpenBolt(f.path, o.BoltOptions(ctx))
			if err != nil {
				closeDBs()
				s.Close()
				return nil, openError(StoreDB, err, o)
			}
			*f.db = b
		}
		var w *wal.WAL
		l, err := walfile.OpenMerged(o.WAL)
		if err == nil {
			w, err = wal.OpenLogChecked(ctx, l, base, check)
		}
		if check != nil {
			// What it established is in the log's coverage.
			check.Close()
		}
		if err != nil {
			if base != nil {
				base.Close()
			}
			s.Close()
			return nil, openError(StoreWAL, err, o)
		}
		s.Reader, s.WAL, s.Bolt, s.Description = w, w, base, walDescription(o.WAL)
		if base != nil {
			s.Description += " over " + baseFile
		}
		if check != nil {
			s.Description += ", checked against " + checkFile
		}
	case o.Salvage && (o.DB == "" || o.Out != ""):
		s.Close()
		return nil, &OptionError{Option: "--salvage", Err: errors.New("it reads a damaged --db file, read-only: give --db FILE, without --out (`etcdpvc --db FILE salvage --out NEW.db` writes what survives to a file)")}
	case o.Salvage:
		if err := s.openSalvage(ctx, o); err != nil {
			s.Close()
			return nil, err
		}
	case o.Out != "":
		sc, err := store.OpenSnapshotCopy(o.DB, o.Out, o.BoltOptions(ctx))
		if err != nil {
			s.Close()
			return nil, openError(StoreSnapshotCopy, err, o)
		}
		abs, _ := filepath.Abs(o.Out)
		// Backups and the audit log record where the write went.
		o.Endpoints = []string{"file:" + abs}
		s.Reader, s.Description = sc, o.Out
	case o.DB != "":
		b, err := store.OpenBolt(o.DB, o.BoltOptions(ctx))
		if err != nil {
			s.Close()
			return nil, openError(StoreDB, err, o)
		}
		s.Reader, s.Bolt, s.Description = b, b, o.DB
		if len(o.ServersOverrides) > 0 {
			o.warn("--db: the resources of --etcd-servers-overrides %s live in other etcds; %s holds at most stale copies of them", OverridesString(o.ServersOverrides), o.DB)
		}
	default:
		et, err := store.OpenEtcd(ctx, o.EtcdConfig())
		if err != nil {
			s.Close()
			return nil, openError(StoreEtcd, err, o)
		}
		s.Reader, s.Description = et, strings.Join(o.Endpoints, ",")
		if err := s.openRoutes(ctx, o); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.Options = o
	s.Resolver = resource.Resolver{Scope: s.crdScope(ctx)}
	return s, nil
}

// openRoutes opens the etcd of each --etcd-servers-overrides entry, with
// the main etcd's certificates (as the kube-apiserver does), and routes
// the session's reads and writes of those resources to them.
func (s *Session) openRoutes(ctx context.Context, o Options) error {
	if len(o.ServersOverrides) == 0 {
		return nil
	}
	var routes []store.Route
	fail := func(err error) error {
		for _, r := range s.Routes {
			r.Etcd.Close()
		}
		s.Routes = nil
		return err
	}
	for _, ov := range o.ServersOverrides {
		name := ov.Resource
		if ov.Group != "" {
			name += "." + ov.Group
		}
		r, err := resource.Lookup(name)
		if err != nil {
			return fail(&OptionError{Option: "--etcd-servers-overrides " + ov.String(), Err: err})
		}
		c := o.EtcdConfig()
		c.Endpoints = ov.Servers
		et, err := store.OpenEtcd(ctx, c)
		if err != nil {
			return fail(openError(StoreEtcd, fmt.Errorf("--etcd-servers-overrides %s: %w", ov, err), o))
		}
		// Closed by the routed store, or here if it cannot be built.
		sr := Route{Override: ov, Prefix: r.ListPrefix(o.Prefix, ""), Etcd: et}
		s.Routes = append(s.Routes, sr)
		routes = append(routes, store.Route{Prefix: sr.Prefix, Store: et})
	}
	rs, err := store.NewRouted(s.Reader, routes)
	if err != nil {
		return fail(&OptionError{Option: "--etcd-servers-overrides", Err: err})
	}
	s.Reader = rs
	return nil
}

// OverridesString renders overrides in the flag's syntax.
func OverridesString(os []kubeadm.Override) string {
	var parts []string
	for _, o := range os {
		parts = append(parts, o.String())
	}
	return strings.Join(parts, ",")
}

// crdScope finds a custom resource's scope from its stored CRD.
func (s *Session) crdScope(ctx context.Context) resource.ScopeFunc {
	return func(plural, group string) (bool, error) {
		key := s.Planner.Prefix + "/apiextensions.k8s.io/customresourcedefinitions/" + plural + "." + group
		kv, err := s.Reader.Get(ctx, key, 0)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return false, fmt.Errorf("no CustomResourceDefinition %s.%s in etcd (%w)", plural, group, store.ErrNotFound)
			}
			return false, err
		}
		cur, err := s.Planner.Load(ctx, s.Reader, key, kv.ModRevision)
		if err != nil {
			return false, err
		}
		return resource.ScopeFromCRD(cur.Plain)
	}
}

// IsFile reports whether the session reads a db or snapshot file (an
// archive of revisions) rather than a live etcd.
func (s *Session) IsFile() bool {
	_, ok := s.Reader.(store.Archive)
	return ok
}

// SnapshotCopy returns the session's snapshot copy (Options.Out), or nil.
func (s *Session) SnapshotCopy() *store.SnapshotCopy {
	sc, _ := s.Reader.(*store.SnapshotCopy)
	return sc
}

// Target names where a write of key goes: "etcd URL,..." (the etcd of
// its --etcd-servers-overrides entry, if any) or "file OUT". It is the one
// description of a session's target, for prompts and reports.
func (s *Session) Target(key string) string {
	if s.IsFile() {
		return "file " + s.Description
	}
	for _, r := range s.Routes {
		if strings.HasPrefix(key, r.Prefix) {
			return "etcd " + strings.Join(r.Etcd.Endpoints(), ",")
		}
	}
	return "etcd " + s.Description
}

// DescribeWrite names the objects at keys and their targets, for the
// confirmation question: "persistentvolumeclaim data-0 in namespace demo,
// etcd https://10.0.0.2:2379".
func (s *Session) DescribeWrite(keys []string) string {
	var parts []string
	for i, k := range keys {
		p := ObjectName(s.Options.Prefix, k)
		if i == len(keys)-1 || s.Target(k) != s.Target(keys[i+1]) {
			p += ", " + s.Target(k)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " and ")
}

// ObjectName names the object at key as kubectl would: "persistentvolumeclaim
// data-0 in namespace demo"; the key itself when it is not an object key.
func ObjectName(prefix, key string) string {
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

// Close closes the store and the encryption config, and removes what the
// session made.
func (s *Session) Close() {
	if s.Reader != nil {
		s.Reader.Close()
	}
	if s.Bolt != nil && store.Reader(s.Bolt) != s.Reader {
		s.Bolt.Close() // the db a WAL was replayed over
	}
	if s.Enc != nil {
		s.Enc.Close()
	}
	if s.cleanup != nil {
		s.cleanup()
		s.cleanup = nil
	}
}
