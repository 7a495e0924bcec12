package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/verify"
)

func doctorCommand() command {
	return command{
		name:  "doctor",
		usage: "check what surgery needs: manifest, certificates, etcd health, prefix, encryption, compaction",
		desc: "doctor runs the checks an operator makes before surgery, each reported OK, WARN or FAIL\n" +
			"with a one-line reason: the kube-apiserver manifest (with --kubeadm) and the flags or\n" +
			"ETCDCTL_* variables that override it; the certificate files (readable, parsed, not expired,\n" +
			"key matching); the connection; etcd's members and each endpoint's health (version, leader,\n" +
			"revision, db size, alarms); the alarms raised (NOSPACE: `etcdpvc space` says why the db is\n" +
			"full and the plan); that the prefix holds the apiserver's keys; the encryption\n" +
			"providers for secrets, configmaps, persistentvolumeclaims and *.*, whether the first stored\n" +
			"Secret can be read with them, and (when the first provider for secrets encrypts) how many\n" +
			"Secrets are still stored in the clear; and the compaction state, which bounds what history and\n" +
			"recover can still find. It writes nothing.\n\n" +
			"Exit status: 0 when no check fails (warnings included); 1 when a check fails; when the store\n" +
			"cannot be opened, that error's status (7: cannot reach etcd or open the db), the checks after\n" +
			"connect skipped; 2 on a usage error.",
		examples: `etcdpvc doctor --kubeadm
etcdpvc doctor --kubeadm --manifests-dir /etc/kubernetes/manifests
etcdpvc doctor --endpoints https://10.0.0.1:2379 --cacert ca.crt --cert client.crt --key client.key`,
		flags: []cli.Flag{
			&cli.DurationFlag{Name: "expiry-warning", Value: 30 * 24 * time.Hour, Usage: "warn about certificates that expire within this time"},
		},
		args: cliargs.None,
		action: func(c *cli.Context, e *env, in *input) error {
			return runDoctor(e, in.g, c.Duration("expiry-warning"))
		},
	}
}

// doctor prints check results as they come.
type doctor struct {
	e   *env
	rep inspect.DoctorReport
}

func newDoctor(e *env) *doctor {
	d := &doctor{e: e}
	d.rep.OnCheck = func(c inspect.Check) {
		fmt.Fprintln(e.stdout, c.Line())
	}
	return d
}

func (d *doctor) report(status inspect.CheckStatus, check, format string, args ...any) {
	d.rep.Add(status, check, format, args...)
}

func runDoctor(e *env, g *globalOptions, expiryWarning time.Duration) error {
	d := newDoctor(e)
	switch {
	case !d.manifest(g) && g.TakesLayout() && g.DB == "":
		// The certificates are the manifest's: none were named, but
		// none are known either.
		if !g.Node {
			d.report(inspect.CheckWarn, "certificates", "not checked: --kubeadm took no settings from a manifest (above), where they would come from")
			break
		}
		d.report(inspect.CheckWarn, "certificates", "not checked: --node took no settings from a node layout (above), where they would come from")
		// No endpoint is guessed, not even etcd's default.
		return fmt.Errorf("doctor: %d check(s) failed; --node found no usable node layout, so no etcd was tried", d.rep.Failed())
	case g.DB == "":
		in := inspect.CertInputs{Endpoints: g.Endpoints, CACert: g.CACert, Cert: g.Cert, Key: g.Key, Now: time.Now(), ExpiryWarning: expiryWarning}
		if g.NodeFound != nil {
			in.Renew = g.NodeFound.Layout.Renew()
		}
		inspect.CheckCertificates(&d.rep, in)
	}
	if err := d.connectAndInspect(g); err != nil {
		return err
	}
	if n := d.rep.Failed(); n > 0 {
		return fmt.Errorf("doctor: %d check(s) failed", n)
	}
	return nil
}

