package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/kubeadm"
	"github.com/etcdpvc/etcdpvc/store"
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
			"revision, db size, alarms); that the prefix holds the apiserver's keys; the encryption\n" +
			"providers for secrets, configmaps, persistentvolumeclaims and *.*, whether the first stored\n" +
			"Secret can be read with them, and (when the first provider for secrets encrypts) how many\n" +
			"Secrets are still stored in the clear; and the compaction state, which bounds what history and\n" +
			"recover can still find. It writes nothing. The exit status is 1 when a check fails.",
		examples: `etcdpvc doctor --kubeadm
etcdpvc doctor --kubeadm --manifests-dir /etc/kubernetes/manifests
etcdpvc doctor --endpoints https://10.0.0.1:2379 --cacert ca.crt --cert client.crt --key client.key`,
		flags: []cli.Flag{
			&cli.DurationFlag{Name: "expiry-warning", Value: 30 * 24 * time.Hour, Usage: "warn about certificates that expire within this time"},
		},
		action: func(c *cli.Context, e *env) error {
			if c.NArg() > 0 {
				return usagef("doctor takes no arguments")
			}
			g, err := resolveGlobals(c, e)
			if err != nil {
				return err
			}
			return runDoctor(e, g, c.Duration("expiry-warning"))
		},
	}
}

// Check results.
const (
	checkOK   = "OK"
	checkWarn = "WARN"
	checkFail = "FAIL"
)

// doctor prints check results as they come.
type doctor struct {
	e      *env
	failed int
}

func (d *doctor) report(status, check, format string, args ...any) {
	if status == checkFail {
		d.failed++
	}
	fmt.Fprintf(d.e.stdout, "%-4s  %-12s  %s\n", status, check, fmt.Sprintf(format, args...))
}

// note prints a line that explains the check before it.
func (d *doctor) note(check, text string) {
	fmt.Fprintf(d.e.stdout, "%-4s  %-12s  %s\n", "", check, text)
}

// errStopList ends a List after the keys a check needs.
var errStopList = errors.New("enough keys")

func runDoctor(e *env, g *globalOptions, expiryWarning time.Duration) error {
	d := &doctor{e: e}
	d.manifest(g)
	d.certificates(g, time.Now(), expiryWarning)
	if err := d.connectAndInspect(g); err != nil {
		return err
	}
	if d.failed > 0 {
		return fmt.Errorf("doctor: %d check(s) failed", d.failed)
	}
	return nil
}

// manifest reads the kube-apiserver manifest and says which settings come
// from it.
func (d *doctor) manifest(g *globalOptions) {
	if !g.Kubeadm {
		if path := filepath.Join(g.ManifestsDir, kubeadm.ManifestName); fileExists(path) {
			d.report(checkWarn, "manifest", "%s exists but --kubeadm was not given: the connection settings come from flags and ETCDCTL_* only", path)
		}
		return
	}
	a, err := kubeadm.Read(g.ManifestsDir)
	if err != nil {
		d.report(checkFail, "manifest", "%v", err)
		return
	}
	enc := a.EncryptionConfig
	if enc == "" {
		enc = "none"
	}
	d.report(checkOK, "manifest", "%s: etcd %s, prefix %s, encryption config %s", a.Manifest, strings.Join(a.Endpoints, ","), a.Prefix, enc)
	for _, f := range []struct{ flag, env, manifest string }{
		{"endpoints", "ETCDCTL_ENDPOINTS", "--etcd-servers"},
		{"cacert", "ETCDCTL_CACERT", "--etcd-cafile"},
		{"cert", "ETCDCTL_CERT", "--etcd-certfile"},
		{"key", "ETCDCTL_KEY", "--etcd-keyfile"},
		{"prefix", "", "--etcd-prefix"},
		{"encryption-config", "", "--encryption-provider-config"},
		{"etcd-servers-overrides", "", "--etcd-servers-overrides"},
	} {
		// A flag overrides the manifest; an ETCDCTL_* variable does not
		// (the warnings below name those that disagree with it).
		if !g.explicit[f.flag] || g.fromEnvOnly(f.flag) {
			continue
		}
		d.report(checkWarn, "manifest", "--%s overrides the manifest's %s", f.flag, f.manifest)
	}
	if err := applyKubeadm(g); err != nil {
		d.report(checkFail, "manifest", "%v", err)
	}
	for _, w := range g.kubeadmWarnings {
		d.report(checkWarn, "manifest", "%s", w)
	}
	g.kubeadmWarnings = nil // reported here, not again on stderr
}

