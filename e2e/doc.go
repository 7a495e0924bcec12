// Package e2e is etcdpvc's end-to-end suite: it starts a real etcd and a
// real kube-apiserver (both built from source by build-servers.sh), drives
// the built etcdpvc binary against them as an operator would, and checks
// through client-go that the apiserver itself accepts every surgery.
//
// It is a module of its own, so the main module's `go test ./...` does not
// run it. Run it with `make e2e`, which builds the servers first, or, once
// they are built, with
//
//	cd e2e && go test -count=1 ./...
//
// Without the servers every test fails at once, saying to run `make e2e`.
//
// Add -capture to write the stored bytes and the apiserver's JSON of the
// objects the scenarios create to testdata/fixtures.
package e2e
