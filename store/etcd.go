package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// CompareAndSwapSize returns an upper bound of the size etcd counts against
// --max-request-bytes for CompareAndSwap's transaction: the value, the key
// (which the transaction names three times) and the framing (the
// transaction's and raft's, an auth user name included).
func CompareAndSwapSize(key string, value []byte) int {
	return len(value) + 3*len(key) + 512
}

// tooLarge reports whether err is a refusal of a request by its size: etcd's
// ErrRequestTooLarge, or a gRPC message size limit (ResourceExhausted
// "message larger than max"; etcd's other ResourceExhausted errors, such as
// "database space exceeded", are not about size).
func tooLarge(err error) bool {
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) {
		return true
	}
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.ResourceExhausted && strings.Contains(s.Message(), "larger than max")
}

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

// ConnectError reports that no endpoint could be reached. It matches
// ErrUnavailable and unwraps to Cause, so a CLI can add a hint (wrong port?
// TLS mismatch?) by inspecting it.
type ConnectError struct {
	// Endpoints are the endpoints tried.
	Endpoints []string
	// TLS says whether the client spoke TLS.
	TLS bool
	// Cause is the most specific reason found, such as a refused
	// connection, a TLS handshake failure or a timeout.
	Cause error
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

// connectError builds the *ConnectError for a failed first contact. gRPC
// often reports only a timeout, so each endpoint is probed directly (TCP,
// then a TLS handshake), all at once and within half the dial timeout, for
// a more specific cause.
func (c EtcdConfig) connectError(ctx context.Context, rpcErr error) *ConnectError {
	ce := &ConnectError{Endpoints: c.Endpoints, TLS: c.TLSEnabled(), Cause: cleanRPCError(rpcErr)}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.DialTimeout/2)
	defer cancel()
	causes := make([]error, len(c.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range c.Endpoints {
		wg.Go(func() { causes[i] = c.probe(ctx, ep) })
	}
	wg.Wait()
	// Each cause found is wrapped, so that a caller can tell a TLS
	// mismatch (ErrNotTLS, ErrWantsTLS) from the rest.
	var format []string
	var args []any
	for i, cause := range causes {
		switch {
		case cause == nil:
		case len(c.Endpoints) == 1: // the message names it already
			format, args = append(format, "%w"), append(args, cause)
		default:
			format, args = append(format, "%s: %w"), append(args, c.Endpoints[i], cause)
		}
	}
	if len(format) > 0 {
		ce.Cause = fmt.Errorf(strings.Join(format, "; ")+" (%w)", append(args, ce.Cause)...)
	}
	return ce
}

// http2Preface opens every HTTP/2 (and so gRPC) connection.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// probe dials ep and, for TLS, shakes hands and waits for the server's
// first frame (a server that rejects the client certificate says so only
// then); without TLS it checks whether the server expects TLS. It returns
// nil when it finds nothing wrong; a TLS mismatch wraps ErrNotTLS or
// ErrWantsTLS.
func (c EtcdConfig) probe(ctx context.Context, ep string) error {
	addr, secure, ok := endpointAddr(ep)
	if !ok {
		return nil
	}
	secure = secure || (c.TLSEnabled() && !strings.Contains(ep, "://"))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			err = op.Err // drop "dial tcp 127.0.0.1:1:", the endpoint is named
		}
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if !secure {
		// Does the server answer a TLS hello?
		tc := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}} //nolint:gosec // a probe, no data sent
		if err := tls.Client(conn, tc).HandshakeContext(ctx); err == nil || isTLSAlert(err) {
			return fmt.Errorf("%w, and the client spoke plaintext", ErrWantsTLS)
		}
		return nil
	}
	tc, err := c.tlsConfig()
	if err != nil || tc == nil {
		return nil
	}
	tc = tc.Clone()
	if tc.ServerName == "" {
		tc.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc.NextProtos = []string{"h2"}
	tconn := tls.Client(conn, tc)
	if err := tconn.HandshakeContext(ctx); err != nil {
		if !isTLSAlert(err) && speaksPlainHTTP2(ctx, addr) {
			return fmt.Errorf("%w (it answers plaintext gRPC), and the client spoke TLS", ErrNotTLS)
		}
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) {
			return fmt.Errorf("%w (it answered bytes that are no TLS record), and the client spoke TLS", ErrNotTLS)
		}
		return err
	}
	if _, err := tconn.Write([]byte(http2Preface)); err != nil {
		return err
	}
	if _, err := tconn.Read(make([]byte, 1)); err != nil && isTLSAlert(err) {
		return err
	}
	return nil
}

