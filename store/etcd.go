package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcdpvc/etcdpvc/internal/regular"
)

// Defaults for EtcdConfig, as etcdctl has them.
const (
	DefaultEtcdEndpoint   = "127.0.0.1:2379"
	DefaultDialTimeout    = 2 * time.Second
	DefaultCommandTimeout = 5 * time.Second
	DefaultPageSize       = 500
)

// Consistency levels for EtcdConfig.Consistency, as etcdctl spells them.
const (
	// Linearizable reads go through the leader's read index: they see every
	// write acknowledged before the read started.
	Linearizable = "l"
	// Serializable reads are served from the local member's store, which
	// may lag; they work without a leader (for forensics on a broken
	// cluster).
	Serializable = "s"
)

// ErrLeaseNotFound means a put named a lease that has expired or been
// revoked; nothing was written. A key whose lease is gone is being deleted
// by etcd, so a caller must not silently write it without the lease.
var ErrLeaseNotFound = errors.New("lease not found (expired or revoked)")

// ErrTooLarge means etcd (or the client) refused a request as larger than
// it accepts (etcd's --max-request-bytes, 1.5 MiB by default; the client's
// send limit, 2 MiB); nothing was written.
var ErrTooLarge = errors.New("request is too large")

// MaxRequestBytes is etcd's default --max-request-bytes: the largest
// request, key and value and a little framing, a member accepts.
const MaxRequestBytes = 1536 * 1024

// EtcdConfig says how to reach a live etcd cluster. Its fields mirror
// etcdctl's flags.
type EtcdConfig struct {
	// Endpoints are client URLs (http://, https://) or host:port without a
	// scheme. Default DefaultEtcdEndpoint.
	Endpoints []string
	// CACert, Cert and Key are PEM files: the CA that signed the servers'
	// certificates and the client certificate and key.
	CACert, Cert, Key string
	// User and Password authenticate with etcd's auth (both or neither).
	User, Password string
	// InsecureSkipTLSVerify accepts any server certificate.
	InsecureSkipTLSVerify bool
	// DialTimeout bounds connecting (default 2s); CommandTimeout bounds each
	// RPC (default 5s), not a whole command made of many RPCs.
	DialTimeout, CommandTimeout time.Duration
	// Consistency is Linearizable ("l", the default) or Serializable ("s").
	Consistency string
}

// TLSEnabled reports whether the configuration talks TLS: an https://
// endpoint or any certificate flag turns it on, as in etcdctl.
func (c EtcdConfig) TLSEnabled() bool {
	if c.CACert != "" || c.Cert != "" || c.Key != "" || c.InsecureSkipTLSVerify {
		return true
	}
	for _, ep := range c.Endpoints {
		if strings.HasPrefix(ep, "https://") || strings.HasPrefix(ep, "unixs://") {
			return true
		}
	}
	return false
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("connect to etcd at %s: %v", strings.Join(e.Endpoints, ","), e.Cause)
}

// Unwrap returns ErrUnavailable and the cause.
func (e *ConnectError) Unwrap() []error { return []error{ErrUnavailable, e.Cause} }

// Etcd is the live backend: a clientv3 connection to an etcd cluster. It
// implements Reader and Writer and is safe for concurrent use.
type Etcd struct {
	// noStream is set once the server has answered RangeStream with
	// Unimplemented (etcd < 3.7).
	noStream atomic.Bool
	cli      *clientv3.Client
	cfg      EtcdConfig
	read     []clientv3.OpOption // consistency options of every read
	// clusterID is the cluster ID in the header of the connection probe.
	clusterID atomic.Uint64
	// kine is set when the endpoints are kine (detectKine).
	kine atomic.Bool
	// mu guards members: a client of each member, opened on first use
	// (memberConns).
	mu      sync.Mutex
	members []*memberConn
}

var (
	_ Reader = (*Etcd)(nil)
	_ Writer = (*Etcd)(nil)
)

