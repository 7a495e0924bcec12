#!/usr/bin/env bash
# build-servers.sh builds, from source through the Go module proxy, the real
# servers the end-to-end suite runs against:
#
#   etcd, etcdctl, etcdutl  pinned by e2e/tools/etcd/go.mod
#   kube-apiserver          pinned by e2e/tools/kube-apiserver/go.mod
#
# into ${E2E_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/etcdpvc-e2e}/<name>-<version>/.
# A build is skipped when that directory's stamp matches the sha256 of the
# wrapper module's go.mod and go.sum, so it runs again only when a pin
# changes. The e2e suite computes the same stamp and fails when it differs.
#
# A cold build takes 7 to 12 minutes on 2 cores, mostly kube-apiserver.
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

etcd_dir=$here/tools/etcd
etcd_ver=$(version go.etcd.io/etcd/server/v3 "$etcd_dir/go.mod")
build etcd "$etcd_dir" "$etcd_ver" "" \
	go.etcd.io/etcd/server/v3=etcd \
	go.etcd.io/etcd/etcdctl/v3=etcdctl \
	go.etcd.io/etcd/etcdutl/v3=etcdutl

kas_dir=$here/tools/kube-apiserver
kas_ver=$(version k8s.io/kubernetes "$kas_dir/go.mod")
minor=${kas_ver#v1.}
minor=${minor%%.*}
kas_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kas_ldflags+=" -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$kas_ver -X $pkg.gitTreeState=clean"
done
build kube-apiserver "$kas_dir" "$kas_ver" "$kas_ldflags" \
	k8s.io/kubernetes/cmd/kube-apiserver=kube-apiserver
