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

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

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