// speaksPlainHTTP2 reports whether the server at addr answers a plaintext
// HTTP/2 preface with a SETTINGS frame, as a plaintext gRPC server does.
func speaksPlainHTTP2(ctx context.Context, addr string) bool {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	// The preface, then an empty SETTINGS frame (length 0, type 4).
	if _, err := conn.Write(append([]byte(http2Preface), 0, 0, 0, 4, 0, 0, 0, 0, 0)); err != nil {
		return false
	}
	var hdr [9]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return false
	}
	return hdr[3] == 4 // frame type SETTINGS
}

// isTLSAlert reports whether err is an alert from a TLS server (such as
// "certificate required"), which proves the server speaks TLS.
func isTLSAlert(err error) bool {
	var alert tls.AlertError
	return errors.As(err, &alert) || strings.Contains(err.Error(), "remote error: tls:")
}

// endpointAddr returns the host:port of a TCP endpoint and whether its
// scheme asks for TLS.
func endpointAddr(ep string) (addr string, secure, ok bool) {
	if !strings.Contains(ep, "://") {
		return ep, false, true
	}
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" {
		return "", false, false
	}
	switch u.Scheme {
	case "http":
		return u.Host, false, true
	case "https":
		return u.Host, true, true
	}
	return "", false, false
}

// unavailable reports whether err means the cluster could not be reached or
// did not answer in time.
func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, rpctypes.ErrTimeout) ||
		errors.Is(err, rpctypes.ErrNoLeader) || errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail) ||
		errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// cleanRPCError turns a gRPC status error into an error with its message
// only ("rpc error: code = ... desc =" says nothing to a user).
func cleanRPCError(err error) error {
	if s, ok := status.FromError(err); ok && s.Code() != codes.OK {
		if s.Code() == codes.DeadlineExceeded && s.Message() == context.DeadlineExceeded.Error() {
			return context.DeadlineExceeded
		}
		return errors.New(s.Message())
	}
	return err
}

// rpcError wraps an RPC error with op and the sentinel it means.
func rpcError(op string, err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%s: %w", op, ErrCompacted)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%s: revision is newer than the store's: %w", op, err)
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return fmt.Errorf("%s: %w", op, ErrLeaseNotFound)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", op, err)
	case unavailable(err):
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, cleanRPCError(err))
	}
	return fmt.Errorf("%s: %w", op, err)
}

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
func (e *Etcd) Close() error { return e.cli.Close() }

// rpc runs one RPC under CommandTimeout.
func (e *Etcd) rpc(ctx context.Context, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.CommandTimeout)
	defer cancel()
	return fn(ctx)
}

// get runs one range request with the configured consistency.
func (e *Etcd) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	var resp *clientv3.GetResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.Get(ctx, key, append(append([]clientv3.OpOption(nil), opts...), e.read...)...)
		return err
	})
	return resp, err
}

