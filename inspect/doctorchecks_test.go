package inspect

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

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