// certificates checks the TLS files the connection will use.
func (d *doctor) certificates(g *globalOptions, now time.Time, expiryWarning time.Duration) {
	if g.DB != "" {
		return
	}
	if g.CACert == "" && g.Cert == "" && g.Key == "" {
		https := false
		for _, ep := range g.Endpoints {
			https = https || strings.HasPrefix(ep, "https://")
		}
		if https {
			d.report(checkWarn, "certificates", "https endpoints but no --cacert, --cert or --key: etcd's certificate is checked against the system's roots and no client certificate is sent (kubeadm's etcd requires one; try --kubeadm)")
		} else {
			d.report(checkOK, "certificates", "none configured: the endpoints are plain http")
		}
		return
	}
	for _, f := range []struct{ name, path string }{{"cacert", g.CACert}, {"cert", g.Cert}} {
		if f.path == "" {
			continue
		}
		status, detail := checkCertFile(f.path, now, expiryWarning)
		d.report(status, f.name, "%s", detail)
	}
	if g.Cert != "" || g.Key != "" {
		status, detail := checkKeyPair(g.Cert, g.Key)
		d.report(status, "key", "%s", detail)
	}
}

// checkCertFile reads a PEM certificate file (one certificate or a bundle)
// and reports its earliest expiry.
func checkCertFile(path string, now time.Time, expiryWarning time.Duration) (status, detail string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return checkFail, fmt.Sprintf("cannot read %s: %v", path, err)
	}
	var certs []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return checkFail, fmt.Sprintf("%s: a CERTIFICATE block does not parse: %v", path, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return checkFail, fmt.Sprintf("%s holds no PEM certificate", path)
	}
	first := certs[0]
	for _, c := range certs[1:] {
		if c.NotAfter.Before(first.NotAfter) {
			first = c
		}
	}
	what := fmt.Sprintf("%s: %q", path, first.Subject.CommonName)
	if len(certs) > 1 {
		what = fmt.Sprintf("%s: %d certificates, the first to expire %q", path, len(certs), first.Subject.CommonName)
	}
	notAfter := first.NotAfter.UTC().Format(time.RFC3339)
	switch {
	case now.After(first.NotAfter):
		return checkFail, fmt.Sprintf("%s expired at %s (%s ago)", what, notAfter, humanAge(now.Sub(first.NotAfter)))
	case now.Before(first.NotBefore):
		return checkFail, fmt.Sprintf("%s is not valid before %s: check the clock", what, first.NotBefore.UTC().Format(time.RFC3339))
	case first.NotAfter.Sub(now) < expiryWarning:
		return checkWarn, fmt.Sprintf("%s expires at %s, in %s: renew it (kubeadm certs renew)", what, notAfter, humanAge(first.NotAfter.Sub(now)))
	}
	return checkOK, fmt.Sprintf("%s valid until %s (%s)", what, notAfter, humanAge(first.NotAfter.Sub(now)))
}

// checkKeyPair checks that the client key is readable and matches the
// client certificate.
func checkKeyPair(certFile, keyFile string) (status, detail string) {
	switch {
	case certFile == "":
		return checkFail, fmt.Sprintf("--key %s without --cert: a client key needs its certificate", keyFile)
	case keyFile == "":
		return checkFail, fmt.Sprintf("--cert %s without --key: a client certificate needs its key", certFile)
	}
	if _, err := os.ReadFile(keyFile); err != nil {
		return checkFail, fmt.Sprintf("cannot read %s: %v", keyFile, err)
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		return checkFail, fmt.Sprintf("%s does not go with %s: %v", keyFile, certFile, err)
	}
	return checkOK, fmt.Sprintf("%s is readable and matches the certificate", keyFile)
}