// OpenEtcd connects to etcd and checks that it answers: one read, bounded
// by cfg.DialTimeout, so a wrong port, a TLS mismatch or a dead cluster
// fails fast with a *ConnectError instead of hanging in later calls. ctx
// bounds the connection attempt only.
func OpenEtcd(ctx context.Context, cfg EtcdConfig) (*Etcd, error) {
	if len(cfg.Endpoints) == 0 {
		cfg.Endpoints = []string{DefaultEtcdEndpoint}
	}
	cfg.Endpoints = append([]string(nil), cfg.Endpoints...)
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = DefaultCommandTimeout
	}
	var read []clientv3.OpOption
	switch cfg.Consistency {
	case "", Linearizable:
		cfg.Consistency = Linearizable
	case Serializable:
		read = []clientv3.OpOption{clientv3.WithSerializable()}
	default:
		return nil, fmt.Errorf("open etcd: consistency %q: want %q (linearizable) or %q (serializable)", cfg.Consistency, Linearizable, Serializable)
	}
	if (cfg.User == "") != (cfg.Password == "") {
		return nil, errors.New("open etcd: user and password go together")
	}
	tlsConfig, err := cfg.tlsConfig()
	if err != nil {
		return nil, fmt.Errorf("open etcd: %w", err)
	}

	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		TLS:         tlsConfig,
		Username:    cfg.User,
		Password:    cfg.Password,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		// With a user, New authenticates, which is the first RPC.
		if unavailable(err) {
			return nil, cfg.connectError(ctx, err)
		}
		return nil, fmt.Errorf("open etcd at %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	e := &Etcd{cli: cli, cfg: cfg, read: read}

	pctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	probe, err := cli.Get(pctx, "/", append([]clientv3.OpOption{clientv3.WithCountOnly()}, read...)...)
	if err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) { // a user may not read "/": still connected
		cli.Close()
		if unavailable(err) {
			return nil, cfg.connectError(ctx, err)
		}
		return nil, fmt.Errorf("open etcd at %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	if probe != nil && probe.Header != nil {
		e.clusterID.Store(probe.Header.ClusterId)
		if probe.Header.ClusterId == 0 {
			e.detectKine(pctx)
		}
	}
	return e, nil
}

// tlsConfig builds the client TLS configuration, or nil without TLS.
func (c EtcdConfig) tlsConfig() (*tls.Config, error) {
	if !c.TLSEnabled() {
		return nil, nil
	}
	if (c.Cert == "") != (c.Key == "") {
		return nil, errors.New("tls: client certificate and key go together")
	}
	for _, f := range []string{c.Cert, c.Key, c.CACert} {
		if f == "" {
			continue
		}
		// etcd's transport reads them itself: a FIFO would block it.
		if err := regular.Check(f); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	}
	info := transport.TLSInfo{
		CertFile:           c.Cert,
		KeyFile:            c.Key,
		TrustedCAFile:      c.CACert,
		InsecureSkipVerify: c.InsecureSkipTLSVerify,
	}
	tc, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	if c.InsecureSkipTLSVerify {
		tc.InsecureSkipVerify = true
	}
	return tc, nil
}

// http2Preface opens every HTTP/2 (and so gRPC) connection.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Client returns the underlying client, for what this type does not wrap.
func (e *Etcd) Client() *clientv3.Client { return e.cli }

// Endpoints returns the configured endpoints.
func (e *Etcd) Endpoints() []string { return append([]string(nil), e.cfg.Endpoints...) }

// Config returns the configuration in effect, defaults filled in.
func (e *Etcd) Config() EtcdConfig { return e.cfg }

// ClusterID returns the ID of the cluster connected to, as the header of
// the first response reported it, or asks for it with a member list when
// that response had none (a user not allowed to read "/").
func (e *Etcd) ClusterID(ctx context.Context) (uint64, error) {
	if id := e.clusterID.Load(); id != 0 {
		return id, nil
	}
	var resp *clientv3.MemberListResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.MemberList(ctx)
		return err
	})
	if err != nil {
		return 0, rpcError("member list", err)
	}
	if resp.Header == nil || resp.Header.ClusterId == 0 {
		return 0, errors.New("member list: the response names no cluster ID")
	}
	e.clusterID.Store(resp.Header.ClusterId)
	return resp.Header.ClusterId, nil
}

// Close closes the connection.
func (e *Etcd) Close() error {
	e.closeMembers()
	return e.cli.Close()
}

// maxRelists is how many compactions in a row List continues after
// without reading a key in between.
const maxRelists = 5

