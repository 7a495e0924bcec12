package store

import "errors"

// The diagnoses of a TLS mismatch found by probing an endpoint that did
// not answer (ConnectError's Cause wraps them): the client and the
// server disagree on whether to speak TLS.
var (
	// ErrNotTLS means the client spoke TLS (an https:// endpoint, or
	// certificate flags) to a server that answers plaintext gRPC.
	ErrNotTLS = errors.New("the server does not speak TLS")
	// ErrWantsTLS means the client spoke plaintext to a server that
	// answers a TLS handshake.
	ErrWantsTLS = errors.New("the server speaks TLS")
)