// connectAndInspect connects and checks the cluster. It returns an error
// only when it cannot go on.
func (d *doctor) connectAndInspect(g *globalOptions) error {
	e := d.e
	s, err := openSession(e, g)
	if err != nil {
		d.report(checkFail, "connect", "%v", err)
		if h := hintFor(err); h != "" {
			d.note("connect", "hint: "+h)
		}
		return fmt.Errorf("doctor: %d check(s) failed; the store cannot be opened, so the remaining checks were skipped: %w", d.failed, err)
	}
	defer s.Close()
	d.report(checkOK, "connect", "%s", s.description)
	d.apiserver(s)

	if s.etcd != nil {
		members, err := s.etcd.MemberList(e.ctx)
		if err != nil {
			d.report(checkFail, "members", "%v", err)
		} else {
			var names []string
			learners := 0
			for _, m := range members {
				n := fmt.Sprintf("%s %s", m.Name, strings.Join(m.ClientURLs, ","))
				if m.IsLearner {
					n += " (learner)"
					learners++
				}
				names = append(names, n)
			}
			status := checkOK
			if learners > 0 {
				status = checkWarn
			}
			d.report(status, "members", "%d: %s", len(members), strings.Join(names, "; "))
		}
		leader := false
		for _, st := range s.etcd.Status(e.ctx) {
			if st.Err != nil {
				d.report(checkFail, "health", "%s: %v", st.Endpoint, st.Err)
				continue
			}
			role := "follower"
			if st.IsLeader() {
				role, leader = "leader", true
			}
			if st.Leader == 0 {
				role = "no leader"
			}
			status := checkOK
			detail := fmt.Sprintf("%s: etcd %s, %s, revision %d, raft term %d, db %s (%s in use)", st.Endpoint, st.Version, role, st.Revision, st.RaftTerm, inspect.HumanBytes(st.DBSize), inspect.HumanBytes(st.DBSizeInUse))
			if len(st.Errors) > 0 {
				status = checkFail
				detail += ", alarms/errors: " + strings.Join(st.Errors, "; ")
			}
			if st.Leader == 0 {
				status = checkFail
			}
			d.report(status, "health", "%s", detail)
		}
		if !leader {
			d.report(checkWarn, "health", "no endpoint given is the leader: writes are forwarded to it")
		}
	}

	d.overrides(s)

	prefix := s.g.Prefix + "/"
	var firstKey string
	_, err = s.reader.List(e.ctx, prefix, store.ListOptions{PageSize: 1, KeysOnly: true}, func(kv *store.KeyValue) error {
		firstKey = kv.Key
		return errStopList
	})
	switch {
	case err != nil && !errors.Is(err, errStopList):
		d.report(checkFail, "prefix", "list %s: %v", prefix, err)
	case firstKey == "":
		d.report(checkWarn, "prefix", "no key under %s: is it the kube-apiserver's --etcd-prefix? (--prefix, or --kubeadm reads it)", prefix)
	default:
		d.report(checkOK, "prefix", "%s holds keys (first: %s)", s.g.Prefix, firstKey)
	}

	d.encryption(s)

	info, err := s.reader.Info(e.ctx)
	switch {
	case err != nil:
		d.report(checkFail, "compaction", "%v", err)
	case info.CompactRevision == 0:
		d.report(checkOK, "compaction", "revision %d, never compacted: history and recover can see every revision", info.Revision)
	default:
		d.report(checkOK, "compaction", "revision %d, compacted at %d: history and recover see revisions %d to %d only", info.Revision, info.CompactRevision, info.CompactRevision, info.Revision)
	}
	return nil
}

// overrides lists the --etcd-servers-overrides and checks each one's etcd.
func (d *doctor) overrides(s *session) {
	if s.bolt != nil && len(s.g.ServersOverrides) > 0 {
		d.report(checkWarn, "overrides", "%s: those resources live in other etcds; the --db file holds at most stale copies", overridesString(s.g.ServersOverrides))
		return
	}
	for _, r := range s.routes {
		d.report(checkOK, "overrides", "%s: keys under %s are read and written in etcd %s", r.override, r.prefix, strings.Join(r.etcd.Endpoints(), ","))
		for _, st := range r.etcd.Status(d.e.ctx) {
			switch {
			case st.Err != nil:
				d.report(checkFail, "overrides", "%s: %v", st.Endpoint, st.Err)
			case st.Leader == 0:
				d.report(checkFail, "overrides", "%s: etcd %s, no leader", st.Endpoint, st.Version)
			case len(st.Errors) > 0:
				d.report(checkFail, "overrides", "%s: etcd %s, alarms/errors: %s", st.Endpoint, st.Version, strings.Join(st.Errors, "; "))
			default:
				d.report(checkOK, "overrides", "%s: etcd %s, revision %d, db %s", st.Endpoint, st.Version, st.Revision, inspect.HumanBytes(st.DBSize))
			}
		}
	}
}

