package inspect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/internal/regular"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// CheckStatus is the outcome of one doctor check.
type CheckStatus string

// Check outcomes. A note explains the check before it and has no status.
const (
	CheckOK   CheckStatus = "OK"
	CheckWarn CheckStatus = "WARN"
	CheckFail CheckStatus = "FAIL"
	CheckNote CheckStatus = ""
)

// Check is one line of a doctor report.
type Check struct {
	Status CheckStatus
	// Name names the check: "members", "health", "encryption", ...
	Name   string
	Detail string
}

// DoctorReport is what the doctor checks found, in the order they ran.
type DoctorReport struct {
	Checks []Check
	// OnCheck, if set, is called with each check as it is added, so that
	// a terminal shows the checks as they run.
	OnCheck func(Check)
}

// Add records a check.
func (r *DoctorReport) Add(status CheckStatus, name, format string, args ...any) {
	c := Check{Status: status, Name: name, Detail: fmt.Sprintf(format, args...)}
	r.Checks = append(r.Checks, c)
	if r.OnCheck != nil {
		r.OnCheck(c)
	}
}

// Failed counts the failed checks.
func (r *DoctorReport) Failed() int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == CheckFail {
			n++
		}
	}
	return n
}

// CertInputs are the TLS files a connection to etcd will use.
type CertInputs struct {
	Endpoints         []string
	CACert, Cert, Key string
	// Now and ExpiryWarning: a certificate that expires within
	// ExpiryWarning of Now is a warning.
	Now           time.Time
	ExpiryWarning time.Duration
	// Renew says how to renew an expiring certificate ("": kubeadm's
	// "kubeadm certs renew").
	Renew string
}

// CheckCertificates checks the certificate files: readable, parsed, valid
// now and for ExpiryWarning more, the key matching the certificate.
func CheckCertificates(r *DoctorReport, in CertInputs) {
	if in.CACert == "" && in.Cert == "" && in.Key == "" {
		https := false
		for _, ep := range in.Endpoints {
			https = https || strings.HasPrefix(ep, "https://")
		}
		if https {
			r.Add(CheckWarn, "certificates", "https endpoints but no --cacert, --cert or --key: etcd's certificate is checked against the system's roots and no client certificate is sent (kubeadm's etcd requires one; try --kubeadm)")
		} else {
			r.Add(CheckOK, "certificates", "none configured: the endpoints are plain http")
		}
		return
	}
	for _, f := range []struct{ name, path string }{{"cacert", in.CACert}, {"cert", in.Cert}} {
		if f.path == "" {
			continue
		}
		status, detail := CheckCertFile(f.path, in.Now, in.ExpiryWarning)
		if in.Renew != "" {
			detail = strings.Replace(detail, "renew it (kubeadm certs renew)", "renew it ("+in.Renew+")", 1)
		}
		r.Add(status, f.name, "%s", detail)
	}
	if in.Cert != "" || in.Key != "" {
		status, detail := CheckKeyPair(in.Cert, in.Key)
		r.Add(status, "key", "%s", detail)
	}
}