func (e *CompactedError) Error() string {
	return fmt.Sprintf("%s at revision %d: etcd compacted the revision while it was being read, after %d keys (the last %s): %v",
		e.Op, e.Revision, e.Read, e.Last, ErrCompacted)
}

// Unwrap returns ErrCompacted.
func (e *CompactedError) Unwrap() error { return ErrCompacted }

func (c *callbackError) Error() string { return c.err.Error() }

// progressInterval is how often History asks the server whether its watch
// has caught up.
const progressInterval = 100 * time.Millisecond

// Info returns the endpoints, the current revision (from a read's header)
// and the compact revision. etcd's Status does not report the compact
// revision; a read at revision 1 tells whether there is one, and a watch
// from revision 1 then reports it exactly (the server answers a watch on a
// compacted revision at once with the compact revision, without scanning).
func (e *Etcd) Info(ctx context.Context) (Info, error) {
	info := Info{Description: "etcd " + strings.Join(e.cfg.Endpoints, ",")}
	resp, err := e.get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		return info, rpcError("info", err)
	}
	info.Revision = resp.Header.Revision
	info.CompactRevision, err = e.compactRevision(ctx)
	if err != nil {
		return info, fmt.Errorf("info: %w", err)
	}
	// A compaction between the two reads may pass the revision read
	// first; the store's revision is at least its compact revision.
	info.Revision = max(info.Revision, info.CompactRevision)
	return info, nil
}

// Member is one member of the cluster, as MemberList reports it.
type Member struct {
	ID         uint64
	Name       string
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
}

// MemberList returns the cluster's members.
func (e *Etcd) MemberList(ctx context.Context) ([]Member, error) {
	var resp *clientv3.MemberListResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.MemberList(ctx)
		return err
	})
	if err != nil {
		return nil, rpcError("member list", err)
	}
	members := make([]Member, 0, len(resp.Members))
	for _, m := range resp.Members {
		members = append(members, Member{
			ID:         m.ID,
			Name:       m.Name,
			PeerURLs:   m.PeerURLs,
			ClientURLs: m.ClientURLs,
			IsLearner:  m.IsLearner,
		})
	}
	return members, nil
}

// EndpointStatus is one endpoint's answer to a status request.
type EndpointStatus struct {
	Endpoint string
	// Err is set when the endpoint did not answer; the other fields are
	// then zero.
	Err              error
	MemberID         uint64
	Leader           uint64
	Version          string
	Revision         int64
	RaftTerm         uint64
	RaftIndex        uint64
	RaftAppliedIndex uint64
	DBSize           int64
	DBSizeInUse      int64
	IsLearner        bool
	// Errors are the member's alarms and errors, as etcd reports them.
	Errors []string
}

// IsLeader reports whether the endpoint's member is the leader.
func (s EndpointStatus) IsLeader() bool {
	return s.Err == nil && s.MemberID != 0 && s.MemberID == s.Leader
}

// Status asks every configured endpoint for its status, each under
// CommandTimeout. Unreachable endpoints have Err set.
func (e *Etcd) Status(ctx context.Context) []EndpointStatus {
	out := make([]EndpointStatus, len(e.cfg.Endpoints))
	for i, ep := range e.cfg.Endpoints {
		out[i] = e.EndpointStatus(ctx, ep)
	}
	return out
}

// EndpointStatus asks endpoint ep (any member's client URL, dialled with
// the configured TLS) for its status, under CommandTimeout. When it does
// not answer, Err is set.
func (e *Etcd) EndpointStatus(ctx context.Context, ep string) EndpointStatus {
	out := EndpointStatus{Endpoint: ep}
	var resp *clientv3.StatusResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.Status(ctx, ep)
		return err
	})
	if err != nil {
		out.Err = rpcError("status "+ep, err)
		return out
	}
	out.MemberID = resp.Header.MemberId
	out.Leader = resp.Leader
	out.Version = resp.Version
	out.Revision = resp.Header.Revision
	out.RaftTerm = resp.RaftTerm
	out.RaftIndex = resp.RaftIndex
	out.RaftAppliedIndex = resp.RaftAppliedIndex
	out.DBSize = resp.DbSize
	out.DBSizeInUse = resp.DbSizeInUse
	out.IsLearner = resp.IsLearner
	out.Errors = resp.Errors
	return out
}

var _ Deleter = (*Etcd)(nil)
