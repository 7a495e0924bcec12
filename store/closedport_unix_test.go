//go:build unix

package store

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// etcdClosedPort returns a 127.0.0.1 address that refuses connections for
// the whole test: a socket bound to it and never listening holds the port,
// so that no other server of a parallel test (the version matrix starts
// many) can take it between the pick and the dial, as it could a port
// merely found free.
func etcdClosedPort(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("bound to %T", sa)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port))
}
