package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/internal/regular"
	"github.com/etcdpvc/etcdpvc/kubeadm"
	"github.com/etcdpvc/etcdpvc/store"
)

// k3s runs its kube-apiserver in its own process, with no manifest: its
// flags are k3s's defaults, then the config file's kube-apiserver-arg
// entries, which win (k3s-io/k3s pkg/daemons/control/server.go,
// config.GetArgs). With embedded etcd, the apiserver reaches etcd at
// k3sEndpoint with the client certificate k3s generates (k3s-io/k3s
// pkg/etcd/etcd.go, Register: Datastore.Endpoint and BackendTLSConfig;
// pkg/daemons/control/deps/deps.go: ETCDServerCA, ClientETCDCert,
// ClientETCDKey below DATA-DIR/server/tls/etcd) and the default prefix.
// The EncryptionConfiguration is DATA-DIR/server/cred/encryption-config.json
// when secrets-encryption is on (deps.go, CreateRuntimeCertFiles).
const (
	k3sConfig      = "/etc/rancher/k3s/config.yaml"
	k3sDataDir     = "/var/lib/rancher/k3s"
	k3sKubeconfig  = "/etc/rancher/k3s/k3s.yaml" // k3s-io/k3s pkg/datadir/datadir.go, GlobalConfig
	k3sEndpoint    = "https://127.0.0.1:2379"
	k3sDefaultPref = "/registry"
)

// k3sSettings is what readK3s takes from k3s's config file and its drop-in
// directory.
type k3sSettings struct {
	dataDir           string
	apiserverArgs     []any
	secretsEncryption bool
	datastoreEndpoint string
	writeKubeconfig   string
	files             []string
}

// readK3sConfig reads k3s's config file and then, in lexical order, the
// .yaml files of its config.yaml.d directory: a later file's key wins, and
// a key ending in "+" appends to a list (k3s's documented merge rules).
// Flags on k3s's own command line (its systemd unit) are not seen: a
// setting given only there is not known here.
func readK3sConfig(root string) (k3sSettings, error) {
	s := k3sSettings{dataDir: k3sDataDir}
	main := below(root, k3sConfig)
	paths := []string{main}
	drop, _ := filepath.Glob(below(root, k3sConfig+".d/*.yaml"))
	sort.Strings(drop)
	paths = append(paths, drop...)
	merged := map[string]any{}
	for _, p := range paths {
		b, err := regular.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) && p == main {
			continue
		}
		if err != nil {
			return s, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			return s, fmt.Errorf("parse %s: %w", p, err)
		}
		s.files = append(s.files, p)
		for k, v := range m {
			if base, ok := strings.CutSuffix(k, "+"); ok {
				merged[base] = append(asList(merged[base]), asList(v)...)
				continue
			}
			merged[k] = v
		}
	}
	if v, ok := merged["data-dir"].(string); ok && v != "" {
		s.dataDir = v
	}
	s.apiserverArgs = asList(merged["kube-apiserver-arg"])
	s.secretsEncryption, _ = merged["secrets-encryption"].(bool)
	s.datastoreEndpoint, _ = merged["datastore-endpoint"].(string)
	s.writeKubeconfig, _ = merged["write-kubeconfig"].(string)
	return s, nil
}

// asList is a config value as a list of strings (a single string is one).
func asList(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	default:
		return []any{v}
	}
}

// readK3s reads k3s's layout. A server whose datastore-endpoint is a
// PostgreSQL or MySQL URL is on kine (readK3sKine), as is one without
// embedded etcd; on another external datastore it is ErrUnsupported. Its
// SQLite file DATA-DIR/server/db/state.db (k3s-io/k3s pkg/etcd/etcd.go,
// sqliteFile) and its socket DATA-DIR/server/kine.sock: kine listens on
// the relative unix://kine.sock (k3s-io/kine pkg/endpoint/endpoint.go,
// KineSocket), and k3s's server first changes its working directory to
// DATA-DIR/server (k3s-io/k3s pkg/server/server.go, setupDataDirAndChdir
// with ResolveDataDir).
func readK3s(root string) (*Found, error) {
	s, err := readK3sConfig(root)
	if err != nil {
		return nil, err
	}
	f := &Found{}
	for _, p := range s.files {
		f.Files = append(f.Files, File{"k3s config", p})
	}
	data := below(root, s.dataDir)
	server := filepath.Join(data, "server")
	if store.IsKineURL(s.datastoreEndpoint) {
		return readK3sKine(root, s, f, "")
	}
	if s.datastoreEndpoint != "" {
		return nil, fmt.Errorf("%w: k3s uses the external datastore-endpoint of %s, not its embedded etcd: give --endpoints and its certificates", ErrUnsupported, strings.Join(s.files, ", "))
	}
	etcdDir := filepath.Join(server, "db", "etcd")
	if _, err := os.Stat(etcdDir); err != nil {
		return readK3sKine(root, s, f, etcdDir)
	}
	f.Files = append(f.Files, File{"embedded etcd data dir", etcdDir})
	tlsDir := filepath.Join(s.dataDir, "server", "tls", "etcd")
	a := &kubeadm.APIServer{
		Manifest:  f.describe(),
		Endpoints: []string{k3sEndpoint},
		CAFile:    filepath.Join(tlsDir, "server-ca.crt"),
		CertFile:  filepath.Join(tlsDir, "client.crt"),
		KeyFile:   filepath.Join(tlsDir, "client.key"),
		Prefix:    k3sDefaultPref,
	}
	encFile := filepath.Join(s.dataDir, "server", "cred", "encryption-config.json")
	if s.secretsEncryption {
		a.EncryptionConfig = encFile
	}
	// The config's kube-apiserver-arg entries win over k3s's defaults, as
	// in the apiserver itself: parse them as a manifest's flags would be.
	if len(s.apiserverArgs) > 0 {
		// A flag given there replaces k3s's value (config.GetArgs).
		var args []string
		servers := false
		for _, v := range s.apiserverArgs {
			arg := "--" + strings.TrimPrefix(fmt.Sprint(v), "--")
			servers = servers || strings.HasPrefix(arg, "--etcd-servers=")
			args = append(args, arg)
		}
		if !servers {
			args = append(args, "--etcd-servers="+k3sEndpoint)
		}
		extra, err := kubeadm.ParseArgs(f.describe(), args)
		if err != nil {
			return nil, err
		}
		a.Endpoints = extra.Endpoints
		for _, p := range []struct {
			dst *string
			v   string
		}{
			{&a.CAFile, extra.CAFile}, {&a.CertFile, extra.CertFile}, {&a.KeyFile, extra.KeyFile},
			{&a.EncryptionConfig, extra.EncryptionConfig},
		} {
			if p.v != "" {
				*p.dst = p.v
			}
		}
		a.Prefix = extra.Prefix // "/registry" unless given, as k3s's own

		a.ServersOverrides = extra.ServersOverrides
	}
	a.Rebase(root)
	if a.EncryptionConfig == "" {
		if enc := below(root, encFile); fileExists(enc) {
			f.Notes = append(f.Notes, fmt.Sprintf("%s exists, but the k3s config does not turn on secrets-encryption: not used (if k3s runs with --secrets-encryption on its command line, give --encryption-config %s)", enc, enc))
		}
	}
	if err := f.need(a); err != nil {
		return nil, err
	}
	f.APIServer = a
	kc := k3sKubeconfig
	if s.writeKubeconfig != "" {
		kc = s.writeKubeconfig
	}
	f.kubeconfig(below(root, kc))
	return f, nil
}

