package session

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/kubeadm"
	"github.com/etcdpvc/etcdpvc/verify"
)

// Kind is how a setting's value is written.
type Kind byte

// The kinds of settings.
const (
	KindString   Kind = 's'
	KindBool     Kind = 'b'
	KindDuration Kind = 'd'
	// KindList is a comma-separated list (a repeated flag adds to it).
	KindList Kind = 'l'
	// KindRepeated is one value per flag, never split (a path may hold a
	// comma): a repeated flag adds one. Resolve and Set take its values
	// joined by RepeatedSep.
	KindRepeated Kind = 'r'
)

// RepeatedSep joins the values of a KindRepeated setting into the one
// string Resolve and Set take: NUL, which no command-line argument or
// environment variable can hold.
const RepeatedSep = "\x00"

// JoinRepeated is the value of a KindRepeated setting given values.
func JoinRepeated(values []string) string { return strings.Join(values, RepeatedSep) }

// Setting is one connection, file or verification setting every command
// accepts (a global flag of the CLI), compatible with etcdctl's.
type Setting struct {
	// Name is the flag's name ("endpoints"), the key of Options.Given.
	Name string
	// Env is the environment variable it falls back to ("" for none).
	Env  string
	Kind Kind
	// Default is its value when neither the flag nor the variable is
	// given.
	Default string
}

// Settings are the settings Resolve reads, in the order the CLI lists
// them. Each falls back to its ETCDCTL_* variable, as in etcdctl.
var Settings = []Setting{
	{Name: SettingEndpoints, Env: "ETCDCTL_ENDPOINTS", Kind: KindList, Default: "127.0.0.1:2379"},
	{Name: SettingCACert, Env: "ETCDCTL_CACERT", Kind: KindString},
	{Name: SettingCert, Env: "ETCDCTL_CERT", Kind: KindString},
	{Name: SettingKey, Env: "ETCDCTL_KEY", Kind: KindString},
	{Name: SettingUser, Env: "ETCDCTL_USER", Kind: KindString},
	{Name: SettingPassword, Env: "ETCDCTL_PASSWORD", Kind: KindString},
	{Name: SettingInsecure, Env: "ETCDCTL_INSECURE_SKIP_TLS_VERIFY", Kind: KindBool},
	{Name: "dial-timeout", Env: "ETCDCTL_DIAL_TIMEOUT", Kind: KindDuration, Default: "2s"},
	{Name: "command-timeout", Env: "ETCDCTL_COMMAND_TIMEOUT", Kind: KindDuration, Default: "5s"},
	{Name: "consistency", Kind: KindString, Default: "l"},
	{Name: SettingPrefix, Kind: KindString, Default: "/registry"},
	{Name: SettingServersOverrides, Kind: KindString},
	{Name: SettingKubeadm, Kind: KindBool},
	{Name: "manifests-dir", Kind: KindString, Default: "/etc/kubernetes/manifests"},
	{Name: SettingNode, Kind: KindString},
	{Name: SettingDB, Kind: KindString},
	{Name: SettingWAL, Kind: KindRepeated},
	{Name: SettingWALBase, Kind: KindString},
	{Name: "lock-timeout", Kind: KindDuration, Default: "2s"},
	{Name: "skip-hash-check", Kind: KindBool},
	{Name: "salvage", Kind: KindBool},
	{Name: SettingEncryptionConfig, Kind: KindString},
	{Name: SettingKubeconfig, Env: "KUBECONFIG", Kind: KindString},
	{Name: "verify", Kind: KindString, Default: "auto"},
}

// Resolve builds the options from the settings given on the command line
// (flags: name -> value; a list joined by commas, a repeated setting's
// values by RepeatedSep, a bool "true" or "false") and the environment (getenv): a flag wins over its variable,
// which wins over the default. Options.Given names every setting given
// either way, Options.FromEnv those given only by their variable (the
// kube-apiserver manifest of --kubeadm wins over those, not over flags;
// see Kubeadm). --user user:password is split on the first colon, as
// etcdctl does, unless a password is given. A value that cannot be used is
// an *OptionError.
func Resolve(flags map[string]string, getenv func(string) string) (Options, error) {
	o := Options{Given: map[string]bool{}, FromEnv: map[string]EnvValue{}}
	for _, s := range Settings {
		v, given := flags[s.Name]
		if !given && s.Env != "" {
			if ev := getenv(s.Env); ev != "" {
				v, given = ev, true
				o.FromEnv[s.Name] = EnvValue{Var: s.Env, Value: ev}
			}
		}
		if !given {
			v = s.Default
		} else {
			o.Given[s.Name] = true
		}
		if s.Name == SettingEndpoints && given && len(SplitList([]string{v})) == 0 {
			return Options{}, &OptionError{Err: errors.New("--endpoints is empty: give etcd's client URLs (https://10.0.0.2:2379), or leave it out for 127.0.0.1:2379")}
		}
		if err := o.Set(s.Name, v); err != nil {
			return Options{}, err
		}
	}
	o.Node = o.Given[SettingNode]
	if o.Node && o.Kubeadm {
		return Options{}, &OptionError{Err: errors.New("give --kubeadm or --node, not both: --node finds kubeadm's layout too")}
	}
	if !o.Given[SettingPassword] {
		if u, p, ok := strings.Cut(o.User, ":"); ok {
			o.User, o.Password = u, p
		}
	}
	return o, nil
}

