// Package kmstest runs a minimal KMS v2 plugin for tests: the
// k8s.io/kms/apis/v2 KeyManagementService gRPC service on a unix socket,
// wrapping DEKs with AES-256-GCM under a fixed, public test key. It
// protects nothing and exists only so tests can exercise the apiserver's
// KMS v2 envelope transformer end to end.
package kmstest

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	kmsapi "k8s.io/kms/apis/v2"
)

// KeyID is the key ID the plugin reports in Status and Encrypt.
const KeyID = "test-key-1"

// testKEK is the plugin's fixed key-encryption key.
var testKEK = []byte("etcdpvc-kmstest-fixed-kek-32byte")

// Plugin is a running test KMS v2 plugin.
type Plugin struct {
	// Endpoint is the plugin's address for an EncryptionConfiguration,
	// "unix://<socket path>".
	Endpoint string

	server *grpc.Server
	done   chan struct{}

	mu       sync.Mutex
	encrypts int
	decrypts int
}

// Start listens on the unix socket at socketPath and serves the plugin
// until Stop.
func Start(socketPath string) (*Plugin, error) {
	block, err := aes.NewCipher(testKEK)
	if err != nil {
		return nil, fmt.Errorf("kmstest: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("kmstest: %w", err)
	}
	ln, err := net.Listen("unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("kmstest: listen: %w", err)
	}
	p := &Plugin{
		Endpoint: "unix://" + socketPath,
		server:   grpc.NewServer(),
		done:     make(chan struct{}),
	}
	kmsapi.RegisterKeyManagementServiceServer(p.server, &service{plugin: p, aead: aead})
	go func() {
		defer close(p.done)
		_ = p.server.Serve(ln)
	}()
	return p, nil
}

// Stop stops the server, closing its connections, and waits for it.
func (p *Plugin) Stop() {
	p.server.Stop()
	<-p.done
}

// Calls returns how many Encrypt and Decrypt calls the plugin served.
func (p *Plugin) Calls() (encrypts, decrypts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.encrypts, p.decrypts
}

type service struct {
	kmsapi.UnimplementedKeyManagementServiceServer
	plugin *Plugin
	aead   cipher.AEAD
}

func (s *service) Status(context.Context, *kmsapi.StatusRequest) (*kmsapi.StatusResponse, error) {
	return &kmsapi.StatusResponse{Version: "v2", Healthz: "ok", KeyId: KeyID}, nil
}

func (s *service) Encrypt(_ context.Context, req *kmsapi.EncryptRequest) (*kmsapi.EncryptResponse, error) {
	s.plugin.mu.Lock()
	s.plugin.encrypts++
	s.plugin.mu.Unlock()
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return &kmsapi.EncryptResponse{
		Ciphertext: s.aead.Seal(nonce, nonce, req.Plaintext, []byte(KeyID)),
		KeyId:      KeyID,
	}, nil
}

func (s *service) Decrypt(_ context.Context, req *kmsapi.DecryptRequest) (*kmsapi.DecryptResponse, error) {
	s.plugin.mu.Lock()
	s.plugin.decrypts++
	s.plugin.mu.Unlock()
	if req.KeyId != KeyID {
		return nil, fmt.Errorf("kmstest: unknown key ID %q", req.KeyId)
	}
	n := s.aead.NonceSize()
	if len(req.Ciphertext) < n {
		return nil, errors.New("kmstest: ciphertext too short")
	}
	pt, err := s.aead.Open(nil, req.Ciphertext[:n], req.Ciphertext[n:], []byte(KeyID))
	if err != nil {
		return nil, fmt.Errorf("kmstest: %w", err)
	}
	return &kmsapi.DecryptResponse{Plaintext: pt}, nil
}