// describe names the k3s files read, for messages.
func (f *Found) describe() string {
	if len(f.Files) == 0 {
		return "k3s's defaults (no " + k3sConfig + ")"
	}
	var names []string
	for _, fl := range f.Files {
		names = append(names, fl.Path)
	}
	return strings.Join(names, ", ")
}

// readK3sKine is the layout of a k3s server without embedded etcd: its
// kube-apiserver reaches kine on the unix socket DATA-DIR/server/kine.sock,
// without TLS, under k3s's default prefix (k3s-io/k3s pkg/cluster/cluster.go
// starts kine with that listener when no datastore endpoint is set). When
// the socket is not there, k3s is not running: the database is read offline
// with --db, state.db or the datastore-endpoint's URL (its password
// redacted). etcdDir is the embedded etcd's directory found missing, ""
// when the config names a datastore.
func readK3sKine(root string, s k3sSettings, f *Found, etcdDir string) (*Found, error) {
	server := filepath.Join(below(root, s.dataDir), "server")
	sock, db := filepath.Join(server, "kine.sock"), filepath.Join(server, "db", "state.db")
	why := "k3s has no embedded etcd (" + etcdDir + " does not exist)"
	if etcdDir == "" {
		db = store.RedactKineURL(s.datastoreEndpoint)
		why = "k3s keeps its data in kine on the datastore-endpoint of " + strings.Join(s.files, ", ")
	}
	if _, err := os.Stat(sock); err != nil {
		return nil, fmt.Errorf("%w: %s and kine's socket %s does not exist: k3s is not running; read its database offline with --db %s", ErrUnsupported, why, sock, db)
	}
	f.Files = append(f.Files, File{"kine socket", sock})
	a := &kubeadm.APIServer{Manifest: f.describe(), Endpoints: []string{"unix://" + sock}, Prefix: k3sDefaultPref}
	encFile := filepath.Join(s.dataDir, "server", "cred", "encryption-config.json")
	if s.secretsEncryption {
		a.EncryptionConfig = below(root, encFile)
		if _, err := os.Stat(a.EncryptionConfig); err != nil {
			return nil, fmt.Errorf("encryption config %s (secrets-encryption in %s): %w", a.EncryptionConfig, f.describe(), err)
		}
		f.Files = append(f.Files, File{"encryption config", a.EncryptionConfig})
	}
	if len(s.apiserverArgs) > 0 {
		// The config's kube-apiserver-arg entries win, as in readK3s.
		args := []string{"--etcd-servers=" + a.Endpoints[0]}
		for _, v := range s.apiserverArgs {
			args = append(args, "--"+strings.TrimPrefix(fmt.Sprint(v), "--"))
		}
		extra, err := kubeadm.ParseArgs(f.describe(), args)
		if err != nil {
			return nil, err
		}
		a.Prefix, a.ServersOverrides = extra.Prefix, extra.ServersOverrides
		if extra.EncryptionConfig != "" {
			a.EncryptionConfig = below(root, extra.EncryptionConfig)
		}
		if extra.Endpoints[0] != a.Endpoints[0] {
			return nil, fmt.Errorf("%w: k3s's kube-apiserver-arg names etcd-servers %s in %s, not kine's socket: give --endpoints", ErrUnsupported, strings.Join(extra.Endpoints, ","), f.describe())
		}
	}
	f.Notes = append(f.Notes, fmt.Sprintf("k3s stores in kine, not etcd: %s (its database %s); see docs/supported-versions.md for what kine serves", sock, db))
	f.APIServer = a
	kc := k3sKubeconfig
	if s.writeKubeconfig != "" {
		kc = s.writeKubeconfig
	}
	f.kubeconfig(below(root, kc))
	return f, nil
}
