#!/bin/sh
# version.sh prints the version `make build` stamps into etcdpvc: the tag of
# HEAD when there is one, else a Go pseudo-version of HEAD
# (v0.0.0-<UTC commit time>-<first 12 hex digits>); "-dirty" is appended
# when the work tree has uncommitted changes. Outside a git checkout it
# prints "unknown".
set -eu
cd "$(dirname "$0")/.."
if ! rev=$(git rev-parse --short=12 HEAD 2>/dev/null); then
	echo unknown
	exit 0
fi
if v=$(git describe --tags --exact-match HEAD 2>/dev/null); then
	:
else
	when=$(TZ=UTC git show -s --format=%cd --date=format-local:%Y%m%d%H%M%S HEAD)
	v="v0.0.0-$when-$rev"
fi
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	v="$v-dirty"
fi
echo "$v"
