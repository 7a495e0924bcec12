package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/kubeadm"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    command:
    - kube-apiserver
    - --etcd-servers=https://10.0.0.2:2379
    - --etcd-cafile=/pki/ca.crt
    - --etcd-certfile=/pki/client.crt
    - --etcd-keyfile=/pki/client.key
    - --etcd-prefix=/kube
`

func manifestsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, kubeadm.ManifestName), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestKubeadm(t *testing.T) {
	dir := manifestsDir(t)
	type want struct {
		Endpoints                      []string
		CACert, User, Password, Prefix string
		Insecure                       bool
	}
	tests := []struct {
		name     string
		opts     Options
		want     want
		warnings []string
	}{{
		name: "manifest alone",
		opts: Options{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "/registry"},
		want: want{Endpoints: []string{"https://10.0.0.2:2379"}, CACert: "/pki/ca.crt", Prefix: "/kube"},
	}, {
		name: "manifest wins over variables, with a warning for each that disagrees",
		opts: Options{
			Endpoints: []string{"https://b:2379"}, CACert: "/pki/ca.crt", Prefix: "/registry",
			Given: map[string]bool{SettingEndpoints: true, SettingCACert: true},
			FromEnv: map[string]EnvValue{
				SettingEndpoints: {Var: "ETCDCTL_ENDPOINTS", Value: "https://b:2379"},
				SettingCACert:    {Var: "ETCDCTL_CACERT", Value: "/pki/ca.crt"},
			},
		},
		want:     want{Endpoints: []string{"https://10.0.0.2:2379"}, CACert: "/pki/ca.crt", Prefix: "/kube"},
		warnings: []string{"--kubeadm: using the manifest's --etcd-servers=https://10.0.0.2:2379, not $ETCDCTL_ENDPOINTS=https://b:2379 (the flag --endpoints wins over both)"},
	}, {
		name: "flags win over the manifest",
		opts: Options{
			Endpoints: []string{"https://b:2379"}, CACert: "/other/ca.crt", Prefix: "/registry",
			Given: map[string]bool{SettingEndpoints: true, SettingCACert: true, SettingPrefix: true},
		},
		want: want{Endpoints: []string{"https://b:2379"}, CACert: "/other/ca.crt", Prefix: "/registry"},
	}, {
		name: "variable-only user, password and insecure mode are dropped",
		opts: Options{
			User: "root", Password: "pw", InsecureSkipTLSVerify: true,
			Given: map[string]bool{SettingUser: true, SettingInsecure: true},
			FromEnv: map[string]EnvValue{
				SettingUser:     {Var: "ETCDCTL_USER", Value: "root:pw"},
				SettingInsecure: {Var: "ETCDCTL_INSECURE_SKIP_TLS_VERIFY", Value: "true"},
			},
		},
		want: want{Endpoints: []string{"https://10.0.0.2:2379"}, CACert: "/pki/ca.crt", Prefix: "/kube"},
		warnings: []string{
			"--kubeadm: ignoring $ETCDCTL_USER: the kube-apiserver connects with its client certificate only (the flag --user still applies)",
			"--kubeadm: ignoring $ETCDCTL_INSECURE_SKIP_TLS_VERIFY: the kube-apiserver connects with its client certificate only (the flag --insecure-skip-tls-verify still applies)",
		},
	}, {
		name: "flags for user and password still apply",
		opts: Options{
			User: "root", Password: "pw",
			Given: map[string]bool{SettingUser: true, SettingPassword: true},
		},
		want: want{Endpoints: []string{"https://10.0.0.2:2379"}, CACert: "/pki/ca.crt", User: "root", Password: "pw", Prefix: "/kube"},
	}, {
		name: "variable-only password with a --user flag",
		opts: Options{
			User: "root", Password: "pw",
			Given:   map[string]bool{SettingUser: true, SettingPassword: true},
			FromEnv: map[string]EnvValue{SettingPassword: {Var: "ETCDCTL_PASSWORD", Value: "pw"}},
		},
		want:     want{Endpoints: []string{"https://10.0.0.2:2379"}, CACert: "/pki/ca.crt", User: "root", Prefix: "/kube"},
		warnings: []string{"--kubeadm: ignoring $ETCDCTL_PASSWORD: the kube-apiserver connects with its client certificate only (the flag --password still applies)"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Kubeadm, o.ManifestsDir = true, dir
			ws, err := Kubeadm(&o)
			if err != nil {
				t.Fatal(err)
			}
			got := want{Endpoints: o.Endpoints, CACert: o.CACert, User: o.User, Password: o.Password, Prefix: o.Prefix, Insecure: o.InsecureSkipTLSVerify}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.warnings, ws); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
			for _, w := range ws {
				if strings.Contains(w, "pw") {
					t.Errorf("warning shows a password: %s", w)
				}
			}
			if !o.KubeadmApplied {
				t.Error("KubeadmApplied not set")
			}
		})
	}
	t.Run("no manifest", func(t *testing.T) {
		o := Options{Kubeadm: true, ManifestsDir: t.TempDir()}
		if _, err := Kubeadm(&o); !errors.Is(err, kubeadm.ErrNoManifest) {
			t.Fatalf("err = %v, want ErrNoManifest", err)
		}
	})
}

func TestAsRecorded(t *testing.T) {
	dir := manifestsDir(t)
	src := &surgery.Source{ClusterID: "abc", Endpoints: []string{"https://10.0.0.2:2379"}, CACert: "/pki/ca.crt", Prefix: "/kube"}
	tests := []struct {
		name          string
		opts          Options
		src           *surgery.Source
		want          string
		wantEndpoints []string
	}{{
		name:          "no flags: the recorded etcd",
		opts:          Options{Endpoints: []string{"127.0.0.1:2379"}},
		src:           src,
		want:          "using the etcd the backup records: --endpoints https://10.0.0.2:2379 --cacert /pki/ca.crt (cluster ID abc)",
		wantEndpoints: []string{"https://10.0.0.2:2379"},
	}, {
		name:          "flags name the recorded etcd",
		opts:          Options{Endpoints: []string{"https://10.0.0.2:2379/"}, Given: map[string]bool{SettingEndpoints: true}},
		src:           src,
		want:          "using the etcd the flags or ETCDCTL_* variables name (--endpoints https://10.0.0.2:2379/), the one the backup records",
		wantEndpoints: []string{"https://10.0.0.2:2379/"},
	}, {
		name:          "flags name another etcd",
		opts:          Options{Endpoints: []string{"https://10.0.0.9:2379"}, Given: map[string]bool{SettingEndpoints: true}},
		src:           src,
		want:          "using the etcd the flags or ETCDCTL_* variables name (--endpoints https://10.0.0.9:2379), not the one the backup records",
		wantEndpoints: []string{"https://10.0.0.9:2379"},
	}, {
		name:          "--kubeadm whose manifest names the recorded etcd",
		opts:          Options{Kubeadm: true, ManifestsDir: dir, Given: map[string]bool{"kubeadm": true}},
		src:           src,
		want:          "using the etcd the flags or ETCDCTL_* variables name (--kubeadm --manifests-dir " + dir + "), the one the backup records",
		wantEndpoints: nil,
	}, {
		name:          "--db: no message",
		opts:          Options{DB: "x.db", Given: map[string]bool{"db": true}},
		src:           src,
		wantEndpoints: nil,
	}, {
		name:          "written into a db copy",
		opts:          Options{Endpoints: []string{"127.0.0.1:2379"}},
		src:           &surgery.Source{Endpoints: []string{"file:/tmp/out.db"}},
		want:          "the backup records no etcd to reach; using --endpoints 127.0.0.1:2379",
		wantEndpoints: []string{"127.0.0.1:2379"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			got := AsRecorded(&o, tt.src)
			if got != tt.want {
				t.Errorf("message:\n got %q\nwant %q", got, tt.want)
			}
			if d := cmp.Diff(tt.wantEndpoints, o.Endpoints); d != "" {
				t.Errorf("endpoints (-want +got):\n%s", d)
			}
			if o.KubeadmApplied {
				t.Error("AsRecorded applied --kubeadm to the options (only a copy may be)")
			}
		})
	}
}

func TestOpen(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	c.Put(t, "/registry/namespaces/demo", []byte("x"))
	ctx := context.Background()
	t.Run("live", func(t *testing.T) {
		s, err := Open(ctx, Options{Endpoints: c.Endpoints(), Prefix: "/registry"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.IsFile() {
			t.Error("IsFile on a live etcd")
		}
		if _, err := s.Reader.Get(ctx, "/registry/namespaces/demo", 0); err != nil {
			t.Fatal(err)
		}
		want := "etcd " + strings.Join(c.Endpoints(), ",")
		if got := s.Target("/registry/namespaces/demo"); got != want {
			t.Errorf("Target = %q, want %q", got, want)
		}
		if got, want := s.DescribeWrite([]string{"/registry/namespaces/demo"}), "namespace demo, "+want; got != want {
			t.Errorf("DescribeWrite = %q, want %q", got, want)
		}
	})
	t.Run("overrides route to their etcd", func(t *testing.T) {
		ov, err := kubeadm.ParseServersOverrides("/events#" + strings.Join(c.Endpoints(), ";"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(ctx, Options{Endpoints: c.Endpoints(), Prefix: "/registry", ServersOverrides: ov})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if len(s.Routes) != 1 || s.Routes[0].Prefix != "/registry/events/" {
			t.Fatalf("routes = %+v", s.Routes)
		}
	})
	t.Run("unknown override resource", func(t *testing.T) {
		ov := []kubeadm.Override{{Resource: "nosuchthings", Servers: c.Endpoints()}}
		_, err := Open(ctx, Options{Endpoints: c.Endpoints(), Prefix: "/registry", ServersOverrides: ov})
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Fatalf("err = %v, want an OptionError", err)
		}
	})
	t.Run("missing db file", func(t *testing.T) {
		_, err := Open(ctx, Options{DB: filepath.Join(t.TempDir(), "none.db")})
		var oe *OpenError
		if !errors.As(err, &oe) || oe.Kind != StoreDB || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v, want an OpenError of the db", err)
		}
	})
	t.Run("--out without --db", func(t *testing.T) {
		_, err := Open(ctx, Options{Out: filepath.Join(t.TempDir(), "out.db")})
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Fatalf("err = %v, want an OptionError", err)
		}
	})
	t.Run("unreachable etcd", func(t *testing.T) {
		_, err := Open(ctx, Options{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: 1e9})
		var oe *OpenError
		if !errors.As(err, &oe) || oe.Kind != StoreEtcd || !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("err = %v, want an OpenError of etcd", err)
		}
	})
}