// CheckCertFile reads a PEM certificate file (one certificate or a bundle)
// and reports its earliest expiry.
func CheckCertFile(path string, now time.Time, expiryWarning time.Duration) (CheckStatus, string) {
	data, err := regular.ReadFile(path)
	if err != nil {
		return CheckFail, fmt.Sprintf("cannot read %s: %v", path, err)
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
			return CheckFail, fmt.Sprintf("%s: a CERTIFICATE block does not parse: %v", path, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return CheckFail, fmt.Sprintf("%s holds no PEM certificate", path)
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
		return CheckFail, fmt.Sprintf("%s expired at %s (%s ago)", what, notAfter, HumanAge(now.Sub(first.NotAfter)))
	case now.Before(first.NotBefore):
		return CheckFail, fmt.Sprintf("%s is not valid before %s: check the clock", what, first.NotBefore.UTC().Format(time.RFC3339))
	case first.NotAfter.Sub(now) < expiryWarning:
		return CheckWarn, fmt.Sprintf("%s expires at %s, in %s: renew it (kubeadm certs renew)", what, notAfter, HumanAge(first.NotAfter.Sub(now)))
	}
	return CheckOK, fmt.Sprintf("%s valid until %s (%s)", what, notAfter, HumanAge(first.NotAfter.Sub(now)))
}

// CheckKeyPair checks that the client key is readable and matches the
// client certificate.
func CheckKeyPair(certFile, keyFile string) (CheckStatus, string) {
	switch {
	case certFile == "":
		return CheckFail, fmt.Sprintf("--key %s without --cert: a client key needs its certificate", keyFile)
	case keyFile == "":
		return CheckFail, fmt.Sprintf("--cert %s without --key: a client certificate needs its key", certFile)
	}
	if _, err := regular.ReadFile(keyFile); err != nil {
		return CheckFail, fmt.Sprintf("cannot read %s: %v", keyFile, err)
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		return CheckFail, fmt.Sprintf("%s does not go with %s: %v", keyFile, certFile, err)
	}
	return CheckOK, fmt.Sprintf("%s is readable and matches the certificate", keyFile)
}

// DoctorRoute is one --etcd-servers-overrides entry in use: a resource
// kept in another etcd.
type DoctorRoute struct {
	// Override is the entry as given ("group/resource#servers").
	Override string
	// Prefix is the resource's key prefix.
	Prefix string
	Etcd   store.Cluster
	// Endpoints are that etcd's endpoints.
	Endpoints []string
}

// DoctorInputs are what the store checks of Doctor read.
type DoctorInputs struct {
	// Store is the open store; store.AsCluster gives the members and
	// health checks of a live etcd.
	Store store.Reader
	// Codec opens a stored value (its Enc is the encryption config in
	// use, nil for none) and carries the etcd prefix.
	Codec kubevalue.Codec
	// EncryptionConfig is the config's path, for the report.
	EncryptionConfig string
	// Routes are the --etcd-servers-overrides in use (live etcd).
	Routes []DoctorRoute
	// FileOverrides, for a db file read with --etcd-servers-overrides
	// given, is those overrides: the file holds at most stale copies.
	FileOverrides string
}

// Doctor runs the checks of an open store: members and each endpoint's
// health (a live etcd), the --etcd-servers-overrides etcds, that the
// prefix holds keys, the encryption providers and whether the first
// stored Secret decrypts with them (and, when the first provider for
// secrets encrypts, how many Secrets are stored in the clear), and the
// compaction state. It writes nothing and adds its checks to r.
func Doctor(ctx context.Context, r *DoctorReport, in DoctorInputs) {
	if cl, ok := store.AsCluster(in.Store); ok {
		checkCluster(ctx, r, cl)
	}
	checkOverrides(ctx, r, in)
	prefix := in.Codec.Prefix + "/"
	var firstKey string
	_, err := in.Store.List(ctx, prefix, store.ListOptions{PageSize: 1, KeysOnly: true, OnCompacted: anyRevision}, func(kv *store.KeyValue) error {
		firstKey = kv.Key
		return errStopList
	})
	switch {
	case err != nil && !errors.Is(err, errStopList):
		r.Add(CheckFail, "prefix", "list %s: %v", prefix, err)
	case firstKey == "":
		r.Add(CheckWarn, "prefix", "no key under %s: is it the kube-apiserver's --etcd-prefix? (--prefix, or --kubeadm reads it)", prefix)
	default:
		r.Add(CheckOK, "prefix", "%s holds keys (first: %s)", in.Codec.Prefix, firstKey)
	}
	checkEncryption(ctx, r, in)
	info, err := in.Store.Info(ctx)
	switch {
	case err != nil:
		r.Add(CheckFail, "compaction", "%v", err)
	case info.CompactRevision == 0:
		r.Add(CheckOK, "compaction", "revision %d, never compacted: history and recover can see every revision", info.Revision)
	default:
		r.Add(CheckOK, "compaction", "revision %d, compacted at %d: history and recover see revisions %d to %d only", info.Revision, info.CompactRevision, info.CompactRevision, info.Revision)
	}
}

// kineDetector tells whether the endpoints are kine (store.Etcd).
type kineDetector interface{ Kine() bool }

// checkCluster reports a live etcd's members and each endpoint's health,
// or that the endpoints are kine.
func checkCluster(ctx context.Context, r *DoctorReport, cl store.Cluster) {
	if k, ok := cl.(kineDetector); ok && k.Kine() {
		checkKine(ctx, r, cl)
		return
	}
	members, err := cl.MemberList(ctx)
	if err != nil {
		r.Add(CheckFail, "members", "%v", err)
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
		status := CheckOK
		if learners > 0 {
			status = CheckWarn
		}
		r.Add(status, "members", "%d: %s", len(members), strings.Join(names, "; "))
	}
	leader := false
	for _, st := range cl.Status(ctx) {
		if st.Err != nil {
			r.Add(CheckFail, "health", "%s: %v", st.Endpoint, st.Err)
			continue
		}
		role := "follower"
		if st.IsLeader() {
			role, leader = "leader", true
		}
		if st.Leader == 0 {
			role = "no leader"
		}
		status := CheckOK
		detail := fmt.Sprintf("%s: etcd %s, %s, revision %d, raft term %d, db %s (%s in use)", st.Endpoint, st.Version, role, st.Revision, st.RaftTerm, HumanBytes(st.DBSize), HumanBytes(st.DBSizeInUse))
		if len(st.Errors) > 0 {
			status = CheckFail
			detail += ", alarms/errors: " + strings.Join(st.Errors, "; ")
		}
		if st.Leader == 0 {
			status = CheckFail
		}
		r.Add(status, "health", "%s", detail)
	}
	if !leader {
		r.Add(CheckWarn, "health", "no endpoint given is the leader: writes are forwarded to it")
	}
	checkAlarms(ctx, r, cl)
	if mh, ok := cl.(memberHasher); ok {
		checkMemberHashes(ctx, r, mh)
	}
}

// checkKine reports endpoints that are kine: the etcd API served from a
// SQL table, with no members, raft, alarms or hashes to check.
func checkKine(ctx context.Context, r *DoctorReport, cl store.Cluster) {
	r.Add(CheckWarn, "members", "kine, not etcd: the etcd API served from a SQL database (k3s's datastore); no members, leader, alarms or hashes to check, and a write of several keys is not all or nothing (docs/supported-versions.md)")
	for _, st := range cl.Status(ctx) {
		if st.Err != nil {
			r.Add(CheckFail, "health", "%s: %v", st.Endpoint, st.Err)
			continue
		}
		r.Add(CheckOK, "health", "%s: kine emulating etcd %s, db %s", st.Endpoint, st.Version, HumanBytes(st.DBSize))
	}
}

// alarmLister lists a cluster's alarms (store.Etcd).
type alarmLister interface {
	Alarms(ctx context.Context) ([]store.Alarm, error)
}

// checkAlarms reports the alarms raised in the cluster: NOSPACE points at
// `etcdpvc space`.
func checkAlarms(ctx context.Context, r *DoctorReport, cl store.Cluster) {
	l, ok := cl.(alarmLister)
	if !ok {
		return
	}
	alarms, err := l.Alarms(ctx)
	if err != nil {
		r.Add(CheckFail, "alarms", "%v", err)
		return
	}
	if len(alarms) == 0 {
		r.Add(CheckOK, "alarms", "none raised")
		return
	}
	for _, a := range alarms {
		if a.Type == "NOSPACE" {
			r.Add(CheckFail, "alarms", "NOSPACE raised by member %x: etcd refuses writes (mvcc: database space exceeded); `etcdpvc space` says why and the plan, `etcdpvc space --reclaim` carries it out", a.MemberID)
			continue
		}
		r.Add(CheckFail, "alarms", "%s raised by member %x", a.Type, a.MemberID)
	}
}

// memberHasher hashes each member's keyspace at one revision
// (store.Etcd.MemberHashes).
type memberHasher interface {
	MemberHashes(ctx context.Context) ([]store.MemberHash, int64, error)
}

// checkMemberHashes compares the members' hashes of their keyspace at one
// revision (etcd's HashKV, as `etcdctl endpoint hashkv --rev` gives it):
// members that apply the same log hold the same keys, and a member whose
// hash differs from the majority's diverged (restored from an old
// snapshot, a bad disk), whatever its status says.
func checkMemberHashes(ctx context.Context, r *DoctorReport, mh memberHasher) {
	hashes, rev, err := mh.MemberHashes(ctx)
	if err != nil {
		r.Add(CheckWarn, "hashkv", "the members could not be listed to compare their hashes: %v", err)
		return
	}
	if len(hashes) < 2 {
		return
	}
	groups := map[store.HashKV][]string{}
	compacts := map[int64]bool{}
	for _, h := range hashes {
		if h.Err != nil {
			r.Add(CheckWarn, "hashkv", "member %s: %v; it is not compared", h.Member.Name, h.Err)
			continue
		}
		groups[h.Hash] = append(groups[h.Hash], h.Member.Name)
		compacts[h.Hash.CompactRevision] = true
	}
	if len(compacts) > 1 {
		// A compaction was under way: hashes of different compactions
		// tell nothing.
		r.Add(CheckWarn, "hashkv", "the members hashed their keyspace at revision %d after different compactions (a compaction was under way): not compared; run doctor again", rev)
		return
	}
	if len(groups) == 1 {
		for h, names := range groups {
			r.Add(CheckOK, "hashkv", "%s hash their keyspace alike at revision %d (hashkv %d, compact revision %d)", strings.Join(names, ", "), rev, h.Hash, h.CompactRevision)
		}
		return
	}
	var majority store.HashKV
	found := false
	for h, names := range groups {
		if len(names) > len(hashes)/2 {
			majority, found = h, true
		}
	}
	for h, names := range groups {
		switch {
		case found && h == majority:
			r.Add(CheckOK, "hashkv", "%s: hashkv %d at revision %d (compact revision %d), the majority", strings.Join(names, ", "), h.Hash, rev, h.CompactRevision)
		case found:
			r.Add(CheckFail, "hashkv", "member %s diverged: hashkv %d at revision %d (compact revision %d), the majority's %d (compact revision %d); compare the members' keys with etcdpvc diff --members and repair it (the runbook diverged-member.md)", strings.Join(names, ", "), h.Hash, rev, h.CompactRevision, majority.Hash, majority.CompactRevision)
		default:
			r.Add(CheckFail, "hashkv", "%s: hashkv %d at revision %d (compact revision %d); no majority of the members hashes alike: compare their keys with etcdpvc diff --members", strings.Join(names, ", "), h.Hash, rev, h.CompactRevision)
		}
	}
}

// checkOverrides lists the --etcd-servers-overrides and checks each one's
// etcd.
func checkOverrides(ctx context.Context, r *DoctorReport, in DoctorInputs) {
	if in.FileOverrides != "" {
		r.Add(CheckWarn, "overrides", "%s: those resources live in other etcds; the --db file holds at most stale copies", in.FileOverrides)
		return
	}
	for _, rt := range in.Routes {
		r.Add(CheckOK, "overrides", "%s: keys under %s are read and written in etcd %s", rt.Override, rt.Prefix, strings.Join(rt.Endpoints, ","))
		for _, st := range rt.Etcd.Status(ctx) {
			switch {
			case st.Err != nil:
				r.Add(CheckFail, "overrides", "%s: %v", st.Endpoint, st.Err)
			case st.Leader == 0:
				r.Add(CheckFail, "overrides", "%s: etcd %s, no leader", st.Endpoint, st.Version)
			case len(st.Errors) > 0:
				r.Add(CheckFail, "overrides", "%s: etcd %s, alarms/errors: %s", st.Endpoint, st.Version, strings.Join(st.Errors, "; "))
			default:
				r.Add(CheckOK, "overrides", "%s: etcd %s, revision %d, db %s", st.Endpoint, st.Version, st.Revision, HumanBytes(st.DBSize))
			}
		}
	}
}

// checkEncryption reports the providers in use and tries them on the
// first stored Secret.
func checkEncryption(ctx context.Context, r *DoctorReport, in DoctorInputs) {
	var sample *store.KeyValue
	_, err := in.Store.List(ctx, in.Codec.Prefix+"/secrets/", store.ListOptions{PageSize: 1, OnCompacted: anyRevision}, func(kv *store.KeyValue) error {
		sample = kv
		return errStopList
	})
	if err != nil && !errors.Is(err, errStopList) {
		r.Add(CheckFail, "encryption", "read a Secret: %v", err)
		return
	}
	enc := in.Codec.Enc
	if enc == nil {
		switch {
		case sample != nil && codec.Detect(sample.Value) == codec.FormatEncrypted:
			env, _ := codec.ParseEncryptionHeader(sample.Value)
			r.Add(CheckFail, "encryption", "%s is encrypted at rest (%s) but no --encryption-config was given: encrypted objects can be neither read nor written (--kubeadm finds the config)", sample.Key, env.String())
		default:
			r.Add(CheckOK, "encryption", "no --encryption-config: values are read as stored; an encrypted one would fail to decode")
		}
		return
	}
	r.Add(CheckOK, "encryption", "config %s", in.EncryptionConfig)
	for _, gr := range []schema.GroupResource{
		{Resource: "secrets"}, {Resource: "configmaps"}, {Resource: "persistentvolumeclaims"}, {Group: "*", Resource: "*"},
	} {
		r.Add(CheckOK, "encryption", "%s: %s (writes use the first)", gr.String(), strings.Join(enc.Providers(gr), ", "))
	}
	if sample == nil {
		return
	}
	if _, err := in.Codec.Open(ctx, *sample); err != nil {
		r.Add(CheckFail, "encryption", "%s does not decrypt with this config: %v", sample.Key, err)
		return
	}
	r.Add(CheckOK, "encryption", "%s decrypts and decodes with this config", sample.Key)
	first := enc.Providers(schema.GroupResource{Resource: "secrets"})[0]
	if first == "identity" {
		return
	}
	const shown = 5
	c, err := SecretsInClear(ctx, in.Store, in.Codec.Prefix, shown)
	switch {
	case err != nil:
		r.Add(CheckFail, "encryption", "%v", err)
	case c.Clear == 0:
		r.Add(CheckOK, "encryption", "all %d Secrets are stored encrypted", c.Total)
	default:
		names := strings.Join(c.Names, ", ")
		if c.Clear > len(c.Names) {
			names += fmt.Sprintf(" and %d more", c.Clear-len(c.Names))
		}
		r.Add(CheckWarn, "encryption", "%d of %d Secrets are stored in the clear although the first provider for secrets is %s: %s", c.Clear, c.Total, first, names)
		r.Add(CheckNote, "encryption", "hint: rewrite them through the apiserver so it encrypts them: kubectl get secrets -A -o json | kubectl replace -f -")
	}
}

// HumanAge renders a duration as kubectl's AGE column does: 45s, 12m, 5h,
// 3d, 2y.
func HumanAge(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	case d < 2*365*24*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	default:
		return fmt.Sprintf("%dy", int(d.Hours()/24/365))
	}
}
