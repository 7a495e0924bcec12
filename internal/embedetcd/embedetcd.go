// Package embedetcd runs a throwaway single-member etcd server in-process,
// with go.etcd.io/etcd/server/v3/embed, for `etcdpvc demo`: it keeps its
// data in a temporary directory, listens on free ports of 127.0.0.1 only,
// logs nothing, and removes everything when closed.
//
// It is not a test helper (see fixtures/etcdtest for those): it needs no
// testing.TB and reports failures as errors.
package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Options configures Start.
type Options struct {
	// Dir is the parent of the server's temporary data directory ("" for
	// the system's temporary directory).
	Dir string
	// ReadyTimeout bounds the wait for the server to serve (default 30s).
	ReadyTimeout time.Duration
}

// Server is a running etcd server.
type Server struct {
	etcd     *embed.Etcd
	dir      string
	endpoint string
}

// startAttempts is how many times Start tries again after losing a race
// for a port it picked.
const startAttempts = 5

// Start starts a single-member etcd with a new data directory and waits
// until it serves. Close stops it and removes the directory.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 30 * time.Second
	}
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var s *Server
		s, err = start(ctx, o)
		if err == nil {
			return s, nil
		}
		if !AddrInUse(err) {
			break
		}
	}
	return nil, fmt.Errorf("start embedded etcd: %w", err)
}

func start(ctx context.Context, o Options) (*Server, error) {
	dir, err := os.MkdirTemp(o.Dir, "etcdpvc-embedded-etcd-")
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	ports, err := FreePorts(2)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg := embed.NewConfig()
	cfg.Name = "etcdpvc-demo"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// A throwaway server: its data is worth nothing after Close.
	cfg.UnsafeNoFsync = true
	// The gateway keeps a connection to its own server that makes a
	// graceful stop wait for its full timeout.
	cfg.EnableGRPCGateway = false
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{etcd: e, dir: dir, endpoint: client.String()}
	timer := time.NewTimer(o.ReadyTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return s, nil
	case err := <-e.Err():
		s.Close()
		return nil, err
	case <-timer.C:
		s.Close()
		return nil, fmt.Errorf("not ready after %v", o.ReadyTimeout)
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
}

// Endpoints returns the server's client URL.
func (s *Server) Endpoints() []string { return []string{s.endpoint} }

// Dir returns the server's data directory.
func (s *Server) Dir() string { return s.dir }

// Close stops the server and removes its data directory.
func (s *Server) Close() error {
	s.etcd.Close()
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("remove embedded etcd data: %w", err)
	}
	return nil
}

// FreePorts returns n distinct ports on 127.0.0.1 that were free a moment
// ago (all n listeners are open at once, so they differ). A server started
// on them may still lose a race for one: retry when AddrInUse says so.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// AddrInUse reports whether err is a lost race for a port.
func AddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}
