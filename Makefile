# etcdpvc — see README.md.
GO       ?= go
BIN      ?= bin/etcdpvc
FUZZTIME ?= 20s
PKGS     ?= ./...

.PHONY: all build release image test test-unit test-short test-browser bench bench-data bench-offline fuzz lint demo clean

all: lint build test

# VERSION is the git tag of HEAD, else a Go pseudo-version of HEAD
# (v0.0.0-<UTC commit time>-<12 hex digits>), with "-dirty" for a tree with
# uncommitted changes. The binary prints it in `etcdpvc version` and records
# it in every backup and audit line.
VERSION ?= $(shell tools/version.sh)
LDFLAGS  = -s -w -X main.buildVersion=$(VERSION)
# A static binary: no cgo, no libc, so it runs on any Linux control-plane
# node; -trimpath keeps build paths out of it.
STATIC   = CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)'

build:
	$(STATIC) -o $(BIN) ./cmd/etcdpvc

# release cross-builds the static binary for linux/amd64 and linux/arm64
# into dist/, with a SHA256SUMS file to check them after copying to a node;
# for krew, one .tar.gz archive per platform holding the binary, and the
# plugin manifest dist/plugins/etcdpvc.yaml with each archive's URL (below
# KREW_URI_BASE) and sha256, checked by krew's own validate-krew-manifest.
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64
KREW_URI_BASE     ?= https://github.com/etcdpvc/etcdpvc/releases/download/$(VERSION)
KREW_VALIDATOR    ?= sigs.k8s.io/krew/cmd/validate-krew-manifest@v0.4.3
release:
	rm -rf dist && mkdir -p dist
	@set -e; for p in $(RELEASE_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; \
	  echo "build dist/etcdpvc-$(VERSION)-$$os-$$arch"; \
	  GOOS=$$os GOARCH=$$arch $(STATIC) -o dist/etcdpvc-$(VERSION)-$$os-$$arch ./cmd/etcdpvc; \
	done
	@set -e; for p in $(RELEASE_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; d=$$(mktemp -d); \
	  cp dist/etcdpvc-$(VERSION)-$$os-$$arch $$d/etcdpvc; \
	  tar -C $$d -czf dist/etcdpvc-$(VERSION)-$$os-$$arch.tar.gz --owner=0 --group=0 etcdpvc; \
	  rm -r $$d; \
	done
	cd dist && sha256sum etcdpvc-* > SHA256SUMS && cat SHA256SUMS
	$(GO) run ./tools/krewmanifest -version $(VERSION) -uri-base $(KREW_URI_BASE) -out dist/plugins/etcdpvc.yaml dist/etcdpvc-$(VERSION)-*.tar.gz
	$(GO) run $(KREW_VALIDATOR) -manifest dist/plugins/etcdpvc.yaml -skip-install

# image builds the node image from release's static binaries, without a
# container daemon (tools/image, go-containerregistry): dist/image, an OCI
# layout of linux/amd64 and linux/arm64 (crane push dist/image REF), and
# dist/etcdpvc-VERSION-linux-ARCH.image.tar for docker load. Entrypoint
# /usr/local/bin/etcdpvc, user 65532 (any other works), version and source
# labels.
image: release
	rm -rf dist/image
	$(GO) run ./tools/image -version $(VERSION) -out dist/image -tar-prefix dist/etcdpvc-$(VERSION) \
	  $(foreach p,$(RELEASE_PLATFORMS),$(p)=dist/etcdpvc-$(VERSION)-$(subst /,-,$(p)))

# test runs the whole suite: unit tests with real in-process etcd servers
# and the CLI's txtar scripts (test-unit), then the end-to-end suite against
# a real kube-apiserver (e2e; the first run builds the servers), then the
# live-etcd tests and the scripts against etcd v3.5, v3.6 and v3.7
# processes (test-matrix; the first run builds v3.5 and v3.6), then the
# report's page in a headless Chromium (test-browser; the first run
# installs the distribution's chromium package).
test: test-unit e2e test-matrix test-browser

test-unit:
	$(GO) test -count=1 -timeout 30m $(PKGS)

test-short:
	$(GO) test -short -count=1 $(PKGS)

# test-browser opens `etcdpvc report`'s page in a headless Chromium
# (installed from the distribution's packages by tools/chromium.sh when
# missing): no console message, no request, the treemap's cells and the
# counts of stats; the screenshot goes to $(ARTIFACTS).
ARTIFACTS ?= $(CURDIR)/.artifacts
test-browser:
	tools/chromium.sh >/dev/null
	ETCDPVC_BROWSER_TEST=1 ETCDPVC_ARTIFACTS=$(ARTIFACTS) $(GO) test -count=1 -run TestReportBrowser -v ./cmd/etcdpvc

# bench prints figures; it asserts nothing about time.
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# bench-data generates the offline benchmark data set with a real etcd:
# BENCH_REVISIONS revisions (default one million, about 300k live objects),
# kept in ${XDG_CACHE_HOME:-~/.cache}/etcdpvc-bench, outside git. Use
# BENCH_REVISIONS=100000 for a quick run. bench-offline measures the offline
# commands on it (seconds, revisions/s, MB/s, peak RSS and RssAnon; warm and,
# as root, cold).
BENCH_REVISIONS ?= 1000000
bench-data:
	$(GO) run ./tools/benchdata generate -revisions $(BENCH_REVISIONS)

bench-offline: build bench-data
	$(GO) build -o bin/benchdata ./tools/benchdata
	bin/benchdata measure -revisions $(BENCH_REVISIONS) -bin $(BIN)

# fuzz runs each fuzz target for FUZZTIME.
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd e2e && $(GO) vet ./...

demo: build
	$(BIN) demo

clean:
	rm -rf bin dist

# e2e builds etcd and kube-apiserver from source into
# ${XDG_CACHE_HOME:-~/.cache}/etcdpvc-e2e when missing (e2e/build-servers.sh;
# a cold build takes 7 to 12 minutes on 2 cores) and runs the
# end-to-end suite against them. It is a module of its own (e2e/go.mod).
.PHONY: e2e test-matrix
e2e:
	GO=$(GO) e2e/build-servers.sh
	cd e2e && $(GO) test -count=1 -timeout 30m ./...

# test-matrix runs the live-etcd store tests and the CLI's scripts against
# real etcd v3.5, v3.6 and v3.7 processes (e2e/test-matrix.sh; the first run
# builds v3.5 and v3.6 into ${XDG_CACHE_HOME:-~/.cache}/etcdpvc-e2e). See
# docs/supported-versions.md.
test-matrix:
	GO=$(GO) e2e/test-matrix.sh