// Get returns key at revision rev (0: latest), read with the configured
// consistency. A missing key gives an error wrapping ErrNotFound; a
// compacted revision one wrapping ErrCompacted.
func (e *Etcd) Get(ctx context.Context, key string, rev int64) (*KeyValue, error) {
	op := "get " + key
	if rev > 0 {
		op = fmt.Sprintf("get %s at revision %d", key, rev)
	}
	resp, err := e.get(ctx, key, clientv3.WithRev(rev))
	if err != nil {
		return nil, rpcError(op, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	return keyValue(resp.Kvs[0], true), nil
}

// List reads the keys under prefix page by page, each page continuing from
// the last key + "\x00" and pinned to one revision (the first page's, or
// opts.Revision).
//
// A compaction past that revision while the list runs (kube-apiserver
// compacts every 5 minutes) fails the next page. With opts.OnCompacted set
// and opts.Revision 0, List then continues from the key after the last one
// it handed fn, at the store's current revision, as kube-apiserver's
// reflectors relist: every key is handed over once, each as of the
// revision its page was read at, and OnCompacted is told each revision
// the read moves to. The page after a compaction is read at the latest
// revision, which no compaction can remove, and pins the pages after it:
// the read always moves on (maxRelists bounds compactions met in a row
// without a key read, which that leaves for a store that loses pages).
// Otherwise a compaction after some keys were handed over fails List with
// a *CompactedError (which matches ErrCompacted), saying how far it got.
//
// Each page is read without making the server count the rest of the range.
// A unary Range with a limit makes etcd count every remaining key in the
// range on every page, so paging N keys costs O(N²/page) server CPU (on
// 100k keys that was 80% of the listing time, and it grows quadratically:
// the last thing a sick cluster needs). On etcd ≥ 3.7 a page is therefore
// read with the RangeStream RPC, which the server answers in chunks from
// short read transactions and never counts; the client stops the stream as
// soon as it has the page. An older etcd answers Unimplemented and pages
// fall back to unary Range requests.
//
// It returns the revision the list started at.
func (e *Etcd) List(ctx context.Context, prefix string, opts ListOptions, fn func(*KeyValue) error) (int64, error) {
	op := "list " + prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return 0, fmt.Errorf("list %q: prefix must end in \"/\" (use get for a single key)", prefix)
	}
	start, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	if prefix == "" {
		start, end = "\x00", "\x00" // every key: [\x00, ∞)
	}
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	rev := opts.Revision
	if rev == 0 {
		// Pin every page to the current revision: a single-key read is the
		// cheapest way to learn it.
		resp, err := e.get(ctx, start)
		if err != nil {
			return 0, rpcError(op, err)
		}
		rev = resp.Header.Revision
	}
	first := rev
	var (
		read    int64  // keys handed to fn
		lastKey string // the last of them
		relists int    // compactions met since a key was last handed over
	)
	count := func(kv *KeyValue) error {
		if err := fn(kv); err != nil {
			return err
		}
		read++
		lastKey = kv.Key
		relists = 0
		return nil
	}
	stream := !e.noStream.Load()
	// relist: the last page met a compaction; the next is read at the
	// latest revision (a compaction cannot remove it), which then pins
	// the rest.
	relist := false
	for {
		var (
			last string
			more bool
			err  error
		)
		if relist {
			var at int64
			last, more, at, err = e.rangePage(ctx, start, end, 0, pageSize, opts.KeysOnly, count)
			if err == nil {
				relist = false
				opts.OnCompacted(rev, at)
				rev = at
			}
		} else if stream {
			last, more, err = e.streamPage(ctx, start, end, rev, pageSize, opts.KeysOnly, count)
			if status.Code(errors.Unwrap(err)) == codes.Unimplemented || status.Code(err) == codes.Unimplemented {
				e.noStream.Store(true)
				stream = false
				continue
			}
		} else {
			last, more, _, err = e.rangePage(ctx, start, end, rev, pageSize, opts.KeysOnly, count)
		}
		if err != nil {
			var cb *callbackError
			if errors.As(err, &cb) {
				return first, fmt.Errorf("%s: %w", op, cb.err)
			}
			if !errors.Is(err, rpctypes.ErrCompacted) {
				return first, rpcError(fmt.Sprintf("%s at revision %d", op, rev), err)
			}
			if read > 0 {
				start = lastKey + "\x00"
			}
			if opts.OnCompacted == nil || opts.Revision != 0 {
				if read == 0 {
					return first, rpcError(fmt.Sprintf("%s at revision %d", op, rev), err)
				}
				return first, &CompactedError{Op: op, Revision: rev, Read: read, Last: lastKey}
			}
			if relists++; relists > maxRelists {
				return first, fmt.Errorf("%s: etcd compacted each revision read %d times in a row before a key could be read: %w", op, maxRelists, ErrCompacted)
			}
			relist = true
			continue
		}
		if !more {
			return first, nil
		}
		start = last + "\x00"
	}
}

// maxRelists is how many compactions in a row List continues after
// without reading a key in between.
const maxRelists = 5

// CompactedError is a List of one revision that etcd compacted away after
// part of it had been handed to the callback: Read keys, up to Last, were
// read at Revision; the rest of that revision is gone. It matches
// ErrCompacted.
type CompactedError struct {
	// Op is the read ("list /registry/").
	Op       string
	Revision int64
	Read     int64
	Last     string
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("%s at revision %d: etcd compacted the revision while it was being read, after %d keys (the last %s): %v",
		e.Op, e.Revision, e.Read, e.Last, ErrCompacted)
}

// Unwrap returns ErrCompacted.
func (e *CompactedError) Unwrap() error { return ErrCompacted }

// callbackError carries an error returned by List's callback, so that it
// is not mistaken for an RPC error.
type callbackError struct{ err error }

func (c *callbackError) Error() string { return c.err.Error() }

// rangePage reads one page with a unary Range.
// rangePage reads one page with a unary range at rev (0: the latest, which
// no compaction can remove; at is then the revision read).
func (e *Etcd) rangePage(ctx context.Context, start, end string, rev, pageSize int64, keysOnly bool, fn func(*KeyValue) error) (last string, more bool, at int64, err error) {
	ropts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize), clientv3.WithRev(rev)}
	if keysOnly {
		ropts = append(ropts, clientv3.WithKeysOnly())
	}
	resp, err := e.get(ctx, start, ropts...)
	if err != nil {
		return "", false, 0, err
	}
	for _, kv := range resp.Kvs {
		if err := fn(keyValue(kv, !keysOnly)); err != nil {
			return "", false, 0, &callbackError{err}
		}
	}
	at = resp.Header.Revision
	if !resp.More || len(resp.Kvs) == 0 {
		return "", false, at, nil
	}
	return string(resp.Kvs[len(resp.Kvs)-1].Key), true, at, nil
}

