package session

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/etcdpvc/etcdpvc/verify"
)

func getenvOf(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// TestResolve: a flag wins over its ETCDCTL_* variable, which wins over the
// default; Given and FromEnv record which was used; --user user:password is
// split as etcdctl splits it.
func TestResolve(t *testing.T) {
	type want struct {
		Endpoints      []string
		User, Password string
		Prefix         string
		Insecure       bool
		Dial, Command  time.Duration
		Verify         verify.Mode
		Given          []string
		FromEnv        []string
	}
	got := func(o Options) want {
		w := want{Endpoints: o.Endpoints, User: o.User, Password: o.Password, Prefix: o.Prefix, Insecure: o.InsecureSkipTLSVerify,
			Dial: o.DialTimeout, Command: o.CommandTimeout, Verify: o.Verify}
		for _, s := range Settings {
			if o.Given[s.Name] {
				w.Given = append(w.Given, s.Name)
			}
			if o.FromEnvOnly(s.Name) {
				w.FromEnv = append(w.FromEnv, s.Name)
			}
		}
		return w
	}
	defaults := want{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "/registry", Dial: 2 * time.Second, Command: 5 * time.Second, Verify: verify.Auto}
	with := func(f func(*want)) want {
		w := defaults
		f(&w)
		return w
	}
	tests := []struct {
		name  string
		flags map[string]string
		env   map[string]string
		want  want
	}{{
		name: "defaults",
		want: defaults,
	}, {
		name: "variables fill in what no flag gives",
		env:  map[string]string{"ETCDCTL_ENDPOINTS": "https://a:2379, https://b:2379", "ETCDCTL_DIAL_TIMEOUT": "7s", "ETCDCTL_INSECURE_SKIP_TLS_VERIFY": "true"},
		want: with(func(w *want) {
			w.Endpoints, w.Dial, w.Insecure = []string{"https://a:2379", "https://b:2379"}, 7*time.Second, true
			w.Given = []string{"endpoints", "insecure-skip-tls-verify", "dial-timeout"}
			w.FromEnv = w.Given
		}),
	}, {
		name:  "a flag wins over its variable",
		flags: map[string]string{"endpoints": "https://c:2379", "dial-timeout": "1s"},
		env:   map[string]string{"ETCDCTL_ENDPOINTS": "https://a:2379", "ETCDCTL_DIAL_TIMEOUT": "7s", "ETCDCTL_COMMAND_TIMEOUT": "9s"},
		want: with(func(w *want) {
			w.Endpoints, w.Dial, w.Command = []string{"https://c:2379"}, time.Second, 9*time.Second
			w.Given = []string{"endpoints", "dial-timeout", "command-timeout"}
			w.FromEnv = []string{"command-timeout"}
		}),
	}, {
		name:  "an empty variable is not given",
		flags: map[string]string{},
		env:   map[string]string{"ETCDCTL_ENDPOINTS": "", "ETCDCTL_CACERT": ""},
		want:  defaults,
	}, {
		name:  "--user user:password splits on the first colon",
		flags: map[string]string{"user": "root:s3:cr3t"},
		want:  with(func(w *want) { w.User, w.Password, w.Given = "root", "s3:cr3t", []string{"user"} }),
	}, {
		name: "$ETCDCTL_USER user:password splits too",
		env:  map[string]string{"ETCDCTL_USER": "root:pw"},
		want: with(func(w *want) {
			w.User, w.Password, w.Given, w.FromEnv = "root", "pw", []string{"user"}, []string{"user"}
		}),
	}, {
		name:  "with --password, --user is the whole name",
		flags: map[string]string{"user": "ro:ot", "password": "pw"},
		want:  with(func(w *want) { w.User, w.Password, w.Given = "ro:ot", "pw", []string{"user", "password"} }),
	}, {
		name:  "with $ETCDCTL_PASSWORD, --user is the whole name",
		flags: map[string]string{"user": "ro:ot"},
		env:   map[string]string{"ETCDCTL_PASSWORD": "pw"},
		want: with(func(w *want) {
			w.User, w.Password, w.Given, w.FromEnv = "ro:ot", "pw", []string{"user", "password"}, []string{"password"}
		}),
	}, {
		name:  "the prefix has one leading slash and no trailing one",
		flags: map[string]string{"prefix": "kube/", "verify": "Never"},
		want:  with(func(w *want) { w.Prefix, w.Verify, w.Given = "/kube", verify.Never, []string{"prefix", "verify"} }),
	}, {
		name: "settings without a variable ignore the environment",
		env:  map[string]string{"ETCDCTL_PREFIX": "/kube", "ETCDCTL_VERIFY": "never"},
		want: defaults,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Resolve(tc.flags, getenvOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got(o)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestResolveRepeated: a repeated setting (--wal) keeps every value in
// order, none split on commas or trimmed, and Set replaces them.
func TestResolveRepeated(t *testing.T) {
	o, err := Resolve(map[string]string{"wal": JoinRepeated([]string{"/m1/wal", "/data/m,2 ", "/m1/wal"})}, getenvOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"/m1/wal", "/data/m,2 ", "/m1/wal"}, o.WAL); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if !o.Given["wal"] {
		t.Error("--wal not given")
	}
	if err := o.Set("wal", "/m3/wal"); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"/m3/wal"}, o.WAL); d != "" {
		t.Errorf("after Set (-want +got):\n%s", d)
	}
	o, err = Resolve(nil, getenvOf(nil))
	if err != nil || o.WAL != nil || o.Given["wal"] {
		t.Errorf("without --wal: %q, given %v, %v", o.WAL, o.Given["wal"], err)
	}
}

// TestResolveErrors: a value that cannot be used is an *OptionError naming
// the flag (or variable's flag) and the value.
func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name  string
		flags map[string]string
		env   map[string]string
		want  string
	}{
		{"empty endpoints", map[string]string{"endpoints": " , "}, nil, "--endpoints is empty: give etcd's client URLs (https://10.0.0.2:2379), or leave it out for 127.0.0.1:2379"},
		{"negative timeout", map[string]string{"dial-timeout": "-1s"}, nil, `--dial-timeout "-1s": must not be negative`},
		{"bad timeout from the variable", nil, map[string]string{"ETCDCTL_COMMAND_TIMEOUT": "soon"}, `--command-timeout "soon": time: invalid duration "soon"`},
		{"consistency", map[string]string{"consistency": "x"}, nil, `--consistency "x": must be l or s`},
		{"verify", map[string]string{"verify": "sometimes"}, nil, `--verify "sometimes": must be auto, always or never`},
		{"overrides", map[string]string{"etcd-servers-overrides": "nohash"}, nil, `--etcd-servers-overrides: etcd servers override "nohash": want group/resource#servers`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.flags, getenvOf(tc.env))
			var oe *OptionError
			if !errors.As(err, &oe) {
				t.Fatalf("error %v, want an *OptionError", err)
			}
			if msg := err.Error(); msg != tc.want {
				t.Errorf("error %q, want %q", msg, tc.want)
			}
		})
	}
}

