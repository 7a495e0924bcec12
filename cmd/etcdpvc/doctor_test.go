package main

import (
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
		path, status, detail string
	}{
		{good, checkOK, `"good" valid until 2027-12-03T00:00:00Z (365d)`},
		{expired, checkFail, `"expired" expired at 2026-10-29T00:00:00Z (35d ago)`},
		{soon, checkWarn, `"soon" expires at 2026-12-13T00:00:00Z, in 10d: renew it`},
		{future, checkFail, "is not valid before 2026-12-04T00:00:00Z: check the clock"},
		{bundle, checkWarn, `2 certificates, the first to expire "soon" expires at`},
		{notPEM, checkFail, "holds no PEM certificate"},
		{filepath.Join(dir, "missing.crt"), checkFail, "cannot read"},
	} {
		status, detail := checkCertFile(tc.path, now, 30*day)
		if status != tc.status || !strings.Contains(detail, tc.detail) {
			t.Errorf("checkCertFile(%s) = %s %q, want %s with %q", filepath.Base(tc.path), status, detail, tc.status, tc.detail)
		}
	}
	_, otherKey := writeCert(t, dir, "other", now.Add(-day), now.Add(day))
	for _, tc := range []struct {
		cert, key, status, detail string
	}{
		{good, goodKey, checkOK, "is readable and matches the certificate"},
		{good, otherKey, checkFail, "does not go with"},
		{good, "", checkFail, "without --key"},
		{"", goodKey, checkFail, "without --cert"},
		{good, filepath.Join(dir, "missing.key"), checkFail, "cannot read"},
	} {
		status, detail := checkKeyPair(tc.cert, tc.key)
		if status != tc.status || !strings.Contains(detail, tc.detail) {
			t.Errorf("checkKeyPair(%q, %q) = %s %q, want %s with %q", tc.cert, tc.key, status, detail, tc.status, tc.detail)
		}
	}
}