// streamPage reads one page of at most pageSize keys with a RangeStream
// and stops the stream when the page is full. more is true when the page
// filled up before the range ended. A stream that fails part way returns
// the last key handed to fn with the error.
func (e *Etcd) streamPage(ctx context.Context, start, end string, rev, pageSize int64, keysOnly bool, fn func(*KeyValue) error) (last string, more bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.CommandTimeout)
	defer cancel()
	ropts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithRev(rev)}
	if keysOnly {
		ropts = append(ropts, clientv3.WithKeysOnly())
	}
	ch, err := e.cli.GetStream(ctx, start, append(ropts, e.read...)...)
	if err != nil {
		return "", false, err
	}
	// drain lets the stream's goroutine finish after a cancel.
	drain := func() {
		cancel()
		for range ch {
		}
	}
	var n int64
	for r := range ch {
		if err := r.Err(); err != nil {
			drain()
			if n > 0 && status.Code(err) == codes.Unimplemented {
				return last, false, fmt.Errorf("range stream failed mid-page: %w", err)
			}
			return last, false, err
		}
		for _, kv := range r.Kvs {
			if n == pageSize {
				drain()
				return last, true, nil
			}
			if err := fn(keyValue(kv, !keysOnly)); err != nil {
				drain()
				return "", false, &callbackError{err}
			}
			last = string(kv.Key)
			n++
		}
	}
	return last, false, nil
}

// progressInterval is how often History asks the server whether its watch
// has caught up.
const progressInterval = 100 * time.Millisecond

// History calls fn for every revision of key that etcd still holds, oldest
// first, deletions included (Event.Deleted, KV.ModRevision the revision of
// the delete). It reads the store's revision first, then replays a watch
// from revision 1 up to that revision.
//
// When history has been compacted, HistoryInfo.CompactRevision is set and
// the history starts with the key's value as of the compact revision (its
// ModRevision may be older: compaction keeps each live key's newest
// revision), followed by every later event. A compaction that lands while
// the history is being read fails History with ErrCompacted, rather than
// leave a gap.
//
// The watch is replayed by the server from its backend; that is cheap on a
// cluster compacted regularly (kube-apiserver compacts every 5 minutes).
// Each wait for the server is bounded by CommandTimeout.
func (e *Etcd) History(ctx context.Context, key string, fn func(Event) error) (HistoryInfo, error) {
	op := "history " + key
	resp, err := e.get(ctx, key, clientv3.WithCountOnly())
	if err != nil {
		return HistoryInfo{}, rpcError(op, err)
	}
	info := HistoryInfo{Revision: resp.Header.Revision}

	w := clientv3.NewWatcher(e.cli)
	defer w.Close()
	emitted := false
	emit := func(ev Event) error {
		emitted = true
		return fn(ev)
	}
	start := int64(1)
	for attempt := 0; ; attempt++ {
		if start > info.Revision {
			return info, nil
		}
		compactRev, err := e.replay(ctx, w, key, start, info.Revision, emit)
		if err != nil {
			return info, fmt.Errorf("%s: %w", op, err)
		}
		if compactRev == 0 {
			return info, nil
		}
		if emitted {
			return info, fmt.Errorf("%s: compacted at revision %d while reading: %w", op, compactRev, ErrCompacted)
		}
		if attempt == 5 {
			return info, fmt.Errorf("%s: compaction keeps moving (revision %d): %w", op, compactRev, ErrCompacted)
		}
		info.CompactRevision = compactRev
		// The key's state at the compact revision is still held.
		kv, err := e.Get(ctx, key, compactRev)
		switch {
		case errors.Is(err, ErrCompacted):
			start = compactRev // compacted again: learn the new revision
			continue
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return info, fmt.Errorf("%s: %w", op, err)
		default:
			if err := emit(Event{KV: *kv}); err != nil {
				return info, fmt.Errorf("%s: %w", op, err)
			}
		}
		start = compactRev + 1
	}
}