// manifest reads the kube-apiserver manifest and says which settings come
// from it; it reports whether they were taken from it.
func (d *doctor) manifest(g *globalOptions) bool {
	if g.Node {
		return d.node(g)
	}
	// A flag overrides the manifest; an ETCDCTL_* variable does not (the
	// warnings below name those that disagree with it).
	if !inspect.CheckManifest(&d.rep, g.ManifestsDir, g.Kubeadm, g.ByFlag) {
		return false
	}
	if err := applyKubeadm(g); err != nil {
		d.report(inspect.CheckFail, "manifest", "%v", err)
		return false
	}
	for _, w := range g.kubeadmWarnings {
		d.report(inspect.CheckWarn, "manifest", "%s", w)
	}
	g.kubeadmWarnings = nil // reported here, not again on stderr
	return true
}

// connectAndInspect connects and checks the cluster. It returns an error
// only when it cannot go on.
func (d *doctor) connectAndInspect(g *globalOptions) error {
	e := d.e
	s, err := openSession(e, g)
	if err != nil {
		d.report(inspect.CheckFail, "connect", "%v", err)
		if h := hintFor(err); h != "" {
			d.report(inspect.CheckNote, "connect", "hint: %s", h)
		}
		return fmt.Errorf("doctor: %d check(s) failed; the store cannot be opened, so the remaining checks were skipped: %w", d.rep.Failed(), err)
	}
	defer s.Close()
	d.report(inspect.CheckOK, "connect", "%s", s.Description)
	d.apiserver(s)
	in := inspect.DoctorInputs{Store: s.Reader, Codec: s.Planner.Codec, EncryptionConfig: s.g.EncryptionConfig}
	if s.IsFile() && len(s.g.ServersOverrides) > 0 {
		in.FileOverrides = session.OverridesString(s.g.ServersOverrides)
	}
	for _, r := range s.Routes {
		in.Routes = append(in.Routes, inspect.DoctorRoute{Override: r.Override.String(), Prefix: r.Prefix, Etcd: r.Etcd, Endpoints: r.Etcd.Endpoints()})
	}
	inspect.Doctor(e.ctx, &d.rep, in)
	return nil
}

// apiserver says whether writes can be verified with the apiserver: the
// kubeconfig found, whether it answers for this cluster, and whether its
// user may make the dry runs (RBAC).
func (d *doctor) apiserver(s *cliSession) {
	if s.g.Verify == verify.Never || s.IsFile() {
		d.report(inspect.CheckOK, "apiserver", "not used (--verify=never or --db): writes are not verified")
		return
	}
	v, err := newVerifier(&env{ctx: d.e.ctx, stdout: io.Discard, stderr: d.e.stderr, rawStdout: io.Discard, rawStderr: d.e.rawStderr, getenv: d.e.getenv}, s)
	if err != nil {
		d.report(inspect.CheckFail, "apiserver", "%v", err)
		return
	}
	inspect.CheckAPIServer(d.e.ctx, &d.rep, v)
}

// node finds the node's layout (--node) and names it and every file it
// took settings from; it reports whether settings were taken.
func (d *doctor) node(g *globalOptions) bool {
	if err := applyKubeadm(g); err != nil {
		d.report(inspect.CheckFail, "node", "%v", err)
		if h := hintFor(err); h != "" {
			d.report(inspect.CheckNote, "node", "hint: %s", h)
		}
		return false
	}
	f := g.NodeFound
	a := f.APIServer
	enc := a.EncryptionConfig
	if enc == "" {
		enc = "none"
	}
	d.report(inspect.CheckOK, "node", "%s node below %s: etcd %s, prefix %s, encryption config %s", f.Layout, f.Root, strings.Join(a.Endpoints, ","), a.Prefix, enc)
	for _, file := range f.Files {
		d.report(inspect.CheckOK, "node", "%s: %s", file.Role, file.Path)
	}
	for _, n := range f.Notes {
		d.report(inspect.CheckWarn, "node", "%s", n)
	}
	inspect.CheckManifestOverrides(&d.rep, g.ByFlag)
	for _, w := range g.kubeadmWarnings {
		d.report(inspect.CheckWarn, "node", "%s", w)
	}
	g.kubeadmWarnings = nil
	return true
}
