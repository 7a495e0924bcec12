package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// etcdTLS is the etcd CA of a cluster started with ClusterOptions.EtcdTLS,
// apart from the kube-apiserver's as every distribution keeps it, with
// the certificate etcd serves on 127.0.0.1 and a client certificate, each
// a PEM file in one directory.
type etcdTLS struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	client                *tls.Config // the harness's own client's
}

// newEtcdTLS writes an etcd CA, its serving and its client certificate
// into dir.
func newEtcdTLS(dir string) (*etcdTLS, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcdpvc-e2e-etcd-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	e := &etcdTLS{
		CA:         filepath.Join(dir, "etcd-ca.crt"),
		ServerCert: filepath.Join(dir, "etcd-server.crt"), ServerKey: filepath.Join(dir, "etcd-server.key"),
		ClientCert: filepath.Join(dir, "etcd-client.crt"), ClientKey: filepath.Join(dir, "etcd-client.key"),
	}
	if err := writePEM(e.CA, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	for i, leaf := range []struct {
		cn        string
		usage     x509.ExtKeyUsage
		cert, key string
	}{
		{"etcd", x509.ExtKeyUsageServerAuth, e.ServerCert, e.ServerKey},
		{"kube-apiserver-etcd-client", x509.ExtKeyUsageClientAuth, e.ClientCert, e.ClientKey},
	} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(2 + i)), Subject: pkix.Name{CommonName: leaf.cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{leaf.usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		if err := writePEM(leaf.cert, "CERTIFICATE", der); err != nil {
			return nil, err
		}
		if err := writePEM(leaf.key, "EC PRIVATE KEY", keyDER); err != nil {
			return nil, err
		}
	}
	pair, err := tls.LoadX509KeyPair(e.ClientCert, e.ClientKey)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	e.client = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}
	return e, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// setupEtcdTLS makes the cluster's etcd CA when its options ask for TLS.
func (c *Cluster) setupEtcdTLS() error {
	if !c.opts.EtcdTLS {
		return nil
	}
	if c.opts.EtcdMembers > 1 {
		return errors.New("ClusterOptions.EtcdTLS is for one member only")
	}
	var err error
	c.EtcdTLS, err = newEtcdTLS(filepath.Join(c.Dir, "etcd-pki"))
	return err
}

// etcdScheme is the scheme of etcd's client URL.
func (c *Cluster) etcdScheme() string {
	if c.EtcdTLS != nil {
		return "https"
	}
	return "http"
}

// etcdServerFlags are etcd's flags for TLS with client-certificate auth.
func (c *Cluster) etcdServerFlags() []string {
	if c.EtcdTLS == nil {
		return nil
	}
	e := c.EtcdTLS
	return []string{"--cert-file", e.ServerCert, "--key-file", e.ServerKey, "--trusted-ca-file", e.CA, "--client-cert-auth"}
}

// apiserverEtcdFlags are the kube-apiserver's flags for its etcd client
// certificate.
func (c *Cluster) apiserverEtcdFlags() []string {
	if c.EtcdTLS == nil {
		return nil
	}
	e := c.EtcdTLS
	return []string{"--etcd-cafile", e.CA, "--etcd-certfile", e.ClientCert, "--etcd-keyfile", e.ClientKey}
}

// etcdClientTLS is the harness's etcd client's TLS config (nil for HTTP).
func (c *Cluster) etcdClientTLS() *tls.Config {
	if c.EtcdTLS == nil {
		return nil
	}
	return c.EtcdTLS.client.Clone()
}
