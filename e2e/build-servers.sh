#!/usr/bin/env bash
# build-servers.sh builds, from source through the Go module proxy, the real
# servers the end-to-end suite runs against:
#
#   etcd, etcdctl, etcdutl  pinned by e2e/tools/etcd/go.mod (v3.7)
#   etcd, etcdutl v3.6      pinned by e2e/tools/etcd-3.6/go.mod
#   etcd, etcdutl v3.5      pinned by e2e/tools/etcd-3.5/go.mod
#   kube-apiserver          pinned by e2e/tools/kube-apiserver/go.mod
#   kine                    pinned by e2e/tools/kine/go.mod, with cgo off,
#                           which selects its pure-Go SQLite driver
#
# Arguments name what to build (etcd, etcd-3.6, etcd-3.5, kube-apiserver, kine);
# none builds them all. kube-apiserver=DIR builds the kube-apiserver that
# the wrapper module in DIR pins instead (fixtures/apiserver/capture.sh
# builds older apiservers so). With --print-dir first, it builds nothing and prints
# the directory each one is (or would be) built into, one a line. The older etcd servers are the version matrix that
# e2e/test-matrix.sh runs the live-etcd tests and the CLI scripts against.
#
# into ${E2E_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/etcdpvc-e2e}/<name>-<version>/.
# A build is skipped when that directory's stamp matches the sha256 of the
# wrapper module's go.mod and go.sum, so it runs again only when a pin
# changes. The e2e suite computes the same stamp and fails when it differs.
#
# A cold build takes 7 to 12 minutes on 2 cores, mostly kube-apiserver;
# each older etcd adds about COLD_ETCD_MINUTES.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${E2E_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/etcdpvc-e2e}
go=${GO:-go}

# version MODULE GOMOD prints MODULE's required version in GOMOD.
version() {
	awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$2"
}

# stamp DIR prints the sha256 of DIR's go.mod and go.sum.
stamp() {
	cat "$1/go.mod" "$1/go.sum" | sha256sum | cut -d' ' -f1
}

# build NAME MODDIR VERSION LDFLAGS PKG=OUT... builds each PKG into OUT in
# $cache/NAME-VERSION unless its stamp is current.
build() {
	local name=$1 moddir=$2 ver=$3 ldflags=$4
	shift 4
	local dest="$cache/$name-$ver" want
	want=$(stamp "$moddir")
	if [[ -f "$dest/stamp" && "$(cat "$dest/stamp")" == "$want" ]]; then
		local ok=1 p
		for p in "$@"; do [[ -x "$dest/${p#*=}" ]] || ok=0; done
		if ((ok)); then
			echo "$name $ver: up to date in $dest"
			return
		fi
	fi
	echo "$name $ver: building into $dest"
	mkdir -p "$cache"
	local tmp
	tmp=$(mktemp -d "$cache/.$name-$ver.XXXXXX")
	local start=$SECONDS p
	for p in "$@"; do
		(cd "$moddir" && GOFLAGS='-mod=mod -buildvcs=false' GOWORK=off CGO_ENABLED=0 \
			"$go" build -trimpath -ldflags "$ldflags" -o "$tmp/${p#*=}" "${p%%=*}")
	done
	echo "$want" >"$tmp/stamp"
	rm -rf "$dest"
	mv "$tmp" "$dest"
	echo "$name $ver: built in $((SECONDS - start))s"
}

# etcd MODDIR builds the etcd server and etcdutl pinned by MODDIR (and
# etcdctl when MODDIR pins it).
etcd() {
	local dir=$1 ver
	ver=$(version go.etcd.io/etcd/server/v3 "$dir/go.mod")
	local pkgs=(go.etcd.io/etcd/server/v3=etcd go.etcd.io/etcd/etcdutl/v3=etcdutl)
	if grep -q 'go.etcd.io/etcd/etcdctl/v3' "$dir/go.mod"; then
		pkgs+=(go.etcd.io/etcd/etcdctl/v3=etcdctl)
	fi
	build etcd "$dir" "$ver" "" "${pkgs[@]}"
}

# kube_apiserver MODDIR builds the kube-apiserver MODDIR pins.
kube_apiserver() {
	local dir=$1 ver minor ldflags="" pkg
	ver=$(version k8s.io/kubernetes "$dir/go.mod")
	minor=${ver#v1.}
	minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$ver -X $pkg.gitTreeState=clean"
	done
	build kube-apiserver "$dir" "$ver" "$ldflags" \
		k8s.io/kubernetes/cmd/kube-apiserver=kube-apiserver
}

# kine MODDIR builds the kine MODDIR pins.
kine() {
	local dir=$1 ver
	ver=$(version github.com/k3s-io/kine "$dir/go.mod")
	build kine "$dir" "$ver" "" github.com/k3s-io/kine=kine
}

print_dir=0
if [[ ${1:-} == --print-dir ]]; then
	print_dir=1
	shift
fi
(($#)) || set -- etcd kube-apiserver kine etcd-3.6 etcd-3.5
for what in "$@"; do
	case $what in
	etcd | etcd-3.*)
		dir=$here/tools/$what
		[[ -f "$dir/go.mod" ]] || { echo "build-servers.sh: no e2e/tools/$what" >&2; exit 2; }
		if ((print_dir)); then
			echo "$cache/etcd-$(version go.etcd.io/etcd/server/v3 "$dir/go.mod")"
		else
			etcd "$dir"
		fi
		;;
	kube-apiserver | kube-apiserver=*)
		dir=$here/tools/kube-apiserver
		[[ $what == *=* ]] && dir=$(cd "${what#*=}" && pwd)
		if ((print_dir)); then
			echo "$cache/kube-apiserver-$(version k8s.io/kubernetes "$dir/go.mod")"
		else
			kube_apiserver "$dir"
		fi
		;;
	kine)
		dir=$here/tools/kine
		if ((print_dir)); then
			echo "$cache/kine-$(version github.com/k3s-io/kine "$dir/go.mod")"
		else
			kine "$dir"
		fi
		;;
	*) echo "build-servers.sh: unknown server $what (etcd, etcd-3.6, etcd-3.5, kube-apiserver, kine)" >&2; exit 2 ;;
	esac
done
