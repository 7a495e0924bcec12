#!/usr/bin/env bash
# test-matrix.sh runs the tests that talk to a live etcd against each etcd
# release the tool supports, each a real etcd binary built from Go modules
# by e2e/build-servers.sh (v3.5 and v3.6 as e2e/tools/etcd-3.5 and
# etcd-3.6 pin them, v3.7 as e2e/tools/etcd pins it):
#
#   ./fixtures/etcdtest and ./store/... every store test on a live etcd
#                                     (paging: v3.5 and v3.6 have no
#                                     RangeStream, so the unary fallback runs
#                                     for real; compare-and-swap; leases;
#                                     history; TLS and 3 members), and --db
#                                     surgery on that release's snapshot and
#                                     member db, restored by its etcdutl and
#                                     served by its etcd
#   ./cmd/etcdpvc -run TestScripts    the CLI's txtar scripts
#
# store/walfile is left out: its tests make logs of many small segments,
# which only the in-process server can (the etcd binary has no flag for
# the segment size); test-unit runs them.
#
# fixtures/etcdtest starts each cluster as processes of the binary named
# by ETCDPVC_TEST_ETCD instead of in-process. Arguments name the releases
# (etcd-3.5, etcd-3.6, etcd); none runs all three. It prints how long each
# build and each run took.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
go=${GO:-go}

(($#)) || set -- etcd-3.5 etcd-3.6 etcd

start=$SECONDS
GO=$go "$here/build-servers.sh" "$@"
echo "test-matrix: servers ready in $((SECONDS - start))s"

failed=()
for what in "$@"; do
	dir=$("$here/build-servers.sh" --print-dir "$what")
	bin=$dir/etcd
	echo "test-matrix: $("$bin" --version | head -1) ($bin)"
	t0=$SECONDS
	ok=1
	(cd "$root" && ETCDPVC_TEST_ETCD=$bin ETCDPVC_TEST_ETCDUTL=$dir/etcdutl \
		"$go" test -count=1 -timeout 30m ./fixtures/etcdtest $("$go" list ./store/... | grep -v '/store/walfile$')) || ok=0
	(cd "$root" && ETCDPVC_TEST_ETCD=$bin ETCDPVC_TEST_ETCDUTL=$dir/etcdutl \
		"$go" test -count=1 -timeout 30m -run '^TestScripts$' ./cmd/etcdpvc) || ok=0
	((ok)) || failed+=("$what")
	echo "test-matrix: $what tested in $((SECONDS - t0))s"
done
echo "test-matrix: total $((SECONDS - start))s"
if ((${#failed[@]})); then
	echo "test-matrix: FAILED on ${failed[*]}" >&2
	exit 1
fi
