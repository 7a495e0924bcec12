package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is a CA, a kube-apiserver serving certificate it signed, and a
// service-account key pair, written as PEM files into one directory; and,
// signed by the same CA as a kubeadm control plane has them, an etcd
// certificate its members serve and peer with and a client certificate of
// etcd's (the kube-apiserver's and etcdpvc's).
type pki struct {
	caPEM                         []byte
	caCert                        string
	serverCert, serverKey         string
	saPub, saKey                  string
	etcdCert, etcdKey             string
	etcdClientCert, etcdClientKey string
}

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "etcdpvc-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	srvDER, srvKeyDER, err := leafCert(ca, caKey, 2, "kube-apiserver", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if err != nil {
		return nil, err
	}
	etcdDER, etcdKeyDER, err := leafCert(ca, caKey, 3, "etcd", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, "localhost")
	if err != nil {
		return nil, err
	}
	clientDER, clientKeyDER, err := leafCert(ca, caKey, 4, "kube-apiserver-etcd-client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	if err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}

	p := &pki{
		caPEM:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		caCert:     filepath.Join(dir, "ca.crt"),
		serverCert: filepath.Join(dir, "apiserver.crt"),
		serverKey:  filepath.Join(dir, "apiserver.key"),
		saPub:      filepath.Join(dir, "sa.pub"),
		saKey:      filepath.Join(dir, "sa.key"),

		etcdCert:       filepath.Join(dir, "etcd.crt"),
		etcdKey:        filepath.Join(dir, "etcd.key"),
		etcdClientCert: filepath.Join(dir, "etcd-client.crt"),
		etcdClientKey:  filepath.Join(dir, "etcd-client.key"),
	}
	saKeyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		path  string
		typ   string
		bytes []byte
	}{
		{p.caCert, "CERTIFICATE", caDER},
		{p.serverCert, "CERTIFICATE", srvDER},
		{p.serverKey, "EC PRIVATE KEY", srvKeyDER},
		{p.saKey, "EC PRIVATE KEY", saKeyDER},
		{p.saPub, "PUBLIC KEY", saPubDER},
		{p.etcdCert, "CERTIFICATE", etcdDER},
		{p.etcdKey, "EC PRIVATE KEY", etcdKeyDER},
		{p.etcdClientCert, "CERTIFICATE", clientDER},
		{p.etcdClientKey, "EC PRIVATE KEY", clientKeyDER},
	} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.bytes}), 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// leafCert issues a certificate of ca for 127.0.0.1 and dnsNames with
// usages, on a new key: the certificate's DER and the key's.
func leafCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, serial int64, cn string, usages []x509.ExtKeyUsage, dnsNames ...string) (certDER, keyDER []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)},
		DNSNames:     dnsNames,
	}
	if certDER, err = x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey); err != nil {
		return nil, nil, err
	}
	keyDER, err = x509.MarshalECPrivateKey(key)
	return certDER, keyDER, err
}