// encryption reports the providers in use and tries them on the first
// stored Secret.
func (d *doctor) encryption(s *session) {
	e := d.e
	var sample *store.KeyValue
	_, err := s.reader.List(e.ctx, s.g.Prefix+"/secrets/", store.ListOptions{PageSize: 1}, func(kv *store.KeyValue) error {
		sample = kv
		return errStopList
	})
	if err != nil && !errors.Is(err, errStopList) {
		d.report(checkFail, "encryption", "read a Secret: %v", err)
		return
	}
	if s.enc == nil {
		switch {
		case sample != nil && codec.Detect(sample.Value) == codec.FormatEncrypted:
			env, _ := codec.ParseEncryptionHeader(sample.Value)
			d.report(checkFail, "encryption", "%s is encrypted at rest (%s) but no --encryption-config was given: encrypted objects can be neither read nor written (--kubeadm finds the config)", sample.Key, env.String())
		default:
			d.report(checkOK, "encryption", "no --encryption-config: values are read as stored; an encrypted one would fail to decode")
		}
		return
	}
	d.report(checkOK, "encryption", "config %s", s.g.EncryptionConfig)
	for _, gr := range []schema.GroupResource{
		{Resource: "secrets"}, {Resource: "configmaps"}, {Resource: "persistentvolumeclaims"}, {Group: "*", Resource: "*"},
	} {
		d.report(checkOK, "encryption", "%s: %s (writes use the first)", gr.String(), strings.Join(s.enc.Providers(gr), ", "))
	}
	if sample == nil {
		return
	}
	if _, err := s.planner.Open(e.ctx, *sample); err != nil {
		d.report(checkFail, "encryption", "%s does not decrypt with this config: %v", sample.Key, err)
	} else {
		d.report(checkOK, "encryption", "%s decrypts and decodes with this config", sample.Key)
	}
	d.secretsInClear(s)
}

// secretsInClear warns about Secrets stored in the clear when the first
// provider for secrets encrypts: they are not protected until rewritten.
func (d *doctor) secretsInClear(s *session) {
	first := s.enc.Providers(schema.GroupResource{Resource: "secrets"})[0]
	if first == "identity" {
		return
	}
	const shown = 5
	c, err := inspect.SecretsInClear(d.e.ctx, s.reader, s.g.Prefix, shown)
	switch {
	case err != nil:
		d.report(checkFail, "encryption", "%v", err)
	case c.Clear == 0:
		d.report(checkOK, "encryption", "all %d Secrets are stored encrypted", c.Total)
	default:
		names := strings.Join(c.Names, ", ")
		if c.Clear > len(c.Names) {
			names += fmt.Sprintf(" and %d more", c.Clear-len(c.Names))
		}
		d.report(checkWarn, "encryption", "%d of %d Secrets are stored in the clear although the first provider for secrets is %s: %s", c.Clear, c.Total, first, names)
		d.note("encryption", "hint: rewrite them through the apiserver so it encrypts them: kubectl get secrets -A -o json | kubectl replace -f -")
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// apiserver says whether writes can be verified with the apiserver: the
// kubeconfig found, whether it answers for this cluster, and whether its
// user may make the dry runs (RBAC).
func (d *doctor) apiserver(s *session) {
	if s.g.Verify == verify.Never || s.bolt != nil {
		d.report(checkOK, "apiserver", "not used (--verify=never or --db): writes are not verified")
		return
	}
	v, err := newVerifier(&env{ctx: d.e.ctx, stdout: io.Discard, stderr: d.e.stderr, getenv: d.e.getenv}, s)
	if err != nil {
		d.report(checkFail, "apiserver", "%v", err)
		return
	}
	if reach, why := v.Reach(); reach != verify.Reachable {
		d.report(checkWarn, "apiserver", "writes will not be verified: %s", why)
		return
	}
	refused, err := v.Permitted(d.e.ctx)
	switch {
	case err != nil:
		d.report(checkWarn, "apiserver", "%s answers, but the user's permissions cannot be checked: %v", v.Host(), err)
	case len(refused) > 0:
		d.report(checkWarn, "apiserver", "%s answers, but the kubeconfig's user may not %s persistentvolumeclaims: writes cannot be verified", v.Host(), strings.Join(refused, " or "))
	default:
		d.report(checkOK, "apiserver", "%s answers for this cluster; writes will be verified", v.Host())
	}
}
