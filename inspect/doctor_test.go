package inspect

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// writeCert writes a self-signed certificate valid from notBefore to
// notAfter, and its key, and returns their paths.
func writeCert(t *testing.T, dir, name string, notBefore, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestDoctorCertificates(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	good, goodKey := writeCert(t, dir, "good", now.Add(-day), now.Add(365*day))
	expired, _ := writeCert(t, dir, "expired", now.Add(-400*day), now.Add(-35*day))
	soon, _ := writeCert(t, dir, "soon", now.Add(-day), now.Add(10*day))
	future, _ := writeCert(t, dir, "future", now.Add(day), now.Add(365*day))
	bundle := filepath.Join(dir, "bundle.crt")
	var b []byte
	for _, f := range []string{good, soon} {
		c, _ := os.ReadFile(f)
		b = append(b, c...)
	}
	if err := os.WriteFile(bundle, b, 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path   string
		status CheckStatus
		detail string
	}{
		{good, CheckOK, `"good" valid until 2027-12-03T00:00:00Z (365d)`},
		{expired, CheckFail, `"expired" expired at 2026-10-29T00:00:00Z (35d ago)`},
		{soon, CheckWarn, `"soon" expires at 2026-12-13T00:00:00Z, in 10d: renew it`},
		{future, CheckFail, "is not valid before 2026-12-04T00:00:00Z: check the clock"},
		{bundle, CheckWarn, `2 certificates, the first to expire "soon" expires at`},
		{notPEM, CheckFail, "holds no PEM certificate"},
		{filepath.Join(dir, "missing.crt"), CheckFail, "cannot read"},
	} {
		status, detail := CheckCertFile(tc.path, now, 30*day)
		if status != tc.status || !strings.Contains(detail, tc.detail) {
			t.Errorf("CheckCertFile(%s) = %s %q, want %s with %q", filepath.Base(tc.path), status, detail, tc.status, tc.detail)
		}
	}
	_, otherKey := writeCert(t, dir, "other", now.Add(-day), now.Add(day))
	for _, tc := range []struct {
		cert, key string
		status    CheckStatus
		detail    string
	}{
		{good, goodKey, CheckOK, "is readable and matches the certificate"},
		{good, otherKey, CheckFail, "does not go with"},
		{good, "", CheckFail, "without --key"},
		{"", goodKey, CheckFail, "without --cert"},
		{good, filepath.Join(dir, "missing.key"), CheckFail, "cannot read"},
	} {
		status, detail := CheckKeyPair(tc.cert, tc.key)
		if status != tc.status || !strings.Contains(detail, tc.detail) {
			t.Errorf("CheckKeyPair(%q, %q) = %s %q, want %s with %q", tc.cert, tc.key, status, detail, tc.status, tc.detail)
		}
	}
}

// TestDoctor runs the store checks against a real etcd: each step adds
// keys, and the statuses of the checks named follow.
func TestDoctor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	s, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name string
		put  map[string]string // key -> corpus file
		want map[string]CheckStatus
	}{
		{"empty", nil, map[string]CheckStatus{"members": CheckOK, "health": CheckOK, "prefix": CheckWarn, "encryption": CheckOK, "compaction": CheckOK}},
		{"plain objects", map[string]string{"/registry/configmaps/demo/web-config": "plain/configmaps__demo__web-config.bin"},
			map[string]CheckStatus{"prefix": CheckOK, "encryption": CheckOK}},
		{"encrypted Secret, no config", map[string]string{"/registry/secrets/demo/web-secret-enc": "encrypted/secrets__demo__web-secret-enc__aescbc.bin"},
			map[string]CheckStatus{"prefix": CheckOK, "encryption": CheckFail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, f := range tc.put {
				c.Put(t, k, corpus(t, f))
			}
			var rep DoctorReport
			Doctor(ctx, &rep, DoctorInputs{Store: s, Codec: kubevalue.Codec{Prefix: "/registry"}})
			got := map[string]CheckStatus{}
			for _, ch := range rep.Checks {
				if ch.Status == CheckNote {
					continue
				}
				// The worst status of each check name.
				if prev, ok := got[ch.Name]; !ok || prev == CheckOK || ch.Status == CheckFail {
					got[ch.Name] = ch.Status
				}
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("check %s = %q, want %q (report %+v)", name, got[name], want, rep.Checks)
				}
			}
			if want := tc.want["encryption"] == CheckFail; (rep.Failed() > 0) != want {
				t.Errorf("Failed() = %d, want failures %v", rep.Failed(), want)
			}
		})
	}
}
