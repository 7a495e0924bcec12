#!/bin/sh
# tools/chromium.sh: make sure a headless Chromium is on PATH for the
# report's browser test (go test ./cmd/etcdpvc -run TestReportBrowser):
# installs the distribution's chromium package with apt-get when it is
# missing. Prints the binary's path.
set -eu
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		command -v "$b"
		exit 0
	fi
done
if ! command -v apt-get >/dev/null 2>&1; then
	echo "tools/chromium.sh: no chromium and no apt-get: install Chromium with the system's package manager" >&2
	exit 1
fi
SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
$SUDO apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >&2
command -v chromium