// replay watches key from revision start and calls fn for each event up to
// revision until. It returns the compact revision when start has been
// compacted away (having called fn for nothing).
func (e *Etcd) replay(ctx context.Context, w clientv3.Watcher, key string, start, until int64, fn func(Event) error) (compactRev int64, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if e.cfg.Consistency == Linearizable {
		wctx = clientv3.WithRequireLeader(wctx)
	}
	wch := w.Watch(wctx, key, clientv3.WithRev(start))
	idle := time.NewTimer(e.cfg.CommandTimeout)
	defer idle.Stop()
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
	for {
		select {
		case resp, ok := <-wch:
			if !ok {
				if err := ctx.Err(); err != nil {
					return 0, err
				}
				return 0, fmt.Errorf("watch from revision %d closed: %w", start, ErrUnavailable)
			}
			if resp.CompactRevision != 0 {
				return resp.CompactRevision, nil
			}
			if err := resp.Err(); err != nil {
				return 0, rpcError(fmt.Sprintf("watch from revision %d", start), err)
			}
			for _, ev := range resp.Events {
				if ev.Kv.ModRevision > until {
					return 0, nil
				}
				if err := fn(event(ev)); err != nil {
					return 0, err
				}
				if ev.Kv.ModRevision == until {
					return 0, nil
				}
			}
			if resp.IsProgressNotify() && resp.Header.Revision >= until {
				return 0, nil
			}
			idle.Reset(e.cfg.CommandTimeout)
		case <-tick.C:
			// Answered only once the watch has caught up; ignored before.
			_ = w.RequestProgress(wctx)
		case <-idle.C:
			return 0, fmt.Errorf("watch from revision %d: no progress in %v: %w: %w", start, e.cfg.CommandTimeout, ErrUnavailable, context.DeadlineExceeded)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// event converts a watch event.
func event(ev *clientv3.Event) Event {
	if ev.Type == mvccpb.DELETE {
		return Event{KV: KeyValue{Key: string(ev.Kv.Key), ModRevision: ev.Kv.ModRevision}, Deleted: true}
	}
	return Event{KV: *keyValue(ev.Kv, true)}
}

// keyValue converts a clientv3 key-value.
func keyValue(kv *mvccpb.KeyValue, withValue bool) *KeyValue {
	out := &KeyValue{
		Key:            string(kv.Key),
		CreateRevision: kv.CreateRevision,
		ModRevision:    kv.ModRevision,
		Version:        kv.Version,
		Lease:          kv.Lease,
	}
	if withValue {
		out.Value = kv.Value
		if out.Value == nil {
			out.Value = []byte{}
		}
	}
	return out
}

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

// compactRevision returns the store's compact revision (0 if none).
func (e *Etcd) compactRevision(ctx context.Context) (int64, error) {
	_, err := e.get(ctx, "/", clientv3.WithCountOnly(), clientv3.WithRev(1))
	switch {
	case err == nil:
		return 0, nil
	case !errors.Is(err, rpctypes.ErrCompacted):
		return 0, rpcError("read at revision 1", err)
	}
	w := clientv3.NewWatcher(e.cli)
	defer w.Close()
	wctx, cancel := context.WithTimeout(ctx, e.cfg.CommandTimeout)
	defer cancel()
	for resp := range w.Watch(wctx, "/", clientv3.WithRev(1)) {
		if resp.CompactRevision != 0 {
			return resp.CompactRevision, nil
		}
		if err := resp.Err(); err != nil {
			return 0, rpcError("watch from revision 1", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("watch from revision 1: no compaction reported: %w: %w", ErrUnavailable, context.DeadlineExceeded)
}

// CompareAndSwap puts value at key in one transaction if the key's mod
// revision is still expect (0: the key must not exist), attaching lease
// (0: none). It returns the revision of the write. When the key has moved
// on it writes nothing and returns a *ConflictError holding the key's
// current state (Current 0 when the key is gone). A lease that has expired
// or been revoked fails the put with an error wrapping ErrLeaseNotFound;
// the lease is never dropped silently.
//
// A request larger than etcd or the client accepts fails with an error
// wrapping ErrTooLarge, and was not applied.
//
// An error wrapping ErrUnavailable or a context error leaves the outcome
// unknown: the transaction may have been applied after the client gave up.
// Read the key again before retrying.
func (e *Etcd) CompareAndSwap(ctx context.Context, key string, expect int64, value []byte, lease int64) (int64, error) {
	op := fmt.Sprintf("compare-and-swap %s at revision %d", key, expect)
	var popts []clientv3.OpOption
	if lease != 0 {
		op = fmt.Sprintf("%s with lease %x", op, lease)
		popts = append(popts, clientv3.WithLease(clientv3.LeaseID(lease)))
	}
	var resp *clientv3.TxnResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", expect)).
			Then(clientv3.OpPut(key, string(value), popts...)).
			Else(clientv3.OpGet(key)).
			Commit()
		return err
	})
	if err != nil {
		if tooLarge(err) {
			// Refused before it was applied: never an unknown outcome.
			return 0, fmt.Errorf("%s: %w (%d bytes with the key): %w", op, ErrTooLarge, len(key)+len(value), cleanRPCError(err))
		}
		return 0, rpcError(op, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	return 0, txnConflict(key, expect, resp)
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
		out[i].Endpoint = ep
		var resp *clientv3.StatusResponse
		err := e.rpc(ctx, func(ctx context.Context) error {
			var err error
			resp, err = e.cli.Status(ctx, ep)
			return err
		})
		if err != nil {
			out[i].Err = rpcError("status "+ep, err)
			continue
		}
		out[i].MemberID = resp.Header.MemberId
		out[i].Leader = resp.Leader
		out[i].Version = resp.Version
		out[i].Revision = resp.Header.Revision
		out[i].RaftTerm = resp.RaftTerm
		out[i].RaftIndex = resp.RaftIndex
		out[i].RaftAppliedIndex = resp.RaftAppliedIndex
		out[i].DBSize = resp.DbSize
		out[i].DBSizeInUse = resp.DbSizeInUse
		out[i].IsLearner = resp.IsLearner
		out[i].Errors = resp.Errors
	}
	return out
}

// Deleter deletes keys with compare-and-delete. The live backend
// implements it.
type Deleter interface {
	// CompareAndDelete deletes key if and only if its mod revision is
	// still expect. On success it returns the revision of the delete;
	// otherwise it returns a *ConflictError and deletes nothing.
	CompareAndDelete(ctx context.Context, key string, expect int64) (int64, error)
}

var _ Deleter = (*Etcd)(nil)

// CompareAndDelete deletes key in one transaction if its mod revision is
// still expect, and returns the revision of the delete. When the key has
// moved on (or is gone) it deletes nothing and returns a *ConflictError
// holding the key's current state. An error wrapping ErrUnavailable or a
// context error leaves the outcome unknown, as for CompareAndSwap.
func (e *Etcd) CompareAndDelete(ctx context.Context, key string, expect int64) (int64, error) {
	op := fmt.Sprintf("compare-and-delete %s at revision %d", key, expect)
	if expect <= 0 {
		return 0, fmt.Errorf("%s: a delete needs the revision the key was read at", op)
	}
	var resp *clientv3.TxnResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", expect)).
			Then(clientv3.OpDelete(key)).
			Else(clientv3.OpGet(key)).
			Commit()
		return err
	})
	if err != nil {
		return 0, rpcError(op, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	return 0, txnConflict(key, expect, resp)
}

// txnConflict reports a compare-and-swap (or -delete) whose compare failed:
// its Else branch read the key, which gives the current value, if any.
func txnConflict(key string, expect int64, resp *clientv3.TxnResponse) *ConflictError {
	ce := &ConflictError{Key: key, Expected: expect}
	if len(resp.Responses) == 1 {
		if r := resp.Responses[0].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
			ce.CurrentValue = keyValue(r.Kvs[0], true)
			ce.Current = ce.CurrentValue.ModRevision
		}
	}
	return ce
}