// TestResolveKubeadmPrecedence: flags win over the manifest, the manifest
// wins over the ETCDCTL_* variables, each variable it overrides with
// another value is named in a warning, and those the apiserver does not use
// are dropped with one.
func TestResolveKubeadmPrecedence(t *testing.T) {
	dir := manifestsDir(t)
	o, err := Resolve(
		map[string]string{"kubeadm": "true", "manifests-dir": dir, "cert": "/mine/client.crt"},
		getenvOf(map[string]string{
			"ETCDCTL_ENDPOINTS": "https://other:2379",
			"ETCDCTL_CACERT":    "/pki/ca.crt", // the manifest's own: no warning
			"ETCDCTL_CERT":      "/env/client.crt",
			"ETCDCTL_USER":      "root:pw",
		}))
	if err != nil {
		t.Fatal(err)
	}
	warnings, err := Kubeadm(&o)
	if err != nil {
		t.Fatal(err)
	}
	type state struct {
		Endpoints                         []string
		CACert, Cert, Key, User, Password string
		Prefix                            string
	}
	want := state{Endpoints: []string{"https://10.0.0.2:2379"}, CACert: "/pki/ca.crt", Cert: "/mine/client.crt", Key: "/pki/client.key", Prefix: "/kube"}
	if d := cmp.Diff(want, state{o.Endpoints, o.CACert, o.Cert, o.Key, o.User, o.Password, o.Prefix}); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	wantWarnings := []string{
		"--kubeadm: using the manifest's --etcd-servers=https://10.0.0.2:2379, not $ETCDCTL_ENDPOINTS=https://other:2379 (the flag --endpoints wins over both)",
		"--kubeadm: ignoring $ETCDCTL_USER: the kube-apiserver connects with its client certificate only (the flag --user still applies)",
	}
	if d := cmp.Diff(wantWarnings, warnings); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}

// TestFindKubeconfig: --kubeconfig must name a file (a usage error); a
// $KUBECONFIG that names none is only a reason not to verify.
func TestFindKubeconfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	o, err := Resolve(map[string]string{"kubeconfig": missing}, getenvOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	var oe *OptionError
	if _, err := o.FindKubeconfig(); !errors.As(err, &oe) {
		t.Errorf("--kubeconfig %s: error %v, want an *OptionError", missing, err)
	}
	o, err = Resolve(nil, getenvOf(map[string]string{"KUBECONFIG": missing}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.FindKubeconfig(); err == nil || errors.As(err, &oe) {
		t.Errorf("$KUBECONFIG=%s: error %v, want one that is not an *OptionError", missing, err)
	}
}

func TestHashCacheDir(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_CACHE_HOME": "/c", "HOME": "/h"}, "/c/etcdpvc/verified"},
		{map[string]string{"XDG_CACHE_HOME": "rel", "HOME": "/h"}, "/h/.cache/etcdpvc/verified"},
		{map[string]string{"HOME": "rel"}, ""},
		{nil, ""},
	} {
		if got := HashCacheDir(getenvOf(tc.env)); got != tc.want {
			t.Errorf("HashCacheDir(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}
