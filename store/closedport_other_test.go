//go:build !unix

package store

import (
	"net"
	"testing"
)

// etcdClosedPort returns a 127.0.0.1 address nothing listens on (a port
// found free; another process may take it before it is dialled).
func etcdClosedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
