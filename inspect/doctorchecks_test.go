package inspect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/etcdpvc/etcdpvc/kubeadm"
	"github.com/etcdpvc/etcdpvc/verify"
)

// probe answers CheckAPIServer as an apiserver would have.
type probe struct {
	reach   verify.Reach
	why     string
	refused []string
	err     error
}

func (p probe) Reach() (verify.Reach, string)               { return p.reach, p.why }
func (p probe) Host() string                                { return "https://10.0.0.1:6443" }
func (p probe) Permitted(context.Context) ([]string, error) { return p.refused, p.err }

func TestCheckAPIServer(t *testing.T) {
	for _, tc := range []struct {
		p    probe
		want string
	}{
		{probe{reach: verify.Reachable}, "OK    apiserver     https://10.0.0.1:6443 answers for this cluster; writes will be verified"},
		{probe{reach: verify.Reachable, refused: []string{"create", "update"}},
			"WARN  apiserver     https://10.0.0.1:6443 answers, but the kubeconfig's user may not create or update persistentvolumeclaims: writes cannot be verified"},
		{probe{reach: verify.Reachable, err: errors.New("forbidden")},
			"WARN  apiserver     https://10.0.0.1:6443 answers, but the user's permissions cannot be checked: forbidden"},
		{probe{reach: verify.Reachable + 1, why: "no kubeconfig"}, "WARN  apiserver     writes will not be verified: no kubeconfig"},
	} {
		var rep DoctorReport
		CheckAPIServer(context.Background(), &rep, tc.p)
		if len(rep.Checks) != 1 || rep.Checks[0].Line() != tc.want {
			t.Errorf("%+v: %+v, want %q", tc.p, rep.Checks, tc.want)
		}
	}
}

func TestCheckManifestOverrides(t *testing.T) {
	var rep DoctorReport
	CheckManifestOverrides(&rep, func(flag string) bool { return flag == "endpoints" || flag == "prefix" })
	var got []string
	for _, c := range rep.Checks {
		got = append(got, c.Line())
	}
	want := []string{
		"WARN  manifest      --endpoints overrides the manifest's --etcd-servers",
		"WARN  manifest      --prefix overrides the manifest's --etcd-prefix",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCheckManifest(t *testing.T) {
	empty, present, valid := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(present, kubeadm.ManifestName), []byte("not: a pod\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	manifest := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-apiserver\n  namespace: kube-system\nspec:\n  containers:\n  - name: kube-apiserver\n" +
		"    command:\n    - kube-apiserver\n    - --etcd-servers=https://10.0.0.2:2379\n"
	if err := os.WriteFile(filepath.Join(valid, kubeadm.ManifestName), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoints := func(flag string) bool { return flag == "endpoints" }
	for _, tc := range []struct {
		name       string
		dir        string
		withKube   bool
		wantApply  bool
		wantStatus []CheckStatus
		wantDetail string
	}{
		{"no manifest, no --kubeadm", empty, false, false, nil, ""},
		{"a manifest, no --kubeadm", present, false, false, []CheckStatus{CheckWarn}, "exists but --kubeadm was not given"},
		{"--kubeadm, no manifest", empty, true, false, []CheckStatus{CheckFail}, kubeadm.ManifestName},
		{"--kubeadm, a manifest, --endpoints", valid, true, true, []CheckStatus{CheckOK, CheckWarn}, "etcd https://10.0.0.2:2379, prefix /registry, encryption config none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rep DoctorReport
			apply := CheckManifest(&rep, tc.dir, tc.withKube, endpoints)
			var got []CheckStatus
			for _, c := range rep.Checks {
				got = append(got, c.Status)
			}
			if apply != tc.wantApply || !cmp.Equal(got, tc.wantStatus) {
				t.Fatalf("apply %v, statuses %v; want %v, %v", apply, got, tc.wantApply, tc.wantStatus)
			}
			if tc.wantDetail != "" && !strings.Contains(rep.Checks[0].Detail, tc.wantDetail) {
				t.Errorf("%q lacks %q", rep.Checks[0].Detail, tc.wantDetail)
			}
		})
	}
}
