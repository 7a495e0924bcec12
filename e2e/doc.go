// Package e2e is etcdpvc's end-to-end suite: it starts a real etcd and a
// real kube-apiserver (both built from source by build-servers.sh), drives
// the built etcdpvc binary against them as an operator would, and checks
// through client-go that the apiserver itself accepts every surgery.
//
// The tests carry the build tag e2e. Run them with `make e2e`, or, once the
// servers are built, with
//
//	cd e2e && go test -count=1 -tags e2e ./...
//
// Add -capture to write the stored bytes and the apiserver's JSON of the
// objects the scenarios create to testdata/fixtures.
package e2e