// Set stores the value of the setting name (a list comma-separated, a
// repeated setting's values joined by RepeatedSep, a bool "true" or
// "false"); a value that cannot be used is an *OptionError.
func (o *Options) Set(name, value string) error {
	var err error
	switch name {
	case SettingEndpoints:
		o.Endpoints = SplitList([]string{value})
	case SettingCACert:
		o.CACert = value
	case SettingCert:
		o.Cert = value
	case SettingKey:
		o.Key = value
	case SettingUser:
		o.User = value
	case SettingPassword:
		o.Password = value
	case SettingInsecure:
		o.InsecureSkipTLSVerify = value == "true"
	case "dial-timeout":
		o.DialTimeout, err = parseDuration(value)
	case "command-timeout":
		o.CommandTimeout, err = parseDuration(value)
	case "consistency":
		o.Consistency = value
		if value != "l" && value != "s" {
			err = errors.New("must be l or s")
		}
	case SettingPrefix:
		o.Prefix = "/" + strings.Trim(value, "/")
	case SettingKubeadm:
		o.Kubeadm = value == "true"
	case "manifests-dir":
		o.ManifestsDir = value
	case SettingNode:
		o.NodeRoot = value
	case SettingDB:
		o.DB = value
	case SettingWAL:
		o.WAL = nil
		for _, v := range strings.Split(value, RepeatedSep) {
			if v != "" {
				o.WAL = append(o.WAL, v)
			}
		}
	case SettingWALBase:
		o.WALBase = value
	case "lock-timeout":
		o.LockTimeout, err = parseDuration(value)
	case "skip-hash-check":
		o.SkipHashCheck = value == "true"
	case "salvage":
		o.Salvage = value == "true"
	case SettingEncryptionConfig:
		o.EncryptionConfig = value
	case SettingKubeconfig:
		o.Kubeconfig = value
	case "verify":
		if o.Verify, err = verify.ParseMode(value); err != nil {
			return &OptionError{Err: err}
		}
	case SettingServersOverrides:
		if o.ServersOverrides, err = kubeadm.ParseServersOverrides(value); err != nil {
			return &OptionError{Option: "--" + name, Err: err}
		}
	default:
		return fmt.Errorf("unknown setting %q", name)
	}
	if err != nil {
		return &OptionError{Option: fmt.Sprintf("--%s %q", name, value), Err: err}
	}
	return nil
}

// parseDuration parses a duration that must not be negative.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = errors.New("must not be negative")
	}
	return d, err
}

// FromEnvOnly reports whether setting name was given by its environment
// variable and not on the command line.
func (o *Options) FromEnvOnly(name string) bool {
	_, ok := o.FromEnv[name]
	return ok
}

// FindKubeconfig finds the kubeconfig of the apiserver to verify writes
// with (verify.Find): --kubeconfig, the node's admin.conf with --kubeadm,
// or $KUBECONFIG, in that order. A --kubeconfig flag that names no usable
// file is an *OptionError; otherwise the error says why none was found.
func (o *Options) FindKubeconfig() (verify.Kubeconfig, error) {
	env, flag := "", o.Kubeconfig
	if o.FromEnvOnly(SettingKubeconfig) {
		env, flag = o.Kubeconfig, ""
	}
	if o.Node && flag == "" {
		if _, err := Kubeadm(o); err != nil {
			return verify.Kubeconfig{}, err
		}
		if f := o.NodeFound; f != nil {
			if f.Kubeconfig == "" {
				return verify.Kubeconfig{}, fmt.Errorf("%w: the %s node below %s has no admin kubeconfig: give --kubeconfig", verify.ErrNoKubeconfig, f.Layout, f.Root)
			}
			k := verify.Kubeconfig{Paths: []string{f.Kubeconfig}, Source: "--node"}
			if f.Root != "/" {
				k.HostRoot = f.Root
			}
			return k, nil
		}
	}
	path, err := verify.Find(verify.FindOptions{Flag: flag, Env: env, Kubeadm: o.Kubeadm, ManifestsDir: o.ManifestsDir})
	if flag != "" && err != nil {
		return verify.Kubeconfig{}, &OptionError{Err: err}
	}
	return path, err
}

// HashCacheDir is where verified snapshot hashes are remembered:
// $XDG_CACHE_HOME/etcdpvc/verified, or ~/.cache/etcdpvc/verified; "" (no
// cache) when neither is known.
func HashCacheDir(getenv func(string) string) string {
	if d := getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "etcdpvc", "verified")
	}
	if h := getenv("HOME"); h != "" && filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "etcdpvc", "verified")
	}
	return ""
}
